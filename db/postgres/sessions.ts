/** Sessions on PostgreSQL: create, read with totals, update under a row lock, list, delete. */
import type pg from "pg";
import { extraFilterJson } from "../../domain/extra.ts";
import { scoreFilterJson } from "../../domain/scores.ts";
import type { SearchMatch, SearchQuery } from "../../domain/search.ts";
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
  TOTALS_COLUMNS,
  takeBatch,
} from "../rows.ts";
import { CHANGE } from "./projector.ts";
import { searchCondition, searchMatch } from "./search.ts";

type Queryable = pg.Pool | pg.ClientBase;

/** A session row as PostgreSQL answers it: tags is an array column, the rest as on SQLite. */
type PgSessionRow = Omit<SessionRow, "tags"> & { tags: string[] | null };

const COLUMNS = [
  "pk",
  "id",
  "project_id",
  "init_timestamp",
  "init_us",
  "end_timestamp",
  "end_state",
  "end_state_reason",
  "tags",
  "host_env",
  "extra",
  "root_rank",
  "conversation_id",
  ...TOTALS_COLUMNS,
];
const SESSION_COLUMNS = COLUMNS.join(", ");
const LIST_COLUMNS = COLUMNS.map((column) => `s.${column}`).join(", ");

/** The record of a row (db/rows.ts sessionRecord, with the tags array as it is). */
export const recordOf = (row: PgSessionRow): SessionRecord => ({
  ...sessionRecord({ ...row, tags: null }),
  tags: row.tags,
});

/** The session's row (locked for update when asked), when it exists in that project. */
export async function sessionRow(db: Queryable, projectId: string, id: string, lock = "") {
  const { rows } = await db.query<PgSessionRow>(`SELECT ${SESSION_COLUMNS} FROM sessions WHERE id = $1 ${lock}`, [id]);
  const row = rows[0];
  return row && row.project_id === projectId ? row : undefined;
}

/** The session's row key, when the session exists in that project. */
export async function pkOf(db: Queryable, projectId: string, id: string) {
  const { rows } = await db.query<{ pk: number; project_id: string }>(
    "SELECT pk, project_id FROM sessions WHERE id = $1",
    [id],
  );
  const row = rows[0];
  return row && row.project_id === projectId ? row.pk : undefined;
}

/** A session's named fields as its row's column values, in the order of the INSERT and UPDATE below. */
const values = (s: SessionRecord) => [
  s.init_timestamp,
  s.init_us,
  s.end_timestamp,
  s.end_state,
  s.end_state_reason,
  s.tags,
  s.host_env === null ? null : json(s.host_env),
  json(s.extra),
];

/** A statement's rows of `sessions` (RETURNING pk) queued for the projector as `kind` (projector.ts). */
export const queued = (statement: string, kind: number) => `WITH changed AS (${statement} RETURNING pk), queued AS (
    INSERT INTO projection_queue (session_pk, kind) SELECT pk, ${kind} FROM changed ORDER BY pk
  )
  SELECT pk FROM changed`;

export async function createSession(tx: Queryable, projectId: string, session: NewSession) {
  const { rowCount } = await tx.query(
    queued(
      `INSERT INTO sessions (init_timestamp, init_us, end_timestamp, end_state, end_state_reason, tags, host_env,
         extra, id, project_id)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10) ON CONFLICT (id) DO NOTHING`,
      CHANGE.row,
    ),
    [...values({ ...session, project_id: projectId }), session.id, projectId],
  );
  if (rowCount === 1) return { created: true, projectId };
  const { rows } = await tx.query<{ project_id: string }>("SELECT project_id FROM sessions WHERE id = $1", [
    session.id,
  ]);
  return { created: false, projectId: (rows[0] as { project_id: string }).project_id };
}

/**
 * Read (with a row lock: two nodes updating one session wait for each other), merge and write,
 * in the caller's transaction. The answer's totals are the projection's: the store caught up
 * before the call (an update changes none).
 */
