/**
 * The analytics queries of both adapters (db/sqlite/analytics.ts, db/postgres/analytics.ts;
 * docs/decisions/024-analytics.md): one SQL text per question, with the few spellings that
 * differ between the engines in a `Dialect`, so that SQLite and PostgreSQL count, sum and rank
 * the same rows the same way. Placeholders are `@a_name`; the filter's own conditions (the
 * session list's, over `sessions s`) come from the adapter. Only the adapters import this file.
 *
 * Percentiles are nearest-rank, computed with window functions that both engines have: the rows
 * of a group sorted by duration, numbered, and the value at rank ceil(n·p/100), in integers
 * ((n·p + 99) / 100), as domain/analytics.ts percentileRank says.
 */
import { type BreakdownBy, EMPTY, type Group, type Measures, sumGroups } from "../domain/analytics.ts";

export interface Dialect {
  /** The larger of two integer expressions. */
  greatest(a: string, b: string): string;
  /** A text column holding a stored timestamp (or NULL), as microseconds since the epoch. */
  usOf(column: string): string;
  /** A field of a JSON text column as text (NULL when absent), comparable with event ids. */
  bodyText(column: string, field: string): string;
  /** Rows (pk, key): every distinct tag of each session of `fs0`. */
  tagRows: string;
  /** Rows (i, lo, hi) of the series' ranges, from @a_lo and @a_hi (arrays of the same length). */
  ranges: string;
  /** `expr` is one of @a_keys (an array of strings). */
  inKeys(expr: string): string;
  /** A text expression in the collation of ids (PostgreSQL: "C"), so that texts of two columns compare. */
  text(expr: string): string;
}

/** A query: its SQL with @a_ placeholders, and their values (arrays as arrays: the adapter encodes them). */
export interface Query {
  sql: string;
  params: Record<string, unknown>;
}

/** The per-session measures of the sessions in `fs` (g, pk, init_us, end_state, end_timestamp), as `m`. */
function sessionMeasures(d: Dialect) {
  return `t AS (
    SELECT session_pk, count(*) AS events, count(*) FILTER (WHERE type = 'error') AS errors,
      sum(prompt_tokens) FILTER (WHERE type = 'llm') AS prompt,
      sum(completion_tokens) FILTER (WHERE type = 'llm') AS completion,
      sum(cost) FILTER (WHERE type = 'llm') AS cost,
      max(${d.greatest("init_us", "coalesce(end_us, init_us)")}) AS last_us
    FROM events WHERE session_pk IN (SELECT pk FROM fs) GROUP BY session_pk
  ),
  m AS (
    SELECT fs.g, fs.pk, fs.end_state, coalesce(t.events, 0) AS events, coalesce(t.errors, 0) AS errors,
      coalesce(t.prompt, 0) AS prompt, coalesce(t.completion, 0) AS completion, coalesce(t.cost, 0) AS cost,
      ${d.greatest("0", `coalesce(${d.usOf("fs.end_timestamp")}, t.last_us, fs.init_us) - fs.init_us`)} AS dur
    FROM fs LEFT JOIN t ON t.session_pk = fs.pk
  )`;
}

/** The event groupings: which events, and their key. */
const EVENT_KEYS: Partial<Record<BreakdownBy, (d: Dialect) => { key: string; where: string }>> = {
  model: () => ({ key: "e.model", where: "e.type = 'llm'" }),
  type: () => ({ key: "e.type", where: "1 = 1" }),
  tool: (d) => ({ key: d.bodyText("e.body", "name"), where: "e.type = 'tool'" }),
};

/** The per-event measures of the chosen events of the sessions in `fs`, as `m`. */
function eventMeasures(d: Dialect, by: BreakdownBy) {
  const { key, where } = (EVENT_KEYS[by] as (d: Dialect) => { key: string; where: string })(d);
  const trigger = `coalesce(${d.bodyText("r.body", "trigger_event_id")}, r.parent_id)`;
  return `ev AS (
    SELECT e.session_pk AS pk, fs.end_state, e.id, ${key} AS g, e.type, e.prompt_tokens, e.completion_tokens,
      e.cost, e.init_us, e.end_us
    FROM fs JOIN events e ON e.session_pk = fs.pk WHERE ${where}
  ),
  tr AS (
    SELECT r.session_pk AS pk, ${trigger} AS tid, count(*) AS n
    FROM events r WHERE r.type = 'error' AND r.session_pk IN (SELECT pk FROM fs)
    GROUP BY r.session_pk, ${trigger}
  ),
  m AS (
    SELECT ev.g, ev.pk, ev.end_state, 1 AS events, coalesce(tr.n, 0) AS errors,
      CASE WHEN ev.type = 'llm' THEN ev.prompt_tokens END AS prompt,
      CASE WHEN ev.type = 'llm' THEN ev.completion_tokens END AS completion,
      CASE WHEN ev.type = 'llm' THEN ev.cost END AS cost,
      CASE WHEN ev.end_us IS NULL THEN NULL ELSE ${d.greatest("0", "ev.end_us - ev.init_us")} END AS dur
    FROM ev LEFT JOIN tr ON tr.pk = ev.pk AND tr.tid = ev.id
  )`;
}

/**
 * The measures of `source` (rows g, pk, end_state, events, errors, prompt, completion, cost, dur)
 * by g. A session may be several rows of one group (its events): `distinct` counts it once.
 */
