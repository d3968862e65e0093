/**
 * The better-sqlite3 adapter of `Store`: one connection, WAL, statements prepared once. Reads run
 * at once; writes are group-committed (docs/decisions/006-group-commit.md): queued, then run
 * together in one transaction, each in its own savepoint, and settled once that transaction is
 * committed. better-sqlite3 is synchronous; the async methods only wrap it.
 */
import { mkdirSync, readdirSync, readFileSync } from "node:fs";
import { dirname } from "node:path";
import Database from "better-sqlite3";
import { uuidv7 } from "../lib/ids.ts";
import { fromRoot } from "../lib/paths.ts";
import { type PriceTable, priceEvent, priceTable } from "../lib/prices.ts";
import { patchEvent } from "../lib/records.ts";
import { parseTimestamp } from "../lib/timestamps.ts";
import { startCheckpointer } from "./checkpointer.ts";
import {
  type AgentRecord,
  type ApiKeyRecord,
  type CostSource,
  type EndState,
  type EventPatch,
  type EventPatcher,
  type EventRecord,
  type JsonObject,
  KeyRevoked,
  type Kind,
  type NewSession,
  type Page,
  type Position,
  SchemaMismatch,
  type SessionChanges,
  type SessionFilter,
  type SessionRecord,
  type SessionSnapshot,
  type SessionTotals,
  type Store,
  type UpdateEventsResult,
} from "./store.ts";

const MIGRATIONS = fromRoot("db/migrations/");

export type Db = Database.Database;

/**
 * How hard a commit is pushed to the disk (AGENTMON_SYNCHRONOUS). `normal`: WAL with
 * synchronous=NORMAL, a commit survives a crash or kill of the process but the last commits may
 * be lost on an OS crash or power cut; `full`: every commit is fsynced, so it survives those too.
 */
export const SYNCHRONOUS = ["normal", "full"] as const;
export type Synchronous = (typeof SYNCHRONOUS)[number];

export interface DbOptions {
  /** Default `normal`. */
  synchronous?: Synchronous | undefined;
}