export async function updateSession(
  tx: pg.ClientBase,
  projectId: string,
  id: string,
  changes: SessionChanges,
): Promise<SessionWithTotals | undefined> {
  const row = await sessionRow(tx, projectId, id, "FOR UPDATE");
  if (!row) return undefined;
  const before = recordOf(row);
  const { extra, ...named } = changes;
  const session: SessionRecord = { ...before, ...named, extra: { ...before.extra, ...extra } };
  await tx.query(
    queued(
      `UPDATE sessions SET init_timestamp = $1, init_us = $2, end_timestamp = $3, end_state = $4,
         end_state_reason = $5, tags = $6, host_env = $7, extra = $8
       WHERE pk = $9`,
      CHANGE.row,
    ),
    [...values(session), row.pk],
  );
  return { session, totals: rowTotals(row) };
}

/**
 * The list's conditions: only the filters given are in its SQL, so the planner can pick the
 * index that fits (the end_state one, the GIN index of tags, the time one for a range).
 */
export async function listSessions(
  db: Queryable,
  projectId: string,
  filter: SessionFilter,
  after: Position | undefined,
  limit: number,
  sort: SessionSort = DEFAULT_SORT,
): Promise<Page<SessionWithTotals>> {
  const plain = sort.by === "start_time" && sort.order === "desc";
  const { params, where, p } = conditions(projectId, filter, plain ? after : undefined);
  const key = SORT_KEYS[sort.by];
  if (after && !plain) {
    where.push(`(${key}, s.id) ${sort.order === "desc" ? "<" : ">"} (${p(after.init_us)}, ${p(after.id)})`);
  }
  const order = sort.order === "desc" ? "DESC" : "ASC";
  const { rows } = await db.query<PgSessionRow>(
    `SELECT ${LIST_COLUMNS} FROM sessions s WHERE ${where.join(" AND ")}
     ORDER BY ${key} ${order}, s.id ${order} LIMIT ${p(limit + 1)}`,
    params,
  );
  const page = rows.slice(0, limit);
  const last = page[page.length - 1];
  const search = filter.q;
  const matches: (SearchMatch | undefined)[] = [];
  // One at a time: on a pool, a page's lookups must not take every connection.
  for (const row of search ? page : []) matches.push(await searchMatch(db, row.pk, search as SearchQuery));
  return {
    items: page.map((row, i) => {
      const match = matches[i];
      return { session: recordOf(row), totals: rowTotals(row), ...(match ? { match } : {}) };
    }),
    next: rows.length > limit && last ? { init_us: keyOf(last, sort.by), id: last.id } : null,
  };
}

/** The sort key of each order of the list, as its index holds it (migration 005). */
const SORT_KEYS: Record<SessionSort["by"], string> = {
  start_time: "s.init_us",
  duration: "s.duration_us",
  cost: "s.cost",
  tokens: "(s.prompt_tokens + s.completion_tokens)",
  events: "s.event_count",
};

/** The sort key's value of a row, for the next page's position. */
const keyOf = (row: PgSessionRow, by: SessionSort["by"]) =>
  by === "start_time"
    ? row.init_us
    : by === "duration"
      ? row.duration_us
      : by === "cost"
        ? row.cost
        : by === "tokens"
          ? row.prompt_tokens + row.completion_tokens
          : row.event_count;

/** A stored timestamp (text, always with its zone) as microseconds since the epoch, exactly. */
const usOf = (column: string) => `(extract(epoch FROM ${column}::timestamptz) * 1000000)::int8`;

