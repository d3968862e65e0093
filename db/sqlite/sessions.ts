/** Sessions: create, read with totals, update, list with filters and keyset pages, delete. */

import type Database from "better-sqlite3";
import { extraFilterJson } from "../../domain/extra.ts";
import { scoreFilterJson } from "../../domain/scores.ts";
import {
  DEFAULT_SORT,
  type DeleteBatch,
  type DeletedBatch,
  type NewSession,
  type Page,
  type Position,
  type SessionChanges,
  type SessionFilter,
  type SessionRecord,
  type SessionSnapshot,
  type SessionSort,
  type SessionWithTotals,
} from "../../domain/types.ts";
import {
  agentRecord,
  eventRecord,
  json,
  type Picked,
  rowTotals,
  type SessionRow,
  type StoredEvent,
  sessionRecord,
  takeBatch,
} from "../rows.ts";
import type { Db } from "./open.ts";
import { CHANGE, type SqliteProjector } from "./projector.ts";
import {
  type Expand,
  searchCondition,
  searchMatches,
  searchParams,
  searchWalk,
  WALKED_EVENTS,
  WALKED_PROBES,
  WALKED_SESSIONS,
  type Walk,
} from "./search.ts";

/**
 * A stored timestamp (always YYYY-MM-DDTHH:MM:SS[.f{1,6}]Z, lib/timestamps.ts) as microseconds
 * since the epoch, in SQL: as migration 002 computes events.end_us.
 */
const usOf = (column: string) => `(unixepoch(substr(${column}, 1, 19)) * 1000000
  + CASE WHEN length(${column}) > 21
      THEN CAST(substr(substr(${column}, 21, length(${column}) - 21) || '000000', 1, 6) AS INTEGER)
      ELSE 0 END)`;

/**
 * The session list's conditions. Its SQL depends on which filters are given: only those
 * conditions are in it, so SQLite can pick the index that fits (the end_state one, or the time
 * one for a range). One prepared statement per combination, made on first use.
 */
