/**
 * People on SQLite (docs/decisions/035-people.md): accounts, one-time links, members, browser
 * sessions and the audit trail (migration 013-people.sql). Writes run inside the group commit's
 * savepoint of their call (store.ts), so a call of several statements is atomic.
 */
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
import type { Db } from "./open.ts";

const USER_COLUMNS = "id, email, name, owner, created_at, disabled_at";
type UserRow = Omit<UserRecord, "owner"> & { owner: number };
const userRecord = (row: UserRow): UserRecord => ({ ...row, owner: row.owner === 1 });

const MEMBER_COLUMNS = `m.project_id, p.name AS project_name, m.user_id, u.email, u.name, m.role, m.created_at
  FROM members m JOIN projects p ON p.id = m.project_id JOIN users u ON u.id = m.user_id`;

type AuditRow = Omit<AuditRecord, "details"> & { details: string };
const auditRecord = (row: AuditRow): AuditRecord => ({ ...row, details: JSON.parse(row.details) });

export function peopleStatements(db: Db) {
  const q = {
    userInsert: db.prepare(
      "INSERT INTO users (id, email, name, password_hash, owner, created_at) VALUES (?, ?, ?, ?, ?, ?)",
    ),
    userById: db.prepare<[string], UserRow>(`SELECT ${USER_COLUMNS} FROM users WHERE id = ?`),
    userByEmail: db.prepare<[string], UserRow & { password_hash: string | null }>(
      `SELECT ${USER_COLUMNS}, password_hash FROM users WHERE email = ?`,
    ),
    userList: db.prepare<[], UserRow>(`SELECT ${USER_COLUMNS} FROM users ORDER BY created_at, id`),
    userDisable: db.prepare("UPDATE users SET disabled_at = ? WHERE id = ?"),
    userPassword: db.prepare("UPDATE users SET password_hash = ? WHERE id = ?"),
    tokenInsert: db.prepare(
      `INSERT INTO user_tokens (token_hash, kind, user_id, email, project_id, role, created_by, created_at, expires_at)
       VALUES (@token_hash, @kind, @user_id, @email, @project_id, @role, @created_by, @created_at, @expires_at)`,
    ),
    // One statement marks the token used only if it is live, so two uses at once cannot both win.
    tokenUse: db.prepare<[string, string, string, string], UserToken>(
      `UPDATE user_tokens SET used_at = ? WHERE token_hash = ? AND kind = ? AND used_at IS NULL AND expires_at > ?
       RETURNING token_hash, kind, user_id, email, project_id, role, created_by, created_at, expires_at, used_at`,
    ),
    memberUpsert: db.prepare(
      `INSERT INTO members (project_id, user_id, role, created_at) VALUES (?, ?, ?, ?)
       ON CONFLICT (project_id, user_id) DO UPDATE SET role = excluded.role`,
    ),
    memberGet: db.prepare<[string, string], { role: Role }>(
      "SELECT role FROM members WHERE project_id = ? AND user_id = ?",
    ),
    memberDelete: db.prepare("DELETE FROM members WHERE project_id = ? AND user_id = ?"),
    membersAll: db.prepare<[], MemberRecord>(`SELECT ${MEMBER_COLUMNS} ORDER BY p.name, u.email`),
    membersOfProject: db.prepare<[string], MemberRecord>(
      `SELECT ${MEMBER_COLUMNS} WHERE m.project_id = ? ORDER BY p.name, u.email`,
    ),
    membershipsOf: db.prepare<[string], MemberRecord>(`SELECT ${MEMBER_COLUMNS} WHERE m.user_id = ? ORDER BY p.name`),
    sessionInsert: db.prepare(
      "INSERT INTO browser_sessions (id_hash, user_id, created_at, expires_at, address) VALUES (@id_hash, @user_id, @created_at, @expires_at, @address)",
    ),
    sessionGet: db.prepare<[string, string], BrowserSessionRecord & UserRow & { u_created_at: string }>(
      `SELECT s.id_hash, s.user_id, s.created_at, s.expires_at, s.address,
              u.id, u.email, u.name, u.owner, u.created_at AS u_created_at, u.disabled_at
       FROM browser_sessions s JOIN users u ON u.id = s.user_id
       WHERE s.id_hash = ? AND s.expires_at > ? AND u.disabled_at IS NULL`,
    ),
    sessionDelete: db.prepare("DELETE FROM browser_sessions WHERE id_hash = ?"),
    sessionsOfUserDelete: db.prepare("DELETE FROM browser_sessions WHERE user_id = ?"),
    auditInsert: db.prepare<[Record<string, unknown>], AuditRow>(
      `INSERT INTO audit (at, actor, actor_name, address, action, project_id, target, details)
       VALUES (@at, @actor, @actor_name, @address, @action, @project_id, @target, @details)
       RETURNING seq, at, actor, actor_name, address, action, project_id, target, details`,
    ),
    auditPage: db.prepare<[number, number, string | null, number, number], AuditRow>(
      `SELECT seq, at, actor, actor_name, address, action, project_id, target, details FROM audit
       WHERE seq < ? AND (? = 1 OR project_id = ? OR (? = 1 AND project_id IS NULL))
       ORDER BY seq DESC LIMIT ?`,
    ),
    auditPageOldest: db.prepare<[number, number, string | null, number, number], AuditRow>(
      `SELECT seq, at, actor, actor_name, address, action, project_id, target, details FROM audit
       WHERE seq > ? AND (? = 1 OR project_id = ? OR (? = 1 AND project_id IS NULL))
       ORDER BY seq LIMIT ?`,
    ),
  };

  const user = (id: string) => {
    const row = q.userById.get(id);
    return row && userRecord(row);
  };
  const createUser = (record: NewUser, member?: { projectId: string; role: Role }) => {
    const id = uuidv7();
    q.userInsert.run(id, record.email, record.name, record.password_hash, record.owner ? 1 : 0, record.created_at);
    if (member) q.memberUpsert.run(member.projectId, id, member.role, record.created_at);
    return user(id) as UserRecord;
  };

  return {
    /** The writes below run in the caller's transaction (the group commit's savepoint). */
    createUser,
    userById: user,
    userByEmail(email: string): UserWithPassword | undefined {
      const row = q.userByEmail.get(email);
      return row && { ...userRecord(row), password_hash: row.password_hash };
    },
    listUsers: () => q.userList.all().map(userRecord),
    setUserDisabled(userId: string, at: string | null) {
      q.userDisable.run(at, userId);
      if (at !== null) q.sessionsOfUserDelete.run(userId);
      return user(userId);
    },
    createUserToken(token: UserToken) {
      q.tokenInsert.run(token);
    },
    signUp(tokenHash: string, kind: "owner" | "invite", record: NewUser, now: string): UserRecord | "invalid" {
      const token = q.tokenUse.get(now, tokenHash, kind, now);
      if (!token || (kind === "invite" && token.email !== record.email)) {
        if (token) throw new TokenMismatch(); // rolls the use back: the link stays usable by its own address
        return "invalid";
      }
      const member = token.project_id && token.role ? { projectId: token.project_id, role: token.role } : undefined;
      return createUser({ ...record, owner: kind === "owner" }, member);
    },
    resetPassword(tokenHash: string, passwordHash: string, now: string) {
      const token = q.tokenUse.get(now, tokenHash, "reset", now);
      const person = token?.user_id ? user(token.user_id) : undefined;
      if (!person || person.disabled_at !== null) {
        if (token) throw new TokenMismatch();
        return undefined;
      }
      q.userPassword.run(passwordHash, person.id);
      q.sessionsOfUserDelete.run(person.id);
      return person;
    },
    setMember(projectId: string, userId: string, role: Role | null, now: string) {
      const before = q.memberGet.get(projectId, userId)?.role;
      if (role === null) q.memberDelete.run(projectId, userId);
      else q.memberUpsert.run(projectId, userId, role, now);
      return before;
    },
    listMembers: (projectId?: string) =>
      projectId === undefined ? q.membersAll.all() : q.membersOfProject.all(projectId),
    membershipsOf: (userId: string) => q.membershipsOf.all(userId),
    createBrowserSession(session: BrowserSessionRecord) {
      q.sessionInsert.run(session);
    },
    browserSession(idHash: string, now: string) {
      const row = q.sessionGet.get(idHash, now);
      if (!row) return undefined;
      const { id_hash, user_id, created_at, expires_at, address } = row;
      return {
        session: { id_hash, user_id, created_at, expires_at, address },
        user: userRecord({
          id: row.id,
          email: row.email,
          name: row.name,
          owner: row.owner,
          created_at: row.u_created_at,
          disabled_at: row.disabled_at,
        }),
      };
    },
    deleteBrowserSession(idHash: string) {
      q.sessionDelete.run(idHash);
    },
    deleteUserSessions: (userId: string) => q.sessionsOfUserDelete.run(userId).changes,
    appendAudit: (record: NewAudit) =>
      auditRecord(q.auditInsert.get({ ...record, details: JSON.stringify(record.details) }) as AuditRow),
    listAudit(options: {
      projectId?: string | undefined;
      withInstance?: boolean;
      beforeSeq?: number | undefined;
      afterSeq?: number | undefined;
      limit: number;
    }) {
      const all = options.projectId === undefined ? 1 : 0;
      const oldest = options.afterSeq !== undefined;
      return (oldest ? q.auditPageOldest : q.auditPage)
        .all(
          oldest ? (options.afterSeq as number) : (options.beforeSeq ?? Number.MAX_SAFE_INTEGER),
          all,
          options.projectId ?? null,
          options.withInstance ? 1 : 0,
          options.limit,
        )
        .map(auditRecord);
    },
  };
}

/**
 * Thrown inside a sign-up whose live token does not fit it (an invitation used with another
 * address, a reset of a disabled person): the savepoint rolls back, so the token stays unused,
 * and the store answers "invalid" (store.ts catches it).
 */
export class TokenMismatch extends Error {
  override readonly name = "TokenMismatch";
}
