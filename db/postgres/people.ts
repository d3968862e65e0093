/**
 * People on PostgreSQL (docs/decisions/035-people.md; migration 011-people.sql): the same
 * answers as db/sqlite/people.ts. Nothing is cached: every node reads browser_sessions and users
 * for each cookie request, so a logout or a disabled person is seen by every node at once.
 */
import type pg from "pg";
import { uuidv7 } from "../../domain/ids.ts";
import type {
  AuditRecord,
  BrowserSessionRecord,
  MemberRecord,
  NewAudit,
  NewUser,
  Role,
  UserRecord,
  UserToken,
  UserWithPassword,
} from "../../domain/people.ts";

type Queryable = pg.Pool | pg.ClientBase;

const USER_COLUMNS = "id, email, name, owner, created_at, disabled_at";
const MEMBER_COLUMNS = `m.project_id, p.name AS project_name, m.user_id, u.email, u.name, m.role, m.created_at
  FROM members m JOIN projects p ON p.id = m.project_id JOIN users u ON u.id = m.user_id`;
const AUDIT_COLUMNS = "seq, at, actor, actor_name, address, action, project_id, target, details";
const TOKEN_COLUMNS = "token_hash, kind, user_id, email, project_id, role, created_by, created_at, expires_at, used_at";

type AuditRow = Omit<AuditRecord, "details"> & { details: string };
const auditRecord = (row: AuditRow): AuditRecord => ({ ...row, details: JSON.parse(row.details) });

/** The invitation or reset did not fit its live token: the transaction rolls back, the token stays unused. */
export class TokenMismatch extends Error {
  override readonly name = "TokenMismatch";
}

async function user(db: Queryable, id: string): Promise<UserRecord | undefined> {
  const { rows } = await db.query<UserRecord>(`SELECT ${USER_COLUMNS} FROM users WHERE id = $1`, [id]);
  return rows[0];
}

async function createUser(tx: Queryable, record: NewUser, member?: { projectId: string; role: Role }) {
  const id = uuidv7();
  await tx.query(
    "INSERT INTO users (id, email, name, password_hash, owner, created_at) VALUES ($1, $2, $3, $4, $5, $6)",
    [id, record.email, record.name, record.password_hash, record.owner, record.created_at],
  );
  if (member) {
    await tx.query("INSERT INTO members (project_id, user_id, role, created_at) VALUES ($1, $2, $3, $4)", [
      member.projectId,
      id,
      member.role,
      record.created_at,
    ]);
  }
  return (await user(tx, id)) as UserRecord;
}

/** Marks a live token of that kind used, in one statement (two uses at once cannot both win). */
async function useToken(tx: Queryable, tokenHash: string, kind: string, now: string) {
  const { rows } = await tx.query<UserToken>(
    `UPDATE user_tokens SET used_at = $1 WHERE token_hash = $2 AND kind = $3 AND used_at IS NULL AND expires_at > $1
     RETURNING ${TOKEN_COLUMNS}`,
    [now, tokenHash, kind],
  );
  return rows[0];
}

