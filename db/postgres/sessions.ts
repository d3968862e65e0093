/** Sessions on PostgreSQL: create, read with totals, update under a row lock, list, delete. */
import type pg from "pg";
import type { SearchMatch, SearchQuery } from "../../domain/search.ts";
import type {
  DeleteBatch,
  DeletedBatch,
  NewSession,
  Page,
  Position,
  SessionChanges,
  SessionFilter,
  SessionRecord,
  SessionSnapshot,
  SessionTotals,
  SessionWithTotals,
} from "../../domain/types.ts";
import {
  agentRecord,
  eventRecord,
  json,
  NO_TOTALS,
  type Picked,
  type SessionRow,
  type StoredEvent,
  sessionRecord,
  type TotalsRow,
  takeBatch,
  totals,
} from "../rows.ts";
import { searchCondition, searchMatch, tsQuery } from "./search.ts";

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
];
const SESSION_COLUMNS = COLUMNS.join(", ");
const LIST_COLUMNS = COLUMNS.map((column) => `s.${column}`).join(", ");

/** The record of a row (db/rows.ts sessionRecord, with the tags array as it is). */
export const recordOf = (row: PgSessionRow): SessionRecord => ({
  ...sessionRecord({ ...row, tags: null }),
  tags: row.tags,
});

/**
 * Every session's totals, for one session or a page of them, in one statement, so token_cost
 * (S6), a session's stats and a list row's stats are the same sums (as on SQLite).
 */
const TOTALS = `SELECT session_pk AS pk, count(*)::int AS events,
    count(*) FILTER (WHERE type = 'llm')::int AS llm, count(*) FILTER (WHERE type = 'tool')::int AS tool,
    count(*) FILTER (WHERE type = 'action')::int AS action, count(*) FILTER (WHERE type = 'error')::int AS error,
    coalesce(sum(prompt_tokens) FILTER (WHERE type = 'llm'), 0)::float8 AS prompt_tokens,
    coalesce(sum(completion_tokens) FILTER (WHERE type = 'llm'), 0)::float8 AS completion_tokens,
    coalesce(sum(cache_read_tokens) FILTER (WHERE type = 'llm'), 0)::float8 AS cache_read_tokens,
    coalesce(sum(cache_creation_tokens) FILTER (WHERE type = 'llm'), 0)::float8 AS cache_creation_tokens,
    coalesce(sum(reasoning_tokens) FILTER (WHERE type = 'llm'), 0)::float8 AS reasoning_tokens,
    coalesce(sum(cost) FILTER (WHERE type = 'llm'), 0)::float8 AS cost,
    min(init_us) AS first_us, max(greatest(init_us, coalesce(end_us, init_us))) AS last_us
  FROM events WHERE session_pk = ANY($1::int8[]) GROUP BY session_pk`;

/** The totals of these sessions, by row key. */
export async function totalsOf(db: Queryable, pks: number[]): Promise<Map<number, SessionTotals>> {
  if (pks.length === 0) return new Map();
  const { rows } = await db.query<TotalsRow>(TOTALS, [pks]);
  return new Map(rows.map((row) => [row.pk, totals(row)]));
}

async function totalsOfOne(db: Queryable, pk: number) {
  return (await totalsOf(db, [pk])).get(pk) ?? NO_TOTALS;
}

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

export async function createSession(tx: Queryable, projectId: string, session: NewSession) {
  const { rowCount } = await tx.query(
    `INSERT INTO sessions (init_timestamp, init_us, end_timestamp, end_state, end_state_reason, tags, host_env,
       extra, id, project_id)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10) ON CONFLICT (id) DO NOTHING`,
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
 * in the caller's transaction.
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
    `UPDATE sessions SET init_timestamp = $1, init_us = $2, end_timestamp = $3, end_state = $4,
       end_state_reason = $5, tags = $6, host_env = $7, extra = $8
     WHERE pk = $9`,
    [...values(session), row.pk],
  );
  return { session, totals: await totalsOfOne(tx, row.pk) };
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
): Promise<Page<SessionWithTotals>> {
  const { params, where, p } = conditions(projectId, filter, after);
  const { rows } = await db.query<PgSessionRow>(
    `SELECT ${LIST_COLUMNS} FROM sessions s WHERE ${where.join(" AND ")}
     ORDER BY s.init_us DESC, s.id DESC LIMIT ${p(limit + 1)}`,
    params,
  );
  const page = rows.slice(0, limit);
  const last = page[page.length - 1];
  const byPk = await totalsOf(
    db,
    page.map((row) => row.pk),
  );
  const search = filter.q;
  const matches: (SearchMatch | undefined)[] = [];
  // One at a time: on a pool, a page's lookups must not take every connection.
  for (const row of search ? page : []) matches.push(await searchMatch(db, row.pk, search as SearchQuery));
  return {
    items: page.map((row, i) => {
      const match = matches[i];
      return { session: recordOf(row), totals: byPk.get(row.pk) ?? NO_TOTALS, ...(match ? { match } : {}) };
    }),
    next: rows.length > limit && last ? { init_us: last.init_us, id: last.id } : null,
  };
}

/** A stored timestamp (text, always with its zone) as microseconds since the epoch, exactly. */
const usOf = (column: string) => `(extract(epoch FROM ${column}::timestamptz) * 1000000)::int8`;

/** The WHERE of a list query (and a delete batch's): only the filters given, with their parameters. */
function conditions(projectId: string, filter: SessionFilter, after: Position | undefined) {
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
  if (filter.q !== undefined) where.push(searchCondition(p(tsQuery(filter.q))));
  if (filter.conversation_id !== undefined) where.push(`s.conversation_id = ${p(filter.conversation_id)}`);
  if (filter.idle_before_us !== undefined) {
    // Retention: the last activity (start, end, every event's init and end) is before it.
    const idle = p(filter.idle_before_us);
    where.push(`s.init_us < ${idle} AND (s.end_timestamp IS NULL OR ${usOf("s.end_timestamp")} < ${idle})
      AND NOT EXISTS (SELECT 1 FROM events e WHERE e.session_pk = s.pk AND (e.init_us >= ${idle} OR e.end_us >= ${idle}))`);
  }
  return { params, where, p };
}

/**
 * One batch of Store.deleteSessions in the caller's transaction (a dry run: any snapshot). The
 * candidates are locked (FOR UPDATE) so that another node's write to one of them waits, and the
 * filter holds for what is deleted; their events, agents, logs and span records go by ON DELETE
 * CASCADE, the events counted first.
 */
export async function deleteBatch(
  tx: Queryable,
  projectId: string,
  filter: SessionFilter,
  batch: DeleteBatch,
): Promise<DeletedBatch> {
  const { params, where, p } = conditions(projectId, filter, batch.after);
  const { rows } = await tx.query<Picked>(
    `SELECT s.pk, s.init_us, s.id, (SELECT count(*) FROM events e WHERE e.session_pk = s.pk) AS events
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
  const { rowCount } = await tx.query("DELETE FROM sessions WHERE pk = ANY($1::int8[])", [pks]);
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
  return { session: recordOf(row), totals: await totalsOfOne(tx, row.pk), agents, events };
}

/** The session and, by ON DELETE CASCADE, its events, agents, logs and span records. */
export async function deleteSession(tx: Queryable, projectId: string, id: string) {
  const { rowCount } = await tx.query("DELETE FROM sessions WHERE id = $1 AND project_id = $2", [id, projectId]);
  return rowCount === 1;
}