/** The WHERE of a list query (and a delete batch's): only the filters given, with their parameters. */
export function conditions(projectId: string, filter: SessionFilter, after: Position | undefined) {
  const params: unknown[] = [projectId];
  const p = (value: unknown) => `$${params.push(value)}`;
  const where = ["s.project_id = $1"];
  if (after) where.push(`(s.init_us, s.id) < (${p(after.init_us)}, ${p(after.id)})`);
  if (filter.end_state !== undefined) where.push(`s.end_state = ${p(filter.end_state)}`);
  if (filter.from_us !== undefined) where.push(`s.init_us >= ${p(filter.from_us)}`);
  if (filter.to_us !== undefined) where.push(`s.init_us < ${p(filter.to_us)}`);
  const tags = [...new Set(filter.tags ?? [])];
  if (tags.length > 0) where.push(`s.tags @> ${p(tags)}::text[]`);
  if (filter.agent_id !== undefined) {
    const agent = p(filter.agent_id);
    where.push(`(EXISTS (SELECT 1 FROM agents a WHERE a.session_pk = s.pk AND a.id = ${agent})
      OR EXISTS (SELECT 1 FROM events e WHERE e.agent_id = ${agent} AND e.session_pk = s.pk))`);
  }
  if (filter.q !== undefined) where.push(searchCondition(filter.q, p));
  if (filter.conversation_id !== undefined) where.push(`s.conversation_id = ${p(filter.conversation_id)}`);
  if (filter.model !== undefined) {
    where.push(`EXISTS (SELECT 1 FROM session_models m WHERE m.model = ${p(filter.model)} AND m.session_pk = s.pk)`);
  }
  const extra = Object.entries(filter.extra ?? {});
  if (extra.length > 0) {
    // Each field (domain/extra.ts: key -> [text, number or null]) names a top-level field of the
    // session's extra: `->` and `->>` with a text operand take it as a key, never a path (decision
    // 031). A string matches the text, a number the number (by value: numeric reads both texts,
    // each the shortest of its double, exactly), true or false the text; null, objects, arrays nothing.
    where.push(`(SELECT count(*) FROM json_each(${p(extraFilterJson(Object.fromEntries(extra)))}::json) w
      WHERE CASE json_typeof(s.extra::json -> w.key)
        WHEN 'string' THEN s.extra::json ->> w.key = w.value ->> 0
        WHEN 'number' THEN (s.extra::json ->> w.key)::numeric = (w.value ->> 1)::numeric
        WHEN 'boolean' THEN s.extra::json ->> w.key = w.value ->> 0 END) = ${p(extra.length)}`);
  }
  if (filter.scores !== undefined && filter.scores.length > 0) {
    // Issue 25: no condition fails (domain/scores.ts scoreFilterJson): for each, whether the
    // session has a score of its name passing its bounds must differ from `missing`.
    where.push(`NOT EXISTS (SELECT 1 FROM json_array_elements(${p(scoreFilterJson(filter.scores))}::json) f
      WHERE (f ->> 'missing')::int = (EXISTS (SELECT 1 FROM scores c WHERE c.session_pk = s.pk
        AND c.name = f ->> 'name'
        AND (f ->> 'lo' IS NULL OR (c.data_type = 'numeric' AND c.num >= (f ->> 'lo')::float8))
        AND (f ->> 'hi' IS NULL OR (c.data_type = 'numeric' AND c.num <= (f ->> 'hi')::float8))
        AND (f ->> 'label' IS NULL OR (c.data_type = 'categorical' AND c.label = f ->> 'label'))
        AND (f ->> 'bool' IS NULL OR (c.data_type = 'boolean' AND c.num = (f ->> 'bool')::float8))))::int)`);
  }
  if (filter.min_cost !== undefined) where.push(`round(s.cost::numeric, 12) >= ${p(filter.min_cost)}`);
  if (filter.max_cost !== undefined) where.push(`round(s.cost::numeric, 12) <= ${p(filter.max_cost)}`);
  if (filter.min_duration_us !== undefined) where.push(`s.duration_us >= ${p(filter.min_duration_us)}`);
  if (filter.max_duration_us !== undefined) where.push(`s.duration_us <= ${p(filter.max_duration_us)}`);
  if (filter.has_errors !== undefined) where.push(filter.has_errors ? "s.error_count > 0" : "s.error_count = 0");
  if (filter.idle_before_us !== undefined) {
    // Retention: the last activity (start, end, every event's init and end) is before it.
    const idle = p(filter.idle_before_us);
    where.push(`s.init_us < ${idle} AND (s.end_timestamp IS NULL OR ${usOf("s.end_timestamp")} < ${idle})
      AND NOT EXISTS (SELECT 1 FROM events e WHERE e.session_pk = s.pk AND (e.init_us >= ${idle} OR e.end_us >= ${idle}))`);
  }
  return { params, where, p };
}