export const people = {
  createUser,
  userById: user,
  async userByEmail(db: Queryable, email: string): Promise<UserWithPassword | undefined> {
    const { rows } = await db.query<UserWithPassword>(
      `SELECT ${USER_COLUMNS}, password_hash FROM users WHERE email = $1`,
      [email],
    );
    return rows[0];
  },
  async listUsers(db: Queryable) {
    const { rows } = await db.query<UserRecord>(`SELECT ${USER_COLUMNS} FROM users ORDER BY created_at, id`);
    return rows;
  },
  async setUserDisabled(tx: Queryable, userId: string, at: string | null) {
    await tx.query("UPDATE users SET disabled_at = $1 WHERE id = $2", [at, userId]);
    if (at !== null) await tx.query("DELETE FROM browser_sessions WHERE user_id = $1", [userId]);
    return user(tx, userId);
  },
  async createUserToken(db: Queryable, token: UserToken) {
    await db.query(
      `INSERT INTO user_tokens (token_hash, kind, user_id, email, project_id, role, created_by, created_at, expires_at)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`,
      [
        token.token_hash,
        token.kind,
        token.user_id,
        token.email,
        token.project_id,
        token.role,
        token.created_by,
        token.created_at,
        token.expires_at,
      ],
    );
  },
  async signUp(tx: Queryable, tokenHash: string, kind: "owner" | "invite", record: NewUser, now: string) {
    const token = await useToken(tx, tokenHash, kind, now);
    if (!token) return "invalid" as const;
    if (kind === "invite" && token.email !== record.email) throw new TokenMismatch();
    const member = token.project_id && token.role ? { projectId: token.project_id, role: token.role } : undefined;
    return createUser(tx, { ...record, owner: kind === "owner" }, member);
  },
  async resetPassword(tx: Queryable, tokenHash: string, passwordHash: string, now: string) {
    const token = await useToken(tx, tokenHash, "reset", now);
    if (!token) return undefined;
    const person = token.user_id ? await user(tx, token.user_id) : undefined;
    if (!person || person.disabled_at !== null) throw new TokenMismatch();
    await tx.query("UPDATE users SET password_hash = $1 WHERE id = $2", [passwordHash, person.id]);
    await tx.query("DELETE FROM browser_sessions WHERE user_id = $1", [person.id]);
    return person;
  },
  async setMember(tx: Queryable, projectId: string, userId: string, role: Role | null, now: string) {
    const { rows } = await tx.query<{ role: Role }>(
      "SELECT role FROM members WHERE project_id = $1 AND user_id = $2 FOR UPDATE",
      [projectId, userId],
    );
    if (role === null)
      await tx.query("DELETE FROM members WHERE project_id = $1 AND user_id = $2", [projectId, userId]);
    else {
      await tx.query(
        `INSERT INTO members (project_id, user_id, role, created_at) VALUES ($1, $2, $3, $4)
         ON CONFLICT (project_id, user_id) DO UPDATE SET role = excluded.role`,
        [projectId, userId, role, now],
      );
    }
    return rows[0]?.role;
  },
  async listMembers(db: Queryable, projectId?: string) {
    const { rows } =
      projectId === undefined
        ? await db.query<MemberRecord>(`SELECT ${MEMBER_COLUMNS} ORDER BY p.name COLLATE "C", u.email COLLATE "C"`)
        : await db.query<MemberRecord>(
            `SELECT ${MEMBER_COLUMNS} WHERE m.project_id = $1 ORDER BY p.name COLLATE "C", u.email COLLATE "C"`,
            [projectId],
          );
    return rows;
  },
  async membershipsOf(db: Queryable, userId: string) {
    const { rows } = await db.query<MemberRecord>(
      `SELECT ${MEMBER_COLUMNS} WHERE m.user_id = $1 ORDER BY p.name COLLATE "C"`,
      [userId],
    );
    return rows;
  },
  async createBrowserSession(db: Queryable, s: BrowserSessionRecord) {
    await db.query(
      "INSERT INTO browser_sessions (id_hash, user_id, created_at, expires_at, address) VALUES ($1, $2, $3, $4, $5)",
      [s.id_hash, s.user_id, s.created_at, s.expires_at, s.address],
    );
  },
  async browserSession(db: Queryable, idHash: string, now: string) {
    const { rows } = await db.query({
      name: "agentmon-browser-session",
      text: `SELECT s.id_hash, s.user_id, s.created_at, s.expires_at, s.address,
              u.email, u.name, u.owner, u.created_at AS u_created_at, u.disabled_at
       FROM browser_sessions s JOIN users u ON u.id = s.user_id
       WHERE s.id_hash = $1 AND s.expires_at > $2 AND u.disabled_at IS NULL`,
      values: [idHash, now],
    });
    const row = rows[0];
    if (!row) return undefined;
    return {
      session: {
        id_hash: row.id_hash,
        user_id: row.user_id,
        created_at: row.created_at,
        expires_at: row.expires_at,
        address: row.address,
      } as BrowserSessionRecord,
      user: {
        id: row.user_id,
        email: row.email,
        name: row.name,
        owner: row.owner,
        created_at: row.u_created_at,
        disabled_at: row.disabled_at,
      } as UserRecord,
    };
  },
  async deleteBrowserSession(db: Queryable, idHash: string) {
    await db.query("DELETE FROM browser_sessions WHERE id_hash = $1", [idHash]);
  },
  async deleteUserSessions(db: Queryable, userId: string) {
    const { rowCount } = await db.query("DELETE FROM browser_sessions WHERE user_id = $1", [userId]);
    return rowCount ?? 0;
  },
  async appendAudit(db: Queryable, r: NewAudit) {
    const { rows } = await db.query<AuditRow>(
      `INSERT INTO audit (at, actor, actor_name, address, action, project_id, target, details)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8) RETURNING ${AUDIT_COLUMNS}`,
      [r.at, r.actor, r.actor_name, r.address, r.action, r.project_id, r.target, JSON.stringify(r.details)],
    );
    return auditRecord(rows[0] as AuditRow);
  },
  async listAudit(
    db: Queryable,
    options: {
      projectId?: string | undefined;
      withInstance?: boolean;
      beforeSeq?: number | undefined;
      afterSeq?: number | undefined;
      limit: number;
    },
  ) {
    const oldest = options.afterSeq !== undefined;
    const { rows } = await db.query<AuditRow>(
      `SELECT ${AUDIT_COLUMNS} FROM audit
       WHERE seq ${oldest ? ">" : "<"} $1 AND ($2::boolean OR project_id = $3 OR ($4::boolean AND project_id IS NULL))
       ORDER BY seq ${oldest ? "" : "DESC"} LIMIT $5`,
      [
        oldest ? options.afterSeq : (options.beforeSeq ?? Number.MAX_SAFE_INTEGER),
        options.projectId === undefined,
        options.projectId ?? null,
        options.withInstance === true,
        options.limit,
      ],
    );
    return rows.map(auditRecord);
  },
};