const CONDITIONS = {
  after: "(s.init_us, s.id) < (@after_us, @after_id)",
  // A page of another order: its sort key and id after the cursor's (SORT_KEYS).
  after_desc: "(KEY, s.id) < (@after_us, @after_id)",
  after_asc: "(KEY, s.id) > (@after_us, @after_id)",
  // The same for an expression's key (tokens), which SQLite seeks in its index only this way.
  after_desc_expr: "KEY <= @after_us AND (KEY < @after_us OR s.id < @after_id)",
  after_asc_expr: "KEY >= @after_us AND (KEY > @after_us OR s.id > @after_id)",
  model: "EXISTS (SELECT 1 FROM session_models m WHERE m.model = @model AND m.session_pk = s.pk)",
  // Each field of @extra (domain/extra.ts: key -> [text, number or null]) names a top-level field
  // of the session's extra, found by comparing keys as values (json_each's key), never as a path:
  // `s.extra ->> key` would read `a.b` or `$.a` as a path, and a quote or backslash in it
  // as a malformed one (decision 031). A string matches the text, a number the number (by value),
  // true or false the text `true` or `false`; null, objects and arrays nothing.
  extra: `(SELECT count(*) FROM json_each(@extra) w, json_each(s.extra) x
          WHERE x.key = w.key AND CASE x.type WHEN 'text' THEN x.value = w.value ->> 0
            WHEN 'integer' THEN x.value = w.value ->> 1 WHEN 'real' THEN x.value = w.value ->> 1
            WHEN 'true' THEN w.value ->> 0 = 'true' WHEN 'false' THEN w.value ->> 0 = 'false' END) = @extra_count`,
  min_cost: "round(s.cost, 12) >= @min_cost",
  max_cost: "round(s.cost, 12) <= @max_cost",
  min_duration: "s.duration_us >= @min_duration_us",
  max_duration: "s.duration_us <= @max_duration_us",
  has_errors: "s.error_count > 0",
  no_errors: "s.error_count = 0",
  end_state: "s.end_state = @end_state",
  from_us: "s.init_us >= @from_us",
  to_us: "s.init_us < @to_us",
  tags: `(SELECT count(DISTINCT t.value) FROM json_each(s.tags) t
          WHERE t.value IN (SELECT value FROM json_each(@tags))) = @tag_count`,
  agent_id: `(EXISTS (SELECT 1 FROM agents a WHERE a.session_pk = s.pk AND a.id = @agent_id)
          OR EXISTS (SELECT 1 FROM events e WHERE e.agent_id = @agent_id AND e.session_pk = s.pk))`,
  q: searchCondition(false),
  q_phrases: searchCondition(true),
  conversation_id: "s.conversation_id = @conversation_id",
  // Issue 25: no condition of @scores (domain/scores.ts scoreFilterJson) fails: for each, whether
  // the session has a score of its name passing its bounds must differ from `missing`.
  scores: `NOT EXISTS (SELECT 1 FROM json_each(@scores) f WHERE f.value ->> 'missing' = EXISTS (
          SELECT 1 FROM scores c WHERE c.session_pk = s.pk AND c.name = f.value ->> 'name'
            AND (f.value ->> 'lo' IS NULL OR (c.data_type = 'numeric' AND c.num >= f.value ->> 'lo'))
            AND (f.value ->> 'hi' IS NULL OR (c.data_type = 'numeric' AND c.num <= f.value ->> 'hi'))
            AND (f.value ->> 'label' IS NULL OR (c.data_type = 'categorical' AND c.label = f.value ->> 'label'))
            AND (f.value ->> 'bool' IS NULL OR (c.data_type = 'boolean' AND c.num = f.value ->> 'bool'))))`,
  // Retention: the last activity (start, end, every event's init and end) is before @idle_us.
  idle: `s.init_us < @idle_us AND (s.end_timestamp IS NULL OR ${usOf("s.end_timestamp")} < @idle_us)
          AND NOT EXISTS (SELECT 1 FROM events e WHERE e.session_pk = s.pk
            AND (e.init_us >= @idle_us OR e.end_us >= @idle_us))`,
} as const;
type Condition = keyof typeof CONDITIONS;

/** The sort key of each order of the list, as its index holds it (migration 007). */
const SORT_KEYS: Record<SessionSort["by"], string> = {
  start_time: "s.init_us",
  duration: "s.duration_us",
  cost: "s.cost",
  tokens: "(s.prompt_tokens + s.completion_tokens)",
  events: "s.event_count",
};

/** The sort key's value of a row, for the next page's position. */
const keyOf = (row: SessionRow, by: SessionSort["by"]) =>
  by === "start_time"
    ? row.init_us
    : by === "duration"
      ? row.duration_us
      : by === "cost"
        ? row.cost
        : by === "tokens"
          ? row.prompt_tokens + row.completion_tokens
          : row.event_count;

