/**
 * The better-sqlite3 adapter of `Store`: one connection, WAL, statements prepared once, one
 * transaction per write. better-sqlite3 is synchronous; the async methods only wrap it.
 */
import { mkdirSync, readdirSync, readFileSync } from "node:fs";
import { dirname } from "node:path";
import Database from "better-sqlite3";
import { uuidv7 } from "../lib/ids.ts";
import type {
  AgentRecord,
  ApiKeyRecord,
  EndState,
  EventPatcher,
  EventRecord,
  JsonObject,
  Kind,
  NewSession,
  SessionChanges,
  SessionRecord,
  Store,
  UpdateEventsResult,
} from "./store.ts";

const MIGRATIONS = new URL("./migrations/", import.meta.url);

export type Db = Database.Database;

/** Opens (creating it if needed) a database file, or `:memory:`, and brings its schema up to date. */
export function openDb(path: string): Db {
  if (path !== ":memory:" && path !== "") mkdirSync(dirname(path), { recursive: true });
  const db = new Database(path);
  db.pragma("journal_mode = WAL");
  db.pragma("synchronous = NORMAL");
  db.pragma("foreign_keys = ON");
  db.pragma("busy_timeout = 5000");
  migrate(db);
  return db;
}

/** Runs every pending `NNN-name.sql` in one transaction and records the version in user_version. */
function migrationFiles(): string[] {
  return readdirSync(MIGRATIONS)
    .filter((name) => /^\d{3}-[\w-]+\.sql$/.test(name))
    .sort();
}

export function migrate(db: Db): number {
  const files = migrationFiles();
  files.forEach((name, index) => {
    if (Number(name.slice(0, 3)) !== index + 1) throw new Error(`migration ${name} is out of sequence`);
  });
  const current = db.pragma("user_version", { simple: true }) as number;
  if (current > files.length) {
    throw new Error(`the database is at schema version ${current}, newer than this agentmon (${files.length})`);
  }
  if (current === files.length) return current;
  db.transaction(() => {
    for (const name of files.slice(current)) db.exec(readFileSync(new URL(name, MIGRATIONS), "utf8"));
    db.pragma(`user_version = ${files.length}`);
  })();
  return files.length;
}

const json = (value: unknown) => JSON.stringify(value);
const parse = <T>(text: string | null): T | null => (text === null ? null : (JSON.parse(text) as T));

interface SessionRow {
  pk: number;
  id: string;
  project_id: string;
  init_timestamp: string;
  init_us: number;
  end_timestamp: string | null;
  end_state: string | null;
  end_state_reason: string | null;
  tags: string | null;
  host_env: string | null;
  extra: string;
}

interface EventRow {
  id: string;
  type: string;
  init_timestamp: string;
  init_us: number;
  end_timestamp: string | null;
  agent_id: string | null;
  model: string | null;
  prompt_tokens: number | null;
  completion_tokens: number | null;
  cost: number | null;
  body: string;
  aliases: string | null;
  extra: string;
}

const sessionRecord = (row: SessionRow): SessionRecord => ({
  id: row.id,
  project_id: row.project_id,
  init_timestamp: row.init_timestamp,
  init_us: row.init_us,
  end_timestamp: row.end_timestamp,
  end_state: row.end_state as EndState | null,
  end_state_reason: row.end_state_reason,
  tags: parse<string[]>(row.tags),
  host_env: parse<JsonObject>(row.host_env),
  extra: parse<JsonObject>(row.extra) ?? {},
});

const eventRecord = (row: EventRow): EventRecord => ({
  id: row.id,
  type: row.type as Kind,
  init_timestamp: row.init_timestamp,
  init_us: row.init_us,
  end_timestamp: row.end_timestamp,
  agent_id: row.agent_id,
  model: row.model,
  prompt_tokens: row.prompt_tokens,
  completion_tokens: row.completion_tokens,
  cost: row.cost,
  fields: parse<JsonObject>(row.body) ?? {},
  aliases: parse<string[]>(row.aliases) ?? [],
  extra: parse<JsonObject>(row.extra) ?? {},
});

const eventParams = (sessionPk: number, e: EventRecord) => ({
  session_pk: sessionPk,
  id: e.id,
  type: e.type,
  init_timestamp: e.init_timestamp,
  init_us: e.init_us,
  end_timestamp: e.end_timestamp,
  agent_id: e.agent_id,
  model: e.model,
  prompt_tokens: e.prompt_tokens,
  completion_tokens: e.completion_tokens,
  cost: e.cost,
  body: json(e.fields),
  aliases: e.aliases.length === 0 ? null : json(e.aliases),
  extra: json(e.extra),
});

const API_KEY_COLUMNS = `k.id, k.project_id, p.name AS project_name, k.prefix, k.created_at, k.revoked_at
  FROM api_keys k JOIN projects p ON p.id = k.project_id`;

