/** Projects, API keys and the meta table (the JWT secret, the readiness heartbeat). */
import { uuidv7 } from "../../domain/ids.ts";
import { DEFAULT_SCOPES, isLive, scopesColumn, scopesOfColumn } from "../../domain/keys.ts";
import type { ApiKeyRecord, ProjectRecord, Scope } from "../../domain/types.ts";
import { KeyRevoked } from "../errors.ts";
import type { Db } from "./open.ts";

const API_KEY_COLUMNS = `k.id, k.project_id, p.name AS project_name, k.prefix, k.created_at, k.revoked_at, k.scopes
  FROM api_keys k JOIN projects p ON p.id = k.project_id`;

type KeyRow = Omit<ApiKeyRecord, "scopes"> & { scopes: string };
/** A row as its record: the scopes column as a list. */
const keyRecord = (row: KeyRow | undefined): ApiKeyRecord | undefined =>
  row && { ...row, scopes: scopesOfColumn(row.scopes) };

/**
 * API-key lookups. The storage thread's main-thread side keeps one on a read-only connection of
 * its own (db/sqlite/thread.ts), so that the check every request makes (4.1, 4.3) is a local
 * read, not a message, and sees a revoke the moment it is committed, by any process.
 */
export function keyReader(db: Db) {
  const byHash = db.prepare<[string], KeyRow>(`SELECT ${API_KEY_COLUMNS} WHERE k.key_hash = ?`);
  const byId = db.prepare<[string], KeyRow>(`SELECT ${API_KEY_COLUMNS} WHERE k.id = ?`);
  return {
    byHash: (hash: string) => keyRecord(byHash.get(hash)),
    byId: (id: string) => keyRecord(byId.get(id)),
  };
}

export function keyStatements(db: Db) {
  const reader = keyReader(db);
  const q = {
    metaGet: db.prepare<[string], { value: string }>("SELECT value FROM meta WHERE key = ?"),
    metaInsert: db.prepare("INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT (key) DO NOTHING"),
    heartbeat: db.prepare(
      "INSERT INTO meta (key, value) VALUES ('heartbeat', ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value",
    ),
    projectByName: db.prepare<[string], { id: string }>("SELECT id FROM projects WHERE name = ?"),
    projectInsert: db.prepare("INSERT INTO projects (id, name, created_at) VALUES (?, ?, ?)"),
    keyInsert: db.prepare(
      "INSERT INTO api_keys (id, project_id, key_hash, prefix, created_at, scopes) VALUES (?, ?, ?, ?, ?, ?)",
    ),
    dataVersion: db.prepare("PRAGMA data_version").pluck(),
    keyList: db.prepare<[], KeyRow>(`SELECT ${API_KEY_COLUMNS} ORDER BY k.created_at, k.id`),
    keyRevoke: db.prepare("UPDATE api_keys SET revoked_at = ? WHERE id = ? AND revoked_at IS NULL"),
    projectList: db.prepare<[], ProjectRecord>(
      "SELECT id, name, created_at, retention_days FROM projects ORDER BY name",
    ),
    projectGet: db.prepare<[string], ProjectRecord>(
      "SELECT id, name, created_at, retention_days FROM projects WHERE name = ?",
    ),
    projectRetention: db.prepare("UPDATE projects SET retention_days = ? WHERE name = ?"),
  };
  /** API keys by id, valid while data_version stays the same (see byId). */
  const cache = { version: -1, byId: new Map<string, ApiKeyRecord | undefined>() };

  /**
   * An API key by id. Every JWT write checks its key (4.3: a revoked key's JWTs fail at once).
   * The answer is kept until the database changes: data_version moves whenever another
   * connection (an `agentmon keys revoke` in another process) commits, and this connection's
   * own key writes clear the cache themselves.
   */
  function byId(id: string) {
    const version = q.dataVersion.get() as number;
    if (version !== cache.version) {
      cache.byId.clear();
      cache.version = version;
    }
    if (!cache.byId.has(id)) {
      if (cache.byId.size >= 10_000) cache.byId.clear();
      cache.byId.set(id, reader.byId(id));
    }
    return cache.byId.get(id);
  }

  const createApiKey = db.transaction(
    (hash: string, prefix: string, projectName: string, now: string, scopes: readonly Scope[]) => {
      let project = q.projectByName.get(projectName);
      if (!project) {
        project = { id: uuidv7() };
        q.projectInsert.run(project.id, projectName, now);
      }
      const id = uuidv7();
      q.keyInsert.run(id, project.id, hash, prefix, now, scopesColumn(scopes));
      return reader.byId(id) as ApiKeyRecord;
    },
  );

  return {
    byHash: reader.byHash,
    byId,
    list: () => q.keyList.all().map((row) => keyRecord(row) as ApiKeyRecord),
    create(hash: string, prefix: string, projectName: string, now: string, scopes: readonly Scope[] = DEFAULT_SCOPES) {
      cache.byId.clear();
      return createApiKey(hash, prefix, projectName, now, scopes);
    },
    revoke(id: string, now: string) {
      q.keyRevoke.run(now, id);
      cache.byId.clear();
    },
    /** Throws KeyRevoked unless the key is live for the project (run inside the write's transaction). */
    requireLive(keyId: string | undefined, projectId: string) {
      if (keyId !== undefined && !isLive(byId(keyId), projectId)) throw new KeyRevoked();
    },
    metaValue(key: string, fallback: string) {
      q.metaInsert.run(key, fallback);
      return (q.metaGet.get(key) as { value: string }).value;
    },
    heartbeat: (now: string) => q.heartbeat.run(now),
    /** In the caller's transaction. */
    createProject(name: string, now: string) {
      q.projectInsert.run(uuidv7(), name, now);
      return q.projectGet.get(name) as ProjectRecord;
    },
    projects: () => q.projectList.all(),
    /** In the caller's transaction. */
    setRetention(name: string, days: number | null) {
      q.projectRetention.run(days, name);
      return q.projectGet.get(name);
    },
  };
}