/** The conditions and parameters of a list query. */
function listQuery(
  projectId: string,
  filter: SessionFilter,
  after: Position | undefined,
  limit: number,
  sort: SessionSort = DEFAULT_SORT,
  expand?: Expand,
) {
  const params: Record<string, unknown> = { project_id: projectId, limit: limit + 1 };
  const conditions: Condition[] = [];
  const add = (condition: Condition, values: Record<string, unknown>) => {
    conditions.push(condition);
    Object.assign(params, values);
  };
  const plain = sort.by === "start_time" && sort.order === "desc";
  const seek: Condition = plain ? "after" : `after_${sort.order}${sort.by === "tokens" ? "_expr" : ""}`;
  if (after) add(seek, { after_us: after.init_us, after_id: after.id });
  if (filter.end_state !== undefined) add("end_state", { end_state: filter.end_state });
  if (filter.from_us !== undefined) add("from_us", { from_us: filter.from_us });
  if (filter.to_us !== undefined) add("to_us", { to_us: filter.to_us });
  const tags = [...new Set(filter.tags ?? [])];
  if (tags.length > 0) add("tags", { tags: json(tags), tag_count: tags.length });
  if (filter.agent_id !== undefined) add("agent_id", { agent_id: filter.agent_id });
  if (filter.q !== undefined) {
    const search = searchParams(filter.q, expand);
    add(search.q_phrases === undefined ? "q" : "q_phrases", search);
  }
  if (filter.conversation_id !== undefined) add("conversation_id", { conversation_id: filter.conversation_id });
  if (filter.idle_before_us !== undefined) add("idle", { idle_us: filter.idle_before_us });
  if (filter.model !== undefined) add("model", { model: filter.model });
  const extra = Object.entries(filter.extra ?? {});
  if (extra.length > 0) {
    add("extra", { extra: extraFilterJson(Object.fromEntries(extra)), extra_count: extra.length });
  }
  if (filter.scores !== undefined && filter.scores.length > 0)
    add("scores", { scores: scoreFilterJson(filter.scores) });
  if (filter.min_cost !== undefined) add("min_cost", { min_cost: filter.min_cost });
  if (filter.max_cost !== undefined) add("max_cost", { max_cost: filter.max_cost });
  if (filter.min_duration_us !== undefined) add("min_duration", { min_duration_us: filter.min_duration_us });
  if (filter.max_duration_us !== undefined) add("max_duration", { max_duration_us: filter.max_duration_us });
  if (filter.has_errors !== undefined) add(filter.has_errors ? "has_errors" : "no_errors", {});
  return { conditions, params };
}

/**
 * The list's filters as one WHERE over `sessions s` (the project's condition first), with its
 * parameters: what the analytics queries (analytics.ts) select their sessions with.
 */
export function filterWhere(projectId: string, filter: SessionFilter) {
  const { conditions, params } = listQuery(projectId, filter, undefined, 0);
  delete params.limit;
  return { where: ["s.project_id = @project_id", ...conditions.map((c) => CONDITIONS[c])].join(" AND "), params };
}

/** The statements of the sessions table, prepared once. */
function prepare(db: Db) {
  return {
    insert: db.prepare(
      `INSERT INTO sessions (id, project_id, init_timestamp, init_us, end_timestamp, end_state,
         end_state_reason, tags, host_env, extra)
       VALUES (@id, @project_id, @init_timestamp, @init_us, @end_timestamp, @end_state,
         @end_state_reason, @tags, @host_env, @extra)
       ON CONFLICT (id) DO NOTHING`,
    ),
    get: db.prepare<[string], SessionRow>("SELECT * FROM sessions WHERE id = ?"),
    update: db.prepare(
      `UPDATE sessions SET init_timestamp = @init_timestamp, init_us = @init_us,
         end_timestamp = @end_timestamp, end_state = @end_state, end_state_reason = @end_state_reason,
         tags = @tags, host_env = @host_env, extra = @extra
       WHERE pk = @pk`,
    ),
    pk: db.prepare<[string], { pk: number; project_id: string }>("SELECT pk, project_id FROM sessions WHERE id = ?"),
    agentsOf: db.prepare<[number], { id: string; name: string | null; extra: string }>(
      "SELECT id, name, extra FROM agents WHERE session_pk = ? ORDER BY id",
    ),
    eventsOf: db.prepare<[number], StoredEvent>("SELECT * FROM events WHERE session_pk = ? ORDER BY init_us, id"),
    deleteEvents: db.prepare("DELETE FROM events WHERE session_pk = ?"),
    deleteAgents: db.prepare("DELETE FROM agents WHERE session_pk = ?"),
    deleteLogs: db.prepare("DELETE FROM session_logs WHERE session_pk = ?"),
    deleteRecords: db.prepare("DELETE FROM span_records WHERE session_pk = ?"),
    deleteModels: db.prepare("DELETE FROM session_models WHERE session_pk = ?"),
    deleteScores: db.prepare("DELETE FROM scores WHERE session_pk = ?"),
    delete: db.prepare("DELETE FROM sessions WHERE pk = ?"),
    // A batch of sessions (a JSON array of pks), with what is keyed by them.
    deleteManyEvents: db.prepare("DELETE FROM events WHERE session_pk IN (SELECT value FROM json_each(?))"),
    deleteManyAgents: db.prepare("DELETE FROM agents WHERE session_pk IN (SELECT value FROM json_each(?))"),
    deleteManyLogs: db.prepare("DELETE FROM session_logs WHERE session_pk IN (SELECT value FROM json_each(?))"),
    deleteManyRecords: db.prepare("DELETE FROM span_records WHERE session_pk IN (SELECT value FROM json_each(?))"),
    deleteManyModels: db.prepare("DELETE FROM session_models WHERE session_pk IN (SELECT value FROM json_each(?))"),
    deleteManyScores: db.prepare("DELETE FROM scores WHERE session_pk IN (SELECT value FROM json_each(?))"),
    deleteMany: db.prepare("DELETE FROM sessions WHERE pk IN (SELECT value FROM json_each(?))"),
  };
}