export function sqliteStore(db: Db): Store {
  const schemaVersion = migrationFiles().length;
  const q = {
    metaGet: db.prepare<[string], { value: string }>("SELECT value FROM meta WHERE key = ?"),
    metaInsert: db.prepare("INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT (key) DO NOTHING"),
    heartbeat: db.prepare(
      "INSERT INTO meta (key, value) VALUES ('heartbeat', ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value",
    ),
    projectByName: db.prepare<[string], { id: string }>("SELECT id FROM projects WHERE name = ?"),
    projectInsert: db.prepare("INSERT INTO projects (id, name, created_at) VALUES (?, ?, ?)"),
    keyInsert: db.prepare("INSERT INTO api_keys (id, project_id, key_hash, prefix, created_at) VALUES (?, ?, ?, ?, ?)"),
    keyByHash: db.prepare<[string], ApiKeyRecord>(`SELECT ${API_KEY_COLUMNS} WHERE k.key_hash = ?`),
    keyById: db.prepare<[string], ApiKeyRecord>(`SELECT ${API_KEY_COLUMNS} WHERE k.id = ?`),
    keyList: db.prepare<[], ApiKeyRecord>(`SELECT ${API_KEY_COLUMNS} ORDER BY k.created_at, k.id`),
    keyRevoke: db.prepare("UPDATE api_keys SET revoked_at = ? WHERE id = ? AND revoked_at IS NULL"),
    sessionInsert: db.prepare(
      `INSERT INTO sessions (id, project_id, init_timestamp, init_us, end_timestamp, end_state,
         end_state_reason, tags, host_env, extra)
       VALUES (@id, @project_id, @init_timestamp, @init_us, @end_timestamp, @end_state,
         @end_state_reason, @tags, @host_env, @extra)
       ON CONFLICT (id) DO NOTHING`,
    ),
    sessionGet: db.prepare<[string], SessionRow>("SELECT * FROM sessions WHERE id = ?"),
    sessionUpdate: db.prepare(
      `UPDATE sessions SET init_timestamp = @init_timestamp, init_us = @init_us,
         end_timestamp = @end_timestamp, end_state = @end_state, end_state_reason = @end_state_reason,
         tags = @tags, host_env = @host_env, extra = @extra
       WHERE pk = @pk`,
    ),
    sessionPk: db.prepare<[string], { pk: number; project_id: string }>(
      "SELECT pk, project_id FROM sessions WHERE id = ?",
    ),
    tokenCost: db.prepare<[string], { total: number }>(
      `SELECT coalesce(sum(e.cost), 0) AS total FROM events e JOIN sessions s ON s.pk = e.session_pk
       WHERE s.id = ? AND e.type = 'llm'`,
    ),
    eventInsert: db.prepare(
      `INSERT INTO events (session_pk, id, type, init_timestamp, init_us, end_timestamp, agent_id,
         model, prompt_tokens, completion_tokens, cost, body, aliases, extra)
       VALUES (@session_pk, @id, @type, @init_timestamp, @init_us, @end_timestamp, @agent_id,
         @model, @prompt_tokens, @completion_tokens, @cost, @body, @aliases, @extra)
       ON CONFLICT (session_pk, id) DO NOTHING`,
    ),
    eventGet: db.prepare<[number, string], EventRow>("SELECT * FROM events WHERE session_pk = ? AND id = ?"),
    eventUpdate: db.prepare(
      `UPDATE events SET type = @type, init_timestamp = @init_timestamp, init_us = @init_us,
         end_timestamp = @end_timestamp, agent_id = @agent_id, model = @model,
         prompt_tokens = @prompt_tokens, completion_tokens = @completion_tokens, cost = @cost,
         body = @body, aliases = @aliases, extra = @extra
       WHERE session_pk = @session_pk AND id = @id`,
    ),
    eventList: db.prepare<[string], EventRow>(
      `SELECT e.* FROM events e JOIN sessions s ON s.pk = e.session_pk
       WHERE s.id = ? ORDER BY e.init_us, e.id`,
    ),
    agentGet: db.prepare<[number, string], { name: string | null; extra: string }>(
      "SELECT name, extra FROM agents WHERE session_pk = ? AND id = ?",
    ),
    agentUpsert: db.prepare(
      `INSERT INTO agents (session_pk, id, name, extra) VALUES (?, ?, ?, ?)
       ON CONFLICT (session_pk, id) DO UPDATE SET name = excluded.name, extra = excluded.extra`,
    ),
    agentList: db.prepare<[string], { id: string; name: string | null; extra: string }>(
      `SELECT a.id, a.name, a.extra FROM agents a JOIN sessions s ON s.pk = a.session_pk
       WHERE s.id = ? ORDER BY a.id`,
    ),
  };

  /** The session's row key, when the session exists in that project. */
  const sessionPk = (projectId: string, id: string) => {
    const row = q.sessionPk.get(id);
    return row && row.project_id === projectId ? row.pk : undefined;
  };

  const createApiKey = db.transaction((hash: string, prefix: string, projectName: string, now: string) => {
    let project = q.projectByName.get(projectName);
    if (!project) {
      project = { id: uuidv7() };
      q.projectInsert.run(project.id, projectName, now);
    }
    const id = uuidv7();
    q.keyInsert.run(id, project.id, hash, prefix, now);
    return q.keyById.get(id) as ApiKeyRecord;
  });

  const createSession = db.transaction((projectId: string, s: NewSession) => {
    const { changes } = q.sessionInsert.run({
      ...s,
      project_id: projectId,
      tags: s.tags === null ? null : json(s.tags),
      host_env: s.host_env === null ? null : json(s.host_env),
      extra: json(s.extra),
    });
    if (changes === 1) return { created: true, projectId };
    return { created: false, projectId: (q.sessionPk.get(s.id) as { project_id: string }).project_id };
  });

  const updateSession = db.transaction((projectId: string, id: string, c: SessionChanges) => {
    const row = q.sessionGet.get(id);
    if (!row || row.project_id !== projectId) return undefined;
    const stored = sessionRecord(row);
    const { extra, ...named } = c;
    const next: SessionRecord = { ...stored, ...named, extra: { ...stored.extra, ...extra } };
    q.sessionUpdate.run({
      ...next,
      pk: row.pk,
      tags: next.tags === null ? null : json(next.tags),
      host_env: next.host_env === null ? null : json(next.host_env),
      extra: json(next.extra),
    });
    return next;
  });

  const insertEvents = db.transaction((projectId: string, sessionId: string, events: EventRecord[]) => {
    const pk = sessionPk(projectId, sessionId);
    if (pk === undefined) return false;
    for (const event of events) q.eventInsert.run(eventParams(pk, event));
    return true;
  });

  const updateEvents = db.transaction(
    <P extends { id: string }>(projectId: string, sessionId: string, patches: P[], apply: EventPatcher<P>) => {
      const pk = sessionPk(projectId, sessionId);
      if (pk === undefined) return { status: "no-session" } as const;
      // Each event is read once and written once, with every entry for it applied in order.
      const events = new Map<string, EventRecord>();
      for (const { id } of patches) {
        const row = events.has(id) ? undefined : q.eventGet.get(pk, id);
        if (row) events.set(id, eventRecord(row));
      }
      const unknown = patches
        .map((patch, index) => ({ index, id: patch.id, patch }))
        .filter(({ id }) => !events.has(id));
      if (unknown.length > 0) return { status: "unknown", unknown } as const;
      for (const patch of patches) events.set(patch.id, apply(events.get(patch.id) as EventRecord, patch));
      for (const event of events.values()) q.eventUpdate.run(eventParams(pk, event));
      return { status: "updated", updated: events.size } as const;
    },
  );

  const upsertAgent = db.transaction((projectId: string, sessionId: string, agent: AgentRecord) => {
    const pk = sessionPk(projectId, sessionId);
    if (pk === undefined) return false;
    const stored = q.agentGet.get(pk, agent.id);
    const name = agent.name ?? stored?.name ?? null;
    const extra = { ...(stored ? parse<JsonObject>(stored.extra) : {}), ...agent.extra };
    q.agentUpsert.run(pk, agent.id, name, json(extra));
    return true;
  });

  return {
    async metaValue(key, fallback) {
      q.metaInsert.run(key, fallback);
      return (q.metaGet.get(key) as { value: string }).value;
    },
    async createApiKey(hash, prefix, projectName, now) {
      return createApiKey(hash, prefix, projectName, now);
    },
    async apiKeyByHash(hash) {
      return q.keyByHash.get(hash);
    },
    async apiKeyById(id) {
      return q.keyById.get(id);
    },
    async listApiKeys() {
      return q.keyList.all();
    },
    async revokeApiKey(id, now) {
      q.keyRevoke.run(now, id);
    },
    async createSession(projectId, session) {
      return createSession(projectId, session);
    },
    async getSession(id) {
      const row = q.sessionGet.get(id);
      return row && sessionRecord(row);
    },
    async updateSession(projectId, id, changes) {
      return updateSession(projectId, id, changes);
    },
    async tokenCost(sessionId) {
      return (q.tokenCost.get(sessionId) as { total: number }).total;
    },
    async insertEvents(projectId, sessionId, events) {
      return insertEvents(projectId, sessionId, events);
    },
    async updateEvents<P extends { id: string }>(
      projectId: string,
      sessionId: string,
      patches: P[],
      apply: EventPatcher<P>,
    ): Promise<UpdateEventsResult<P>> {
      return updateEvents(
        projectId,
        sessionId,
        patches,
        apply as EventPatcher<{ id: string }>,
      ) as UpdateEventsResult<P>;
    },
    async listEvents(sessionId) {
      return q.eventList.all(sessionId).map(eventRecord);
    },
    async upsertAgent(projectId, sessionId, agent) {
      return upsertAgent(projectId, sessionId, agent);
    },
    async listAgents(sessionId) {
      return q.agentList.all(sessionId).map((row) => ({
        id: row.id,
        name: row.name,
        extra: parse<JsonObject>(row.extra) ?? {},
      }));
    },
    async ping(now) {
      const version = db.pragma("user_version", { simple: true }) as number;
      if (version !== schemaVersion)
        throw new Error(`the database is at schema version ${version}, not ${schemaVersion}`);
      q.heartbeat.run(now);
      return version;
    },

    async close() {
      if (db.open) db.close();
    },
  };
}