/** Opens (creating it if needed) a database file, or `:memory:`, and brings its schema up to date. */
export function openDb(path: string, options: DbOptions = {}): Db {
  if (path !== ":memory:" && path !== "") mkdirSync(dirname(path), { recursive: true });
  const db = new Database(path);
  db.pragma("journal_mode = WAL");
  db.pragma(`synchronous = ${options.synchronous === "full" ? "FULL" : "NORMAL"}`);
  db.pragma("foreign_keys = ON");
  db.pragma("busy_timeout = 5000");
  // 1 MB of page cache instead of 2: the hot pages of a write load (the ends of the indexes of
  // the sessions being written) fit, and the churn of a bigger cache costs resident memory (B5).
  if (!db.memory) db.pragma("cache_size = -1024");
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

interface StoredEvent {
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
  cost_source: string;
  body: string;
  aliases: string | null;
  extra: string;
}

interface EventPageParams {
  pk: number;
  types: string | null;
  limit: number;
}

interface TotalsRow {
  pk: number;
  events: number;
  llm: number;
  tool: number;
  action: number;
  error: number;
  prompt_tokens: number;
  completion_tokens: number;
  cost: number;
  first_us: number;
  last_us: number;
}

const NO_TOTALS: SessionTotals = {
  events: 0,
  event_counts: { llm: 0, tool: 0, action: 0, error: 0 },
  prompt_tokens: 0,
  completion_tokens: 0,
  cost: 0,
  first_us: null,
  last_us: null,
};

const totals = (row: TotalsRow | undefined): SessionTotals =>
  row === undefined
    ? NO_TOTALS
    : {
        events: row.events,
        event_counts: { llm: row.llm, tool: row.tool, action: row.action, error: row.error },
        prompt_tokens: row.prompt_tokens,
        completion_tokens: row.completion_tokens,
        cost: row.cost,
        first_us: row.first_us,
        last_us: row.last_us,
      };

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

const eventRecord = (row: StoredEvent): EventRecord => ({
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
  cost_source: row.cost_source as CostSource,
  fields: parse<JsonObject>(row.body) ?? {},
  aliases: parse<string[]>(row.aliases) ?? [],
  extra: parse<JsonObject>(row.extra) ?? {},
});

const agentRecord = (row: { id: string; name: string | null; extra: string }): AgentRecord => ({
  id: row.id,
  name: row.name,
  extra: parse<JsonObject>(row.extra) ?? {},
});

/** The columns of an event's row after `session_pk`, in the order of `EventRow`. */
const EVENT_COLUMNS = [
  "id",
  "type",
  "init_timestamp",
  "init_us",
  "end_timestamp",
  "end_us",
  "agent_id",
  "model",
  "prompt_tokens",
  "completion_tokens",
  "cost",
  "cost_source",
  "body",
  "aliases",
  "extra",
] as const;

type Column = string | number | null;
/**
 * An event as the values of its row's columns (EVENT_COLUMNS), without the session: what
 * `insertEventRows` takes. Building it (mostly JSON.stringify) is CPU work that a caller may do
 * on another thread than the writer's; an array of strings and numbers is cheap to send there.
 */
export type EventRow = Column[] & { length: typeof EVENT_COLUMNS.length };

export const eventRow = (e: EventRecord): EventRow =>
  [
    e.id,
    e.type,
    e.init_timestamp,
    e.init_us,
    e.end_timestamp,
    // Stored end_timestamps are UTC ISO strings, so they always parse.
    e.end_timestamp === null ? null : (parseTimestamp(e.end_timestamp)?.us ?? null),
    e.agent_id,
    e.model,
    e.prompt_tokens,
    e.completion_tokens,
    e.cost,
    e.cost_source ?? (e.cost === null ? "unknown" : "client"),
    json(e.fields),
    e.aliases.length === 0 ? null : json(e.aliases),
    json(e.extra),
  ] as EventRow;

/** An event's row as named parameters, for the UPDATE. */
const eventParams = (sessionPk: number, e: EventRecord) => {
  const row = eventRow(e);
  return Object.fromEntries([["session_pk", sessionPk], ...EVENT_COLUMNS.map((column, i) => [column, row[i]])]);
};

/**
 * A group holds at most this many calls, or this many rows (events or patches; one for any other
 * call), so that a flush, which holds the event loop while it runs, stays short. A call is never
 * split: one bigger than the row cap is a group of its own. The rest wait for the next flush.
 */
export const GROUP_MAX_CALLS = 500;
export const GROUP_MAX_ROWS = 10_000;

/**
 * SQLite codes that are the database's condition, not the call's (a full disk, an I/O error, a
 * lock, no memory, ...). SQLite may end the whole transaction on these on its own ("Response To
 * Errors Within A Transaction"); whether it did or not, they fail the whole group, so that the
 * outcome does not depend on which it chose.
 */
const STORAGE_FAULT = /^SQLITE_(FULL|IOERR|BUSY|LOCKED|NOMEM|READONLY|CORRUPT|NOTADB|CANTOPEN|PROTOCOL)/;
const isStorageFault = (error: unknown) => {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === "string" && STORAGE_FAULT.test(code);
};

/** A queued write call. */
interface Call {
  rows: number;
  run: () => unknown;
  resolve: (value: unknown) => void;
  reject: (error: unknown) => void;
}

type Outcome = { ok: true; value: unknown } | { ok: false; error: unknown };

export interface SqliteStore extends Store {
  /** Group transactions committed since the store was made: lets tests see calls coalesce. */
  readonly commits: number;
  /** insertEvents with the rows already built (`eventRow`), e.g. by another thread. */
  insertEventRows(projectId: string, sessionId: string, rows: EventRow[], keyId?: string): Promise<boolean>;
  /** updateEvents with another patcher than the store's own (tests use it to make a patch fail). */
  updateEvents(
    projectId: string,
    sessionId: string,
    patches: EventPatch[],
    keyId?: string,
    apply?: EventPatcher<EventPatch>,
  ): Promise<UpdateEventsResult<EventPatch>>;
}

export interface StoreOptions {
  /** Prices the llm events that update_events changes (a table cost is re-priced); default: shipped. */
  prices?: PriceTable;
  /** Run WAL checkpoints from a worker thread (db/checkpointer.ts) for a file database; default true. */
  checkpointer?: boolean | undefined;
}

const API_KEY_COLUMNS = `k.id, k.project_id, p.name AS project_name, k.prefix, k.created_at, k.revoked_at
  FROM api_keys k JOIN projects p ON p.id = k.project_id`;

/**
 * API-key lookups on a connection of their own: the main thread keeps one beside the storage
 * thread (db/thread.ts), so that the check every request makes (4.1, 4.3) is a local read, not a
 * message, and sees a revoke the moment it is committed, by any process.
 */
export function keyReader(db: Db) {
  const byHash = db.prepare<[string], ApiKeyRecord>(`SELECT ${API_KEY_COLUMNS} WHERE k.key_hash = ?`);
  const byId = db.prepare<[string], ApiKeyRecord>(`SELECT ${API_KEY_COLUMNS} WHERE k.id = ?`);
  return {
    apiKeyByHash: async (hash: string) => byHash.get(hash),
    apiKeyById: async (id: string) => byId.get(id),
  };
}

export function sqliteStore(db: Db, options: StoreOptions = {}): SqliteStore {
  const schemaVersion = migrationFiles().length;
  const prices = options.prices ?? priceTable();
  const patcher: EventPatcher<EventPatch> = (stored, patch) => priceEvent(patchEvent(stored, patch), prices);
  // A file database checkpoints from a worker thread (db/checkpointer.ts); this connection only
  // does when the worker falls 40 MB behind.
  const onDisk = db.memory === false && !db.readonly && db.pragma("journal_mode", { simple: true }) === "wal";
  const checkpointer = onDisk && options.checkpointer !== false ? startCheckpointer(db.name) : undefined;
  if (onDisk) db.pragma("wal_autocheckpoint = 10000");
  /** API keys by id, valid while data_version stays the same (see apiKeyById). */
  const keys = { version: -1, byId: new Map<string, ApiKeyRecord | undefined>() };
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
    dataVersion: db.prepare("PRAGMA data_version").pluck(),
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
    // One statement computes every session's totals, for one session or a page of them, so
    // token_cost (S6), a session's stats and a list row's stats are the same sums.
    totals: db.prepare<[string], TotalsRow>(
      `SELECT session_pk AS pk, count(*) AS events,
         count(*) FILTER (WHERE type = 'llm') AS llm, count(*) FILTER (WHERE type = 'tool') AS tool,
         count(*) FILTER (WHERE type = 'action') AS action, count(*) FILTER (WHERE type = 'error') AS error,
         total(prompt_tokens) FILTER (WHERE type = 'llm') AS prompt_tokens,
         total(completion_tokens) FILTER (WHERE type = 'llm') AS completion_tokens,
         total(cost) FILTER (WHERE type = 'llm') AS cost,
         min(init_us) AS first_us, max(max(init_us, coalesce(end_us, init_us))) AS last_us
       FROM events WHERE session_pk IN (SELECT value FROM json_each(?))
       GROUP BY session_pk`,
    ),
    eventPageFirst: db.prepare<[EventPageParams], StoredEvent>(
      `SELECT * FROM events
       WHERE session_pk = @pk AND (@types IS NULL OR type IN (SELECT value FROM json_each(@types)))
       ORDER BY init_us, id LIMIT @limit`,
    ),
    eventPageAfter: db.prepare<[EventPageParams & { after_us: number; after_id: string }], StoredEvent>(
      `SELECT * FROM events
       WHERE session_pk = @pk AND (init_us, id) > (@after_us, @after_id)
         AND (@types IS NULL OR type IN (SELECT value FROM json_each(@types)))
       ORDER BY init_us, id LIMIT @limit`,
    ),
    agentsOf: db.prepare<[number], { id: string; name: string | null; extra: string }>(
      "SELECT id, name, extra FROM agents WHERE session_pk = ? ORDER BY id",
    ),
    eventsOf: db.prepare<[number], StoredEvent>("SELECT * FROM events WHERE session_pk = ? ORDER BY init_us, id"),
    sessionDelete: db.prepare("DELETE FROM sessions WHERE pk = ?"),
    sessionEventsDelete: db.prepare("DELETE FROM events WHERE session_pk = ?"),
    sessionAgentsDelete: db.prepare("DELETE FROM agents WHERE session_pk = ?"),
    eventInsert: db.prepare(
      `INSERT INTO events (session_pk, ${EVENT_COLUMNS.join(", ")})
       VALUES (?${", ?".repeat(EVENT_COLUMNS.length)})
       ON CONFLICT (session_pk, id) DO NOTHING`,
    ),
    eventGet: db.prepare<[number, string], StoredEvent>("SELECT * FROM events WHERE session_pk = ? AND id = ?"),
    eventUpdate: db.prepare(
      `UPDATE events SET type = @type, init_timestamp = @init_timestamp, init_us = @init_us,
         end_timestamp = @end_timestamp, end_us = @end_us, agent_id = @agent_id, model = @model,
         prompt_tokens = @prompt_tokens, completion_tokens = @completion_tokens, cost = @cost,
         cost_source = @cost_source, body = @body, aliases = @aliases, extra = @extra
       WHERE session_pk = @session_pk AND id = @id`,
    ),
    eventList: db.prepare<[string], StoredEvent>(
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

  /** The totals of these sessions, by row key. */
  const totalsOf = (pks: number[]): Map<number, SessionTotals> =>
    new Map(q.totals.all(json(pks)).map((row) => [row.pk, totals(row)]));

  // The q filter: case-insensitive by JavaScript's Unicode case mapping, not SQLite's ASCII-only lower().
  db.function("agentmon_contains_ci", { deterministic: true }, (text: unknown, needle: unknown) =>
    typeof text === "string" && typeof needle === "string" && text.toLowerCase().includes(needle) ? 1 : 0,
  );

  // The session list's SQL depends on which filters are given: only those conditions are in it,
  // so SQLite can pick the index that fits (the end_state one, or the time one for a range).
  // One prepared statement per combination, made on first use.
  const listStatements = new Map<string, Database.Statement<Record<string, unknown>, SessionRow>>();
  const CONDITIONS = {
    after: "(s.init_us, s.id) < (@after_us, @after_id)",
    end_state: "s.end_state = @end_state",
    from_us: "s.init_us >= @from_us",
    to_us: "s.init_us < @to_us",
    tags: `(SELECT count(DISTINCT t.value) FROM json_each(s.tags) t
            WHERE t.value IN (SELECT value FROM json_each(@tags))) = @tag_count`,
    agent_id: `(EXISTS (SELECT 1 FROM agents a WHERE a.session_pk = s.pk AND a.id = @agent_id)
            OR EXISTS (SELECT 1 FROM events e WHERE e.agent_id = @agent_id AND e.session_pk = s.pk))`,
    q: "agentmon_contains_ci(s.end_state_reason, @q)",
  } as const;
  const listStatement = (conditions: (keyof typeof CONDITIONS)[]) => {
    const key = conditions.join(",");
    let statement = listStatements.get(key);
    if (!statement) {
      const where = ["s.project_id = @project_id", ...conditions.map((c) => CONDITIONS[c])].join(" AND ");
      statement = db.prepare<Record<string, unknown>, SessionRow>(
        `SELECT s.* FROM sessions s WHERE ${where} ORDER BY s.init_us DESC, s.id DESC LIMIT @limit`,
      );
      listStatements.set(key, statement);
    }
    return statement;
  };

  function listSessions(projectId: string, filter: SessionFilter, after: Position | undefined, limit: number) {
    const params: Record<string, unknown> = { project_id: projectId, limit: limit + 1 };
    const conditions: (keyof typeof CONDITIONS)[] = [];
    if (after) {
      conditions.push("after");
      params.after_us = after.init_us;
      params.after_id = after.id;
    }
    if (filter.end_state !== undefined) {
      conditions.push("end_state");
      params.end_state = filter.end_state;
    }
    if (filter.from_us !== undefined) {
      conditions.push("from_us");
      params.from_us = filter.from_us;
    }
    if (filter.to_us !== undefined) {
      conditions.push("to_us");
      params.to_us = filter.to_us;
    }
    const tags = [...new Set(filter.tags ?? [])];
    if (tags.length > 0) {
      conditions.push("tags");
      params.tags = json(tags);
      params.tag_count = tags.length;
    }
    if (filter.agent_id !== undefined) {
      conditions.push("agent_id");
      params.agent_id = filter.agent_id;
    }
    if (filter.q !== undefined) {
      conditions.push("q");
      params.q = filter.q.toLowerCase();
    }
    const rows = listStatement(conditions).all(params);
    const page = rows.slice(0, limit);
    const last = page[page.length - 1];
    const byPk = totalsOf(page.map((row) => row.pk));
    return {
      items: page.map((row) => ({ session: sessionRecord(row), totals: byPk.get(row.pk) ?? NO_TOTALS })),
      next: rows.length > limit && last ? { init_us: last.init_us, id: last.id } : null,
    };
  }

  function listEventsPage(
    projectId: string,
    sessionId: string,
    options: { types?: Kind[]; after?: Position; limit: number },
  ): Page<EventRecord> | undefined {
    const pk = sessionPk(projectId, sessionId);
    if (pk === undefined) return undefined;
    const types = options.types && options.types.length > 0 ? json(options.types) : null;
    const params = { pk, types, limit: options.limit + 1 };
    const rows = options.after
      ? q.eventPageAfter.all({ ...params, after_us: options.after.init_us, after_id: options.after.id })
      : q.eventPageFirst.all(params);
    const page = rows.slice(0, options.limit);
    const last = page[page.length - 1];
    return {
      items: page.map(eventRecord),
      next: rows.length > options.limit && last ? { init_us: last.init_us, id: last.id } : null,
    };
  }

  const readSession = db.transaction(
    (
      projectId: string,
      sessionId: string,
      parts: { agents: boolean; events: boolean },
    ): SessionSnapshot | undefined => {
      const row = q.sessionGet.get(sessionId);
      if (!row || row.project_id !== projectId) return undefined;
      return {
        session: sessionRecord(row),
        totals: totalsOf([row.pk]).get(row.pk) ?? NO_TOTALS,
        agents: parts.agents ? q.agentsOf.all(row.pk).map(agentRecord) : [],
        events: parts.events ? q.eventsOf.all(row.pk).map(eventRecord) : [],
      };
    },
  );

  // The write calls below are plain functions: each runs inside a group transaction, in its own
  // savepoint (see `write`), never on its own.
  const deleteSession = (projectId: string, sessionId: string) => {
    const pk = sessionPk(projectId, sessionId);
    if (pk === undefined) return false;
    // Explicit rather than by ON DELETE CASCADE, which only works where foreign_keys is on.
    q.sessionEventsDelete.run(pk);
    q.sessionAgentsDelete.run(pk);
    q.sessionDelete.run(pk);
    return true;
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

  const createSession = (projectId: string, s: NewSession) => {
    const { changes } = q.sessionInsert.run({
      ...s,
      project_id: projectId,
      tags: s.tags === null ? null : json(s.tags),
      host_env: s.host_env === null ? null : json(s.host_env),
      extra: json(s.extra),
    });
    if (changes === 1) return { created: true, projectId };
    return { created: false, projectId: (q.sessionPk.get(s.id) as { project_id: string }).project_id };
  };

  const updateSession = (projectId: string, id: string, c: SessionChanges) => {
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
  };

  const insertEventRows = (projectId: string, sessionId: string, rows: EventRow[]) => {
    const pk = sessionPk(projectId, sessionId);
    if (pk === undefined) return false;
    for (const row of rows) q.eventInsert.run(pk, row);
    return true;
  };

  const updateEvents = (
    projectId: string,
    sessionId: string,
    patches: EventPatch[],
    apply: EventPatcher<EventPatch>,
  ): UpdateEventsResult<EventPatch> => {
    const pk = sessionPk(projectId, sessionId);
    if (pk === undefined) return { status: "no-session" } as const;
    // Each event is read once and written once, with every entry for it applied in order.
    const events = new Map<string, EventRecord>();
    for (const { id } of patches) {
      const row = events.has(id) ? undefined : q.eventGet.get(pk, id);
      if (row) events.set(id, eventRecord(row));
    }
    const unknown = patches.map((patch, index) => ({ index, id: patch.id, patch })).filter(({ id }) => !events.has(id));
    if (unknown.length > 0) return { status: "unknown", unknown } as const;
    for (const patch of patches) events.set(patch.id, apply(events.get(patch.id) as EventRecord, patch));
    for (const event of events.values()) q.eventUpdate.run(eventParams(pk, event));
    return { status: "updated", updated: events.size } as const;
  };

  const upsertAgent = (projectId: string, sessionId: string, agent: AgentRecord) => {
    const pk = sessionPk(projectId, sessionId);
    if (pk === undefined) return false;
    const stored = q.agentGet.get(pk, agent.id);
    const name = agent.name ?? stored?.name ?? null;
    const extra = { ...(stored ? parse<JsonObject>(stored.extra) : {}), ...agent.extra };
    q.agentUpsert.run(pk, agent.id, name, json(extra));
    return true;
  };

  /**
   * An API key by id. Every JWT write checks its key (4.3: a revoked key's JWTs fail at once).
   * The answer is kept until the database changes: data_version moves whenever another
   * connection (an `agentmon keys revoke` in another process) commits, and this connection's
   * own key writes clear the cache themselves.
   */
  function keyById(id: string) {
    const version = q.dataVersion.get() as number;
    if (version !== keys.version) {
      keys.byId.clear();
      keys.version = version;
    }
    if (!keys.byId.has(id)) {
      if (keys.byId.size >= 10_000) keys.byId.clear();
      keys.byId.set(id, q.keyById.get(id));
    }
    return keys.byId.get(id);
  }

  /** Runs a JWT's write only while the key it was issued through is live (inside its transaction). */
  const guarded =
    <T>(projectId: string, keyId: string | undefined, run: () => T) =>
    (): T => {
      if (keyId !== undefined) {
        const key = keyById(keyId);
        if (!key || key.revoked_at !== null || key.project_id !== projectId) throw new KeyRevoked();
      }
      return run();
    };

  // ---------------------------------------------------------------- group commit
  // Every write call is queued; the first one schedules a flush (setImmediate, so that the calls
  // of every request handled in this turn of the event loop join it). A flush runs a group of
  // calls in ONE transaction, each in its own savepoint, commits once, and only then settles
  // their promises: a call resolves only when its data is committed (G7). Reads stay direct; a
  // flush is one synchronous run, so no read sees a group half done.
  const tx = {
    begin: db.prepare("BEGIN IMMEDIATE"),
    commit: db.prepare("COMMIT"),
    rollback: db.prepare("ROLLBACK"),
    savepoint: db.prepare("SAVEPOINT agentmon_call"),
    release: db.prepare("RELEASE agentmon_call"),
    rollbackTo: db.prepare("ROLLBACK TO agentmon_call"),
  };
  const queue: Call[] = [];
  let flushScheduled = false;
  let commits = 0;

  /** Queues a write call of `rows` rows; it settles once the group it ran in is committed or not. */
  function write<T>(rows: number, run: () => T): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      queue.push({ rows: Math.max(1, rows), run, resolve: resolve as (value: unknown) => void, reject });
      if (!flushScheduled) {
        flushScheduled = true;
        setImmediate(flush);
      }
    });
  }

  /** Commits one group; what is left waits for the next turn, so that I/O is served in between. */
  function flush() {
    flushScheduled = false;
    if (queue.length > 0) commitGroup(nextGroup());
    if (queue.length > 0 && !flushScheduled) {
      flushScheduled = true;
      setImmediate(flush);
    }
  }

  /** The first queued calls, in call order, up to the caps (always at least one). */
  function nextGroup(): Call[] {
    let calls = 0;
    let rows = 0;
    for (const call of queue) {
      if (calls === GROUP_MAX_CALLS || (calls > 0 && rows + call.rows > GROUP_MAX_ROWS)) break;
      calls++;
      rows += call.rows;
    }
    return queue.splice(0, calls);
  }

  function commitGroup(group: Call[]) {
    const outcomes: Outcome[] = [];
    try {
      // Only a ROLLBACK that failed below can leave a transaction open between flushes; end it
      // rather than fail every later group with "cannot start a transaction within a transaction".
      if (db.inTransaction) tx.rollback.run();
      tx.begin.run();
      for (const call of group) outcomes.push(runCall(call));
      tx.commit.run();
    } catch (fault) {
      // A storage fault, an error that ended the transaction, or a failed BEGIN or COMMIT: nothing
      // of the group is committed, so every call of it fails, those whose savepoint was released
      // too. Never resolve a call whose data is not committed.
      if (db.open && db.inTransaction) {
        try {
          tx.rollback.run();
        } catch {
          // The next flush tries again (above); these calls fail with the first error either way.
        }
      }
      for (const call of group) call.reject(fault);
      return;
    }
    commits++;
    group.forEach((call, index) => {
      const outcome = outcomes[index] as Outcome;
      if (outcome.ok) call.resolve(outcome.value);
      else call.reject(outcome.error);
    });
  }

  /**
   * Runs one call in its own savepoint. An error of the call's own (a constraint, a bug) undoes
   * that call alone, which then fails alone; a storage fault, or any error after which SQLite has
   * ended the transaction, is thrown on to fail the whole group.
   */
  function runCall(call: Call): Outcome {
    tx.savepoint.run();
    try {
      const value = call.run();
      tx.release.run();
      return { ok: true, value };
    } catch (error) {
      if (!db.inTransaction || isStorageFault(error)) throw error;
      tx.rollbackTo.run();
      tx.release.run();
      return { ok: false, error };
    }
  }

  return {
    get commits() {
      return commits;
    },
    async metaValue(key, fallback) {
      q.metaInsert.run(key, fallback);
      return (q.metaGet.get(key) as { value: string }).value;
    },
    async createApiKey(hash, prefix, projectName, now) {
      keys.byId.clear();
      return createApiKey(hash, prefix, projectName, now);
    },
    async apiKeyByHash(hash) {
      return q.keyByHash.get(hash);
    },
    async apiKeyById(id) {
      return keyById(id);
    },
    async listApiKeys() {
      return q.keyList.all();
    },
    async revokeApiKey(id, now) {
      q.keyRevoke.run(now, id);
      keys.byId.clear();
    },
    createSession(projectId, session) {
      return write(1, () => createSession(projectId, session));
    },
    async getSession(id) {
      const row = q.sessionGet.get(id);
      return row && sessionRecord(row);
    },
    updateSession(projectId, id, changes, keyId) {
      return write(
        1,
        guarded(projectId, keyId, () => updateSession(projectId, id, changes)),
      );
    },
    async tokenCost(sessionId) {
      const row = q.sessionPk.get(sessionId);
      return row ? (totalsOf([row.pk]).get(row.pk)?.cost ?? 0) : 0;
    },
    async listSessions(projectId, filter, after, limit) {
      return listSessions(projectId, filter, after, limit);
    },
    async readSession(projectId, sessionId, parts) {
      return readSession(projectId, sessionId, parts);
    },
    async listEventsPage(projectId, sessionId, options) {
      return listEventsPage(projectId, sessionId, options);
    },
    deleteSession(projectId, sessionId) {
      return write(1, () => deleteSession(projectId, sessionId));
    },
    insertEvents(projectId, sessionId, events, keyId) {
      const rows = events.map(eventRow);
      return write(
        rows.length,
        guarded(projectId, keyId, () => insertEventRows(projectId, sessionId, rows)),
      );
    },
    insertEventRows(projectId, sessionId, rows, keyId) {
      return write(
        rows.length,
        guarded(projectId, keyId, () => insertEventRows(projectId, sessionId, rows)),
      );
    },
    updateEvents(projectId, sessionId, patches, keyId, apply = patcher) {
      return write(
        patches.length,
        guarded(projectId, keyId, () => updateEvents(projectId, sessionId, patches, apply)),
      );
    },
    async listEvents(sessionId) {
      return q.eventList.all(sessionId).map(eventRecord);
    },
    upsertAgent(projectId, sessionId, agent, keyId) {
      return write(
        1,
        guarded(projectId, keyId, () => upsertAgent(projectId, sessionId, agent)),
      );
    },
    async listAgents(sessionId) {
      return q.agentList.all(sessionId).map(agentRecord);
    },
    async ping(now) {
      const version = db.pragma("user_version", { simple: true }) as number;
      if (version !== schemaVersion) throw new SchemaMismatch(version, schemaVersion);
      await write(1, () => q.heartbeat.run(now));
      return version;
    },

    async close() {
      // What is queued is committed (or fails) before the connection closes: no call is dropped.
      // A call made after close() fails in its flush, as any use of a closed connection does.
      while (queue.length > 0) commitGroup(nextGroup());
      await checkpointer?.stop(); // first, so that this connection is the last and cleans the WAL up
      if (db.open) db.close();
    },
  };
}