/** A session's named fields as its row's column values. */
const columns = (session: SessionRecord) => ({
  ...session,
  tags: session.tags === null ? null : json(session.tags),
  host_env: session.host_env === null ? null : json(session.host_env),
  extra: json(session.extra),
});

/** The sessions table. Writes run inside the caller's transaction (a group commit's savepoint). */
export class SessionTable {
  readonly #db: Db;
  readonly #q: ReturnType<typeof prepare>;
  readonly #match: ReturnType<typeof searchMatches>;
  readonly #walk: ReturnType<typeof searchWalk>;
  readonly #projector: SqliteProjector;
  readonly #lists = new Map<string, Database.Statement<Record<string, unknown>, SessionRow>>();
  readonly #picks = new Map<string, Database.Statement<Record<string, unknown>, Picked>>();

  constructor(db: Db, projector: SqliteProjector) {
    this.#db = db;
    this.#q = prepare(db);
    this.#match = searchMatches(db);
    this.#walk = searchWalk(db);
    this.#projector = projector;
  }

  /** The session's row key, when the session exists in that project. */
  pkOf(projectId: string, id: string) {
    const row = this.#q.pk.get(id);
    return row && row.project_id === projectId ? row.pk : undefined;
  }

  get(projectId: string, id: string) {
    const row = this.#row(projectId, id);
    return row && sessionRecord(row);
  }