function aggregate(source: string, distinct: boolean) {
  const sessions = distinct ? "count(DISTINCT pk)" : "count(*)";
  const failures = distinct
    ? "count(DISTINCT CASE WHEN end_state = 'Fail' THEN pk END)"
    : "count(*) FILTER (WHERE end_state = 'Fail')";
  const rank = (p: number) => `min(dur) FILTER (WHERE dur IS NOT NULL AND rn = (n * ${p} + 99) / 100)`;
  return `r AS (
    SELECT ${source}.*, row_number() OVER (PARTITION BY g, dur IS NULL ORDER BY dur) AS rn,
      count(dur) OVER (PARTITION BY g) AS n
    FROM ${source}
  )
  SELECT g, ${sessions} AS sessions, ${failures} AS failures, sum(events) AS events, sum(errors) AS error_events,
    sum(prompt) AS prompt_tokens, sum(completion) AS completion_tokens, sum(cost) AS cost,
    ${rank(50)} AS p50_us, ${rank(95)} AS p95_us, ${rank(99)} AS p99_us
  FROM r GROUP BY g`;
}

/** The columns every filtered session row carries. */
const SESSION = "s.pk, s.init_us, s.end_state, s.end_timestamp";

/**
 * The time series: the measures of the sessions matching `where` (over `sessions s`, the
 * project's condition included) whose init_us is in [lo, hi) of each range, by the range's index
 * (g). Each range is an index range scan of (project_id, init_us).
 */
export function seriesQuery(d: Dialect, where: string, ranges: { lo: number; hi: number }[]): Query {
  return {
    sql: `WITH b AS (${d.ranges}),
    fs AS (SELECT b.i AS g, ${SESSION} FROM b JOIN sessions s ON s.init_us >= b.lo AND s.init_us < b.hi WHERE ${where}),
    ${sessionMeasures(d)},
    ${aggregate("m", false)}`,
    params: { a_lo: ranges.map((r) => r.lo), a_hi: ranges.map((r) => r.hi) },
  };
}

/** The session groupings' key of each filtered session (a session may have several: tags, agents). */
function sessionGroups(d: Dialect, by: BreakdownBy) {
  if (by === "end_state") return `fs AS (SELECT s.end_state AS g, s.* FROM fs0 s)`;
  const rows =
    by === "tag"
      ? d.tagRows
      : `SELECT a.session_pk AS pk, ${d.text("a.id")} AS key FROM agents a WHERE a.session_pk IN (SELECT pk FROM fs0)
         UNION SELECT e.session_pk AS pk, ${d.text("e.agent_id")} AS key FROM events e
           WHERE e.agent_id IS NOT NULL AND e.session_pk IN (SELECT pk FROM fs0)`;
  return `k AS (${rows}),
    fs AS (SELECT k.key AS g, s.* FROM fs0 s LEFT JOIN k ON k.pk = s.pk)`;
}

/**
 * A breakdown: the measures of every group of `by`, over the sessions matching `where`. With
 * `rest`, one row only (g = 0): the groups not among `rest.keys` (and the null group unless
 * `rest.topNull`) taken together, for the percentiles of `other`.
 */
export function breakdownQuery(
  d: Dialect,
  where: string,
  by: BreakdownBy,
  rest?: { keys: string[]; topNull: boolean },
): Query {
  const event = EVENT_KEYS[by] !== undefined;
  const measured = event
    ? `fs AS (SELECT ${SESSION} FROM sessions s WHERE ${where}), ${eventMeasures(d, by)}`
    : `fs0 AS (SELECT ${SESSION} FROM sessions s WHERE ${where}), ${sessionGroups(d, by)}, ${sessionMeasures(d)}`;
  if (rest === undefined) return { sql: `WITH ${measured}, ${aggregate("m", true)}`, params: {} };
  const others = `o AS (SELECT 0 AS g, m.pk, m.end_state, m.events, m.errors, m.prompt, m.completion, m.cost, m.dur
    FROM m WHERE (m.g IS NULL AND @a_top_null = 0) OR (m.g IS NOT NULL AND NOT ${d.inKeys("m.g")}))`;
  return {
    sql: `WITH ${measured}, ${others}, ${aggregate("o", true)}`,
    params: { a_keys: rest.keys, a_top_null: rest.topNull ? 1 : 0 },
  };
}

/** A row of an aggregate. */
export interface MeasureRow {
  g: unknown;
  sessions: number;
  failures: number;
  events: number | null;
  error_events: number | null;
  prompt_tokens: number | null;
  completion_tokens: number | null;
  cost: number | null;
  p50_us: number | null;
  p95_us: number | null;
  p99_us: number | null;
}

/** A row's measures, its sums of nothing as 0. */
export const measures = (row: MeasureRow): Measures => ({
  sessions: Number(row.sessions),
  failures: Number(row.failures),
  events: Number(row.events ?? 0),
  error_events: Number(row.error_events ?? 0),
  prompt_tokens: Number(row.prompt_tokens ?? 0),
  completion_tokens: Number(row.completion_tokens ?? 0),
  cost: Number(row.cost ?? 0),
  p50_us: row.p50_us === null ? null : Number(row.p50_us),
  p95_us: row.p95_us === null ? null : Number(row.p95_us),
  p99_us: row.p99_us === null ? null : Number(row.p99_us),
});

/** A row of a breakdown as a group: its key as text (or null). */
export const group = (row: MeasureRow): Group => ({ key: row.g === null ? null : String(row.g), ...measures(row) });

/** The series' rows in range order, a range without sessions as EMPTY-like zeros. */
export function seriesPoints(rows: MeasureRow[], count: number, empty: Measures): Measures[] {
  const points: Measures[] = Array.from({ length: count }, () => empty);
  for (const row of rows) points[Number(row.g)] = measures(row);
  return points;
}

/** `other`: the sums of the groups past the top, with the percentiles of their rows together (`row`). */
export function otherOf(rest: Group[], row: MeasureRow | undefined): Measures {
  const together = row ? measures(row) : EMPTY;
  return { ...sumGroups(rest), p50_us: together.p50_us, p95_us: together.p95_us, p99_us: together.p99_us };
}
