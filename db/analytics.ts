/**
 * The analytics queries of both adapters (db/sqlite/analytics.ts, db/postgres/analytics.ts;
 * docs/decisions/024-analytics.md): one SQL text per question, with the few spellings that
 * differ between the engines in a `Dialect`, so that SQLite and PostgreSQL count, sum and rank
 * the same rows the same way. Placeholders are `@a_name`; the filter's own conditions (the
 * session list's, over `sessions s`) come from the adapter. Only the adapters import this file.
 *
 * Percentiles are nearest-rank: the durations of a group's rows are read (a second query over the
 * same rows, in the same snapshot), sorted, and the value at rank ceil(n·p/100) taken, as
 * domain/analytics.ts percentileRank says: the same code for both engines. (Window functions
 * computing it in SQL measured 10 times slower on SQLite than the sums.)
 */
import {
  type Breakdown,
  type BreakdownBy,
  type BreakdownRequest,
  EMPTY,
  type Group,
  type Measures,
  percentileRank,
  rankGroups,
  sumGroups,
} from "../domain/analytics.ts";

export interface Dialect {
  /** The larger of two integer expressions. */
  greatest(a: string, b: string): string;
  /** A field of a JSON text column as text (NULL when absent), comparable with event ids. */
  bodyText(column: string, field: string): string;
  /** Rows (pk, key): every distinct tag of each session of `fs0`. */
  tagRows: string;
  /** Rows (i, lo, hi) of the series' ranges, from @a_lo and @a_hi (arrays of the same length). */
  ranges: string;
  /**
   * FROM `b` (the ranges) and `sessions s` WHERE the session is in the range and `where` holds,
   * planned as one index range scan of (project_id, init_us) per range: SQLite keeps the left
   * side of a CROSS JOIN outside; PostgreSQL needs a LATERAL subquery kept whole by OFFSET 0 (it
   * otherwise misjudges the join's rows and scans every session of the project against every
   * range: 290 ms instead of 30 for 48 hours).
   */
  inRanges(columns: string, where: string): string;
  /** A text expression in the collation of ids (PostgreSQL: "C"), so that texts of two columns compare. */
  text(expr: string): string;
}

/**
 * A question's two queries over the same rows: the sums by group, and every row's duration (its
 * group's percentiles are taken from these in JS, the same for both engines). Placeholders are
 * @a_ names; `params` their values (arrays as arrays: the adapter encodes them).
 */
export interface Query {
  sums: string;
  durations: string;
  params: Record<string, unknown>;
}

/**
 * The per-session measures of the sessions in `fs`, as `m`: their totals columns, kept at write
 * time (docs/decisions/022-session-totals.md), one row per session, no event read.
 */
const SESSION_MEASURES = (pk = "fs.pk") => `m AS (
    SELECT fs.g, ${pk} AS pk, fs.end_state, fs.event_count AS events, fs.error_count AS errors,
      fs.prompt_tokens AS prompt, fs.completion_tokens AS completion, fs.cost, fs.duration_us AS dur
    FROM fs
  )`;

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
    FROM events r WHERE r.type = 'error' AND r.session_pk IN (SELECT pk FROM fs WHERE fs.error_count > 0)
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
 * The sums of `m` (rows g, pk, end_state, events, errors, prompt, completion, cost, dur) by g. A
 * session may be several rows of one group (its events): `distinct` counts it once.
 */
function sums(distinct: boolean) {
  const sessions = distinct ? "count(DISTINCT pk)" : "count(*)";
  const failures = distinct
    ? "count(DISTINCT CASE WHEN end_state = 'Fail' THEN pk END)"
    : "count(*) FILTER (WHERE end_state = 'Fail')";
  return `SELECT g, ${sessions} AS sessions, ${failures} AS failures, sum(events) AS events, sum(errors) AS error_events,
    sum(prompt) AS prompt_tokens, sum(completion) AS completion_tokens, sum(cost) AS cost
  FROM m GROUP BY g`;
}

/** The durations of `m`'s rows that have one, with their group: the percentiles are taken from these. */
const DURATIONS = "SELECT g, dur FROM m WHERE dur IS NOT NULL";

/**
 * The columns the series reads of each session: those of the covering index sessions_analytics
 * (SQLite migration 008, PostgreSQL 006), so that it reads the index only (test/analytics.plan.test.ts).
 */
const SERIES =
  "s.init_us, s.end_state, s.event_count, s.error_count, s.prompt_tokens, s.completion_tokens, s.cost, s.duration_us";