/**
 * One batch of Store.deleteSessions in the caller's transaction (a dry run: any snapshot), the
 * projections caught up before (the filter reads the totals). The candidates are locked (FOR
 * UPDATE) so that another node's write to one of them waits, and the filter holds for what is
 * deleted; their events, agents, logs and span records go by ON DELETE CASCADE, the events
 * counted first; the projector takes them out of the projections.
 */
export async function deleteBatch(
  tx: Queryable,
  projectId: string,
  filter: SessionFilter,
  batch: DeleteBatch,
): Promise<DeletedBatch> {
  const { params, where, p } = conditions(projectId, filter, batch.after);
  const { rows } = await tx.query<Picked>(
    `SELECT s.pk, s.init_us, s.id, s.event_count AS events
     FROM sessions s WHERE ${where.join(" AND ")}
     ORDER BY s.init_us DESC, s.id DESC LIMIT ${p(batch.maxSessions + 1)} ${batch.dryRun ? "" : "FOR UPDATE OF s"}`,
    params,
  );
  const picked = takeBatch(rows, batch);
  const last = picked.rows[picked.rows.length - 1];
  const next = picked.rows.length < rows.length && last ? { init_us: last.init_us, id: last.id } : null;
  if (batch.dryRun || picked.rows.length === 0) return { sessions: picked.rows.length, events: picked.events, next };
  const pks = picked.rows.map((row) => row.pk);
  const { rows: counted } = await tx.query<{ events: number }>(
    "SELECT count(*) AS events FROM events WHERE session_pk = ANY($1::int8[])",
    [pks],
  );
  const { rowCount } = await tx.query(queued("DELETE FROM sessions WHERE pk = ANY($1::int8[])", CHANGE.again), [pks]);
  return { sessions: rowCount ?? 0, events: counted[0]?.events ?? 0, next };
}

/** Run inside a read transaction (REPEATABLE READ), so that the parts agree. */
export async function readSession(
  tx: pg.ClientBase,
  projectId: string,
  id: string,
  parts: { agents: boolean; events: boolean },
): Promise<SessionSnapshot | undefined> {
  const row = await sessionRow(tx, projectId, id);
  if (!row) return undefined;
  const agents = parts.agents
    ? (
        await tx.query<{ id: string; name: string | null; extra: string }>(
          "SELECT id, name, extra FROM agents WHERE session_pk = $1 ORDER BY id",
          [row.pk],
        )
      ).rows.map(agentRecord)
    : [];
  const events = parts.events
    ? (
        await tx.query<StoredEvent>("SELECT * FROM events WHERE session_pk = $1 ORDER BY init_us, id", [row.pk])
      ).rows.map(eventRecord)
    : [];
  return { session: recordOf(row), totals: rowTotals(row), agents, events };
}

/** The session and, by ON DELETE CASCADE, its events, agents, logs and span records. */
export async function deleteSession(tx: Queryable, projectId: string, id: string) {
  const { rowCount } = await tx.query(queued("DELETE FROM sessions WHERE id = $1 AND project_id = $2", CHANGE.again), [
    id,
    projectId,
  ]);
  return rowCount === 1;
}