  create(projectId: string, session: NewSession) {
    const { changes, lastInsertRowid } = this.#q.insert.run(columns({ ...session, project_id: projectId }));
    if (changes === 1) {
      this.#projector.queue(Number(lastInsertRowid), CHANGE.row);
      return { created: true, projectId };
    }
    return { created: false, projectId: (this.#q.pk.get(session.id) as { project_id: string }).project_id };
  }

  /**
   * Read, merge and write, in the caller's transaction. The answer's totals are the projection's,
   * caught up first, so that they count every event acknowledged before (an update changes none).
   */
  update(projectId: string, id: string, changes: SessionChanges): SessionWithTotals | undefined {
    if (!this.#row(projectId, id)) return undefined;
    this.#projector.catchUp();
    const row = this.#row(projectId, id) as SessionRow;
    const before = sessionRecord(row);
    const { extra, ...named } = changes;
    const session: SessionRecord = { ...before, ...named, extra: { ...before.extra, ...extra } };
    this.#q.update.run({ ...columns(session), pk: row.pk });
    this.#projector.queue(row.pk, CHANGE.row);
    return { session, totals: rowTotals(row) };
  }

  list(
    projectId: string,
    filter: SessionFilter,
    after: Position | undefined,
    limit: number,
    sort: SessionSort = DEFAULT_SORT,
  ) {
    const walked = new Set<number>();
    const expand = this.#walk.expansion();
    const rows =
      filter.q !== undefined
        ? this.#searchPage(projectId, filter, after, limit, sort, walked, expand)
        : this.#rows(projectId, filter, after, limit + 1, sort);
    const page = rows.slice(0, limit);
    const last = page[page.length - 1];
    const search = filter.q;
    // A row found by the index is looked for in the index too, unless a word is common.
    const common =
      search !== undefined && page.some((row) => !walked.has(row.pk)) && this.#walk.hasCommon(search, expand);
    const matchOf = (pk: number) => {
      const match = search && this.#match(pk, search, common || walked.has(pk), expand);
      return match ? { match } : {};
    };
    return {
      items: page.map((row) => ({ session: sessionRecord(row), totals: rowTotals(row), ...matchOf(row.pk) })),
      next: rows.length > limit && last ? { init_us: keyOf(last, sort.by), id: last.id } : null,
    } satisfies Page<SessionWithTotals>;
  }

  /** Run inside a read transaction, so that the parts agree. */
  read(projectId: string, id: string, parts: { agents: boolean; events: boolean }): SessionSnapshot | undefined {
    const row = this.#row(projectId, id);
    if (!row) return undefined;
    return {
      session: sessionRecord(row),
      totals: rowTotals(row),
      agents: parts.agents ? this.#q.agentsOf.all(row.pk).map(agentRecord) : [],
      events: parts.events ? this.#q.eventsOf.all(row.pk).map(eventRecord) : [],
    };
  }

  /** The events, the agents, the logs, then the session, in the caller's transaction. */
  delete(projectId: string, id: string) {
    const row = this.#row(projectId, id);
    if (!row) return false;
    this.#projector.queue(row.pk, CHANGE.again);
    // Explicit rather than by ON DELETE CASCADE, which only works where foreign_keys is on.
    this.#q.deleteEvents.run(row.pk);
    this.#q.deleteAgents.run(row.pk);
    this.#q.deleteLogs.run(row.pk);
    this.#q.deleteRecords.run(row.pk);
    this.#q.deleteModels.run(row.pk);
    this.#q.deleteScores.run(row.pk);
    this.#q.delete.run(row.pk);
    return true;
  }

  /**
   * One batch of Store.deleteSessions, in the caller's transaction (a group commit's savepoint;
   * a dry run: any read).
   */
  deleteBatch(projectId: string, filter: SessionFilter, batch: DeleteBatch): DeletedBatch {
    // The filter and the batch's size read the totals: current first.
    this.#projector.catchUp();
    const { conditions, params } = listQuery(projectId, filter, batch.after, batch.maxSessions);
    const rows = this.#pickStatement(conditions).all(params);
    const picked = takeBatch(rows, batch);
    const last = picked.rows[picked.rows.length - 1];
    const next = picked.rows.length < rows.length && last ? { init_us: last.init_us, id: last.id } : null;
    if (batch.dryRun || picked.rows.length === 0) return { sessions: picked.rows.length, events: picked.events, next };
    for (const row of picked.rows) this.#projector.queue(row.pk, CHANGE.again);
    const pks = json(picked.rows.map((row) => row.pk));
    // Explicit rather than by ON DELETE CASCADE, which only works where foreign_keys is on.
    const events = this.#q.deleteManyEvents.run(pks).changes;
    this.#q.deleteManyAgents.run(pks);
    this.#q.deleteManyLogs.run(pks);
    this.#q.deleteManyRecords.run(pks);
    this.#q.deleteManyModels.run(pks);
    this.#q.deleteManyScores.run(pks);
    const sessions = this.#q.deleteMany.run(pks).changes;
    return { sessions, events, next };
  }

  /** The session's row, when the session exists in that project. */
  #row(projectId: string, id: string) {
    const row = this.#q.get.get(id);
    return row && row.project_id === projectId ? row : undefined;
  }

  /** The candidates of a delete batch: row key, position and event count, in list order. */
  #pickStatement(conditions: Condition[]) {
    const key = conditions.join(",");
    let statement = this.#picks.get(key);
    if (!statement) {
      const where = ["s.project_id = @project_id", ...conditions.map((c) => CONDITIONS[c])].join(" AND ");
      statement = this.#db.prepare<Record<string, unknown>, Picked>(
        `SELECT s.pk, s.init_us, s.id, s.event_count AS events
         FROM sessions s WHERE ${where} ORDER BY s.init_us DESC, s.id DESC LIMIT @limit`,
      );
      this.#picks.set(key, statement);
    }
    return statement;
  }

