/** Projects, API keys and the meta table (the JWT secret, the readiness heartbeat) on PostgreSQL. */
import type pg from "pg";
import { uuidv7 } from "../../domain/ids.ts";
import { DEFAULT_SCOPES, scopesColumn, scopesOfColumn } from "../../domain/keys.ts";
import type { ApiKeyRecord, ProjectRecord, Scope } from "../../domain/types.ts";

const API_KEY_COLUMNS = `k.id, k.project_id, p.name AS project_name, k.prefix, k.created_at, k.revoked_at, k.scopes
  FROM api_keys k JOIN projects p ON p.id = k.project_id`;

type KeyRow = Omit<ApiKeyRecord, "scopes"> & { scopes: string };
/** A row as its record: the scopes column as a list. */
const keyRecord = (row: KeyRow): ApiKeyRecord => ({ ...row, scopes: scopesOfColumn(row.scopes) });

type Queryable = pg.Pool | pg.ClientBase;

/**
 * No cache: every check reads the row, so a key revoked through any node (or `agentmon keys
 * revoke`) fails on every node at once (4.3). A JWT's write checks its key inside the write's own
 * transaction (group-commit.ts).
 */
export const keyQueries = {
  async byHash(db: Queryable, hash: string) {
    const { rows } = await db.query<KeyRow>(`SELECT ${API_KEY_COLUMNS} WHERE k.key_hash = $1`, [hash]);
    return rows[0] && keyRecord(rows[0]);
  },
  async byId(db: Queryable, id: string) {
    const { rows } = await db.query<KeyRow>(`SELECT ${API_KEY_COLUMNS} WHERE k.id = $1`, [id]);
    return rows[0] && keyRecord(rows[0]);
  },
  async list(db: Queryable) {
    const { rows } = await db.query<KeyRow>(`SELECT ${API_KEY_COLUMNS} ORDER BY k.created_at, k.id`);
    return rows.map(keyRecord);
  },
  /** The project (made when no project has that name: another node may make it at the same time) and the key. */
  async create(
    tx: pg.ClientBase,
    hash: string,
    prefix: string,
    projectName: string,
    now: string,
    scopes: readonly Scope[] = DEFAULT_SCOPES,
  ) {
    await tx.query("INSERT INTO projects (id, name, created_at) VALUES ($1, $2, $3) ON CONFLICT (name) DO NOTHING", [
      uuidv7(),
      projectName,
      now,
    ]);
    const { rows } = await tx.query<{ id: string }>("SELECT id FROM projects WHERE name = $1", [projectName]);
    const id = uuidv7();
    await tx.query(
      "INSERT INTO api_keys (id, project_id, key_hash, prefix, created_at, scopes) VALUES ($1, $2, $3, $4, $5, $6)",
      [id, (rows[0] as { id: string }).id, hash, prefix, now, scopesColumn(scopes)],
    );
    return (await keyQueries.byId(tx, id)) as ApiKeyRecord;
  },
  async revoke(db: Queryable, id: string, now: string) {
    await db.query("UPDATE api_keys SET revoked_at = $1 WHERE id = $2 AND revoked_at IS NULL", [now, id]);
  },
  /** Insert-if-absent, then read: every node starting at once ends up with the first one's value. */
  async metaValue(db: Queryable, key: string, fallback: string) {
    // Two statements: the SELECT's snapshot is taken after the INSERT, so it sees the row another
    // node committed while the INSERT waited on it (one statement's snapshot would not).
    await db.query("INSERT INTO meta (key, value) VALUES ($1, $2) ON CONFLICT (key) DO NOTHING", [key, fallback]);
    const { rows } = await db.query<{ value: string }>("SELECT value FROM meta WHERE key = $1", [key]);
    return (rows[0] as { value: string }).value;
  },
  async projects(db: Queryable) {
    const { rows } = await db.query<ProjectRecord>(
      'SELECT id, name, created_at, retention_days FROM projects ORDER BY name COLLATE "C"',
    );
    return rows;
  },
  async createProject(db: Queryable, name: string, now: string) {
    const { rows } = await db.query<ProjectRecord>(
      "INSERT INTO projects (id, name, created_at) VALUES ($1, $2, $3) RETURNING id, name, created_at, retention_days",
      [uuidv7(), name, now],
    );
    return rows[0] as ProjectRecord;
  },
  async setRetention(db: Queryable, name: string, days: number | null) {
    const { rows } = await db.query<ProjectRecord>(
      "UPDATE projects SET retention_days = $1 WHERE name = $2 RETURNING id, name, created_at, retention_days",
      [days, name],
    );
    return rows[0];
  },
  async heartbeat(db: Queryable, now: string) {
    await db.query(
      "INSERT INTO meta (key, value) VALUES ('heartbeat', $1) ON CONFLICT (key) DO UPDATE SET value = excluded.value",
      [now],
    );
  },
};