/** The columns every filtered session row of a breakdown carries. */
const SESSION = `s.pk, ${SERIES}`;

/**
 * The time series: the measures of the sessions matching `where` (over `sessions s`, the
 * project's condition included) whose init_us is in [lo, hi) of each range, by the range's index
 * (g). Each range is an index range scan of (project_id, init_us) (Dialect.inRanges).
 */
export function seriesQuery(d: Dialect, where: string, ranges: { lo: number; hi: number }[]): Query {
  const measured = `WITH b AS (${d.ranges}),
    fs AS (
      SELECT b.i AS g, ${SERIES} FROM ${d.inRanges(SERIES, where)}
    ),
    ${SESSION_MEASURES("NULL")}`;
  return {
    sums: `${measured} ${sums(false)}`,
    durations: `${measured} ${DURATIONS}`,
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

/** A breakdown: the sums of every group of `by` over the sessions matching `where`, and the rows' durations. */
export function breakdownQuery(d: Dialect, where: string, by: BreakdownBy): Query {
  const measured =
    EVENT_KEYS[by] !== undefined
      ? `WITH fs AS (SELECT ${SESSION} FROM sessions s WHERE ${where}), ${eventMeasures(d, by)}`
      : `WITH fs0 AS (SELECT ${SESSION} FROM sessions s WHERE ${where}), ${sessionGroups(d, by)}, ${SESSION_MEASURES()}`;
  return { sums: `${measured} ${sums(true)}`, durations: `${measured} ${DURATIONS}`, params: {} };
}

/** A row of the sums. */
export interface SumRow {
  g: unknown;
  sessions: number;
  failures: number;
  events: number | null;
  error_events: number | null;
  prompt_tokens: number | null;
  completion_tokens: number | null;
  cost: number | null;
}

/** A row of the durations: [g, dur] (the engines' array row mode). */
export type DurationRow = [unknown, number];

/** The durations by group, each sorted ascending. */
function byGroup(rows: DurationRow[]) {
  const lists = new Map<unknown, number[]>();
  for (const [g, dur] of rows) {
    const list = lists.get(g);
    if (list) list.push(Number(dur));
    else lists.set(g, [Number(dur)]);
  }
  const sorted = new Map<unknown, Float64Array>();
  for (const [g, list] of lists) sorted.set(g, Float64Array.from(list).sort());
  return sorted;
}

/** Nearest-rank percentiles of sorted durations (domain/analytics.ts percentileRank). */
function percentiles(sorted: Float64Array | undefined) {
  const at = (p: number) =>
    sorted === undefined || sorted.length === 0 ? null : (sorted[percentileRank(sorted.length, p) - 1] as number);
  return { p50_us: at(50), p95_us: at(95), p99_us: at(99) };
}

const measures = (row: SumRow, durations: Float64Array | undefined): Measures => ({
  sessions: Number(row.sessions),
  failures: Number(row.failures),
  events: Number(row.events ?? 0),
  error_events: Number(row.error_events ?? 0),
  prompt_tokens: Number(row.prompt_tokens ?? 0),
  completion_tokens: Number(row.completion_tokens ?? 0),
  cost: Number(row.cost ?? 0),
  ...percentiles(durations),
});

/** The series' points in range order, a range without sessions as EMPTY. */
export function seriesAnswer(rows: SumRow[], durations: DurationRow[], count: number): Measures[] {
  const sorted = byGroup(durations);
  const points: Measures[] = Array.from({ length: count }, () => EMPTY);
  for (const row of rows) points[Number(row.g)] = measures(row, sorted.get(row.g));
  return points;
}

/**
 * A breakdown's answer: the groups ranked (domain/analytics.ts rankGroups), the top `limit`, and
 * `other`: the sums of the rest, with percentiles over the rest's durations together.
 */
export function breakdownAnswer(rows: SumRow[], durations: DurationRow[], request: BreakdownRequest): Breakdown {
  const sorted = byGroup(durations);
  const groups = rows.map((row) => ({
    group: { key: row.g === null ? null : String(row.g), ...measures(row, sorted.get(row.g)) } as Group,
    g: row.g,
  }));
  const raw = new Map(groups.map(({ group, g }) => [group, g]));
  const { top, rest } = rankGroups(
    groups.map(({ group }) => group),
    request.sort,
    request.limit,
  );
  if (rest.length === 0) return { items: top, other: null };
  const together = rest.flatMap((group) => [...(sorted.get(raw.get(group)) ?? [])]);
  return { items: top, other: { ...sumGroups(rest), ...percentiles(Float64Array.from(together).sort()) } };
}