  /** Up to `count` rows of the list from `after`. */
  #rows(
    projectId: string,
    filter: SessionFilter,
    after: Position | undefined,
    count: number,
    sort: SessionSort,
    expand?: Expand,
  ) {
    const { conditions, params } = listQuery(projectId, filter, after, count - 1, sort, expand);
    return this.#listStatement(conditions, sort).all(params);
  }

  /**
   * The list's rows for a `q` (search.ts searchWalk). A query whose words are not common is read
   * from the index. Otherwise the list without `q` is walked chunk by chunk (100 sessions, then
   * twice the last), each chunk kept to its sessions that match, checked in their stored rows;
   * after WALKED_SESSIONS sessions or WALKED_EVENTS event bodies, the rest of the page comes from
   * the index, after the last session decided: the same rows as the plain query, found without
   * reading every match of a common word. `walked` gets the pks of the rows found by walking.
   */
  #searchPage(
    projectId: string,
    filter: SessionFilter,
    after: Position | undefined,
    limit: number,
    sort: SessionSort,
    walked: Set<number>,
    expand: Expand,
  ) {
    const { q, ...others } = filter;
    if (q === undefined || !this.#walk.isCommon(q, expand)) {
      return this.#rows(projectId, filter, after, limit + 1, sort, expand);
    }
    const rows: SessionRow[] = [];
    const budget: Walk = { events: WALKED_EVENTS, probes: WALKED_PROBES, expand };
    const position = (row: SessionRow) => ({ init_us: keyOf(row, sort.by), id: row.id });
    let from = after;
    let read = 0;
    // The rest of the page from the index, after the last session decided.
    const rest = () => [...rows, ...this.#rows(projectId, filter, from, limit + 1 - rows.length, sort, expand)];
    for (let chunk = 100; rows.length <= limit; chunk *= 2) {
      if (read >= WALKED_SESSIONS) return rest();
      const candidates = this.#rows(projectId, others, from, chunk, sort);
      read += candidates.length;
      const { matched, decided } = this.#walk.matching(
        candidates.map((row) => row.pk),
        q,
        budget,
      );
      for (const row of candidates.slice(0, decided)) {
        if (!matched.has(row.pk) || rows.length > limit) continue;
        rows.push(row);
        walked.add(row.pk);
      }
      const last = candidates[decided - 1];
      if (last) from = position(last);
      if (decided < candidates.length) {
        // Out of bodies to read: the undecided sessions, and the rest, from the index.
        if (rows.length > limit) break;
        return rest();
      }
      if (candidates.length < chunk || !last) break;
    }
    return rows;
  }

  #listStatement(conditions: Condition[], sort: SessionSort) {
    const key = `${sort.by},${sort.order}:${conditions.join(",")}`;
    let statement = this.#lists.get(key);
    if (!statement) {
      const sortKey = SORT_KEYS[sort.by];
      const where = ["s.project_id = @project_id", ...conditions.map((c) => CONDITIONS[c].replaceAll("KEY", sortKey))];
      const order = sort.order === "desc" ? "DESC" : "ASC";
      statement = this.#db.prepare<Record<string, unknown>, SessionRow>(
        `SELECT s.* FROM sessions s WHERE ${where.join(" AND ")}
         ORDER BY ${sortKey} ${order}, s.id ${order} LIMIT @limit`,
      );
      this.#lists.set(key, statement);
    }
    return statement;
  }
}
