/**
 * The analytics queries of both adapters (db/sqlite/analytics.ts, db/postgres/analytics.ts;
 * docs/decisions/024-analytics.md): one SQL text per question, with the few spellings that
 * differ between the engines in a `Dialect`, so that SQLite and PostgreSQL count, sum and rank
 * the same rows the same way. Placeholders are `@a_name`; the filter's own conditions (the
 * session list's, over `sessions s`) come from the adapter. Only the adapters import this file.
 *
 * One query per question reads its rows (a session, or an event, per group it is in); JS sums them
 * by group and takes the percentiles, nearest-rank: each group's durations sorted and the value at
 * rank ceil(n·p/100) taken, as domain/analytics.ts percentileRank says: the same code for both
 * engines. (Window functions computing it in SQL measured 10 times slower on SQLite than the sums;
 * sums in SQL and durations in a second query read every row twice.)
 */
import {
  type Breakdown,
  type BreakdownBy,
  type BreakdownRequest,
  EMPTY,
  fromHistogram,
  type Group,
  histogramBucket,
  type Measures,
  percentileRank,
  type Range,
  rankGroups,
  sumGroups,
} from "../domain/analytics.ts";

/**
 * A field name the SQL of Dialect.bodyText spells into its text (a JSON path on SQLite, a quoted
 * key on PostgreSQL): only the fixed names of this file (`name`, `trigger_event_id`), never request
 * text, and checked so that it stays so (decision 031).
 */
export function fieldName(field: string): string {
  if (!/^[a-z_]+$/.test(field)) throw new Error(`bodyText takes a fixed field name, not ${JSON.stringify(field)}`);
  return field;
}

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
 * A question's one query: its rows (`Row`), summed by group and their durations ranked in JS (the
 * same code for both engines). Placeholders are @a_ names; `params` their values (arrays as
 * arrays: the adapter encodes them). `distinct`: a session may be several rows of one group (its
 * events), counted once in `sessions` and `failures`.
 */
export interface Query {
  rows: string;
  params: Record<string, unknown>;
  distinct: boolean;
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
 * The rows of `m` as arrays (a row per session, or per event, of each group it is in), in the
 * order of `Row`: JS sums them and sorts each group's durations (`aggregate`), so that a question
 * is one scan of its rows, not one for the sums and another for the durations.
 */
const ROWS = `SELECT g, pk, CASE WHEN end_state = 'Fail' THEN 1 ELSE 0 END AS failed, events, errors, prompt, completion,
    cost, dur FROM m`;

/**
 * The columns the series reads of each session: those of the covering index sessions_analytics
 * (SQLite migration 009, PostgreSQL 007), so that it reads the index only (test/analytics.plan.test.ts).
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
    rows: `${measured} ${ROWS}`,
    params: { a_lo: ranges.map((r) => r.lo), a_hi: ranges.map((r) => r.hi) },
    distinct: false,
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

/** A breakdown: the rows of every group of `by` over the sessions matching `where`. */
export function breakdownQuery(d: Dialect, where: string, by: BreakdownBy): Query {
  const measured =
    EVENT_KEYS[by] !== undefined
      ? `WITH fs AS (SELECT ${SESSION} FROM sessions s WHERE ${where}), ${eventMeasures(d, by)}`
      : `WITH fs0 AS (SELECT ${SESSION} FROM sessions s WHERE ${where}), ${sessionGroups(d, by)}, ${SESSION_MEASURES()}`;
  return { rows: `${measured} ${ROWS}`, params: {}, distinct: EVENT_KEYS[by] !== undefined };
}

/**
 * A row of `ROWS` in the engines' array row mode: [g, pk, failed (1|0), events, errors, prompt,
 * completion, cost, dur]. PostgreSQL's bigints come as strings; numbers are taken with Number().
 */
export type Row = unknown[];

/** What a group's rows add up to, as they are read. */
interface Sum {
  rows: number;
  pks: Set<unknown> | undefined;
  failed: Set<unknown> | number;
  events: number;
  errors: number;
  prompt: number;
  completion: number;
  /** Neumaier's compensated sum of the costs and its compensation (as SQLite's own sum()). */
  cost: number;
  carry: number;
  durations: number[];
}

const n = (value: unknown) => (value === null || value === undefined ? 0 : Number(value));

/**
 * The rows summed by group, with each group's durations sorted ascending. Costs are summed with
 * compensation, so that the order the engine hands the rows in does not change the sum's last
 * bits in practice.
 */
export function aggregate(rows: Row[], distinct: boolean): Map<unknown, { measures: Measures; sorted: Float64Array }> {
  const sums = new Map<unknown, Sum>();
  for (const [g, pk, failed, events, errors, prompt, completion, cost, dur] of rows) {
    let sum = sums.get(g);
    if (sum === undefined) {
      sum = {
        rows: 0,
        pks: distinct ? new Set() : undefined,
        failed: distinct ? new Set() : 0,
        events: 0,
        errors: 0,
        prompt: 0,
        completion: 0,
        cost: 0,
        carry: 0,
        durations: [],
      };
      sums.set(g, sum);
    }
    sum.rows++;
    sum.pks?.add(pk);
    if (Number(failed) === 1) {
      if (typeof sum.failed === "number") sum.failed++;
      else sum.failed.add(pk);
    }
    sum.events += n(events);
    sum.errors += n(errors);
    sum.prompt += n(prompt);
    sum.completion += n(completion);
    const c = n(cost);
    const t = sum.cost + c;
    sum.carry += Math.abs(sum.cost) >= Math.abs(c) ? sum.cost - t + c : c - t + sum.cost;
    sum.cost = t;
    if (dur !== null && dur !== undefined) sum.durations.push(Number(dur));
  }
  const found = new Map<unknown, { measures: Measures; sorted: Float64Array }>();
  for (const [g, sum] of sums) {
    const sorted = Float64Array.from(sum.durations).sort();
    found.set(g, {
      sorted,
      measures: {
        sessions: sum.pks ? sum.pks.size : sum.rows,
        failures: typeof sum.failed === "number" ? sum.failed : sum.failed.size,
        events: sum.events,
        error_events: sum.errors,
        prompt_tokens: sum.prompt,
        completion_tokens: sum.completion,
        cost: sum.cost + sum.carry,
        ...percentiles(sorted),
      },
    });
  }
  return found;
}

/** Nearest-rank percentiles of sorted durations (domain/analytics.ts percentileRank). */
function percentiles(sorted: Float64Array | undefined) {
  const at = (p: number) =>
    sorted === undefined || sorted.length === 0 ? null : (sorted[percentileRank(sorted.length, p) - 1] as number);
  return { p50_us: at(50), p95_us: at(95), p99_us: at(99) };
}

/** The series' points in range order, a range without sessions as EMPTY. */
export function seriesAnswer(rows: Row[], count: number): Measures[] {
  const points: Measures[] = Array.from({ length: count }, () => EMPTY);
  for (const [g, { measures }] of aggregate(rows, false)) points[Number(g)] = measures;
  return points;
}

/**
 * A breakdown's answer: the groups ranked (domain/analytics.ts rankGroups), the top `limit`, and
 * `other`: the sums of the rest, with percentiles over the rest's durations together.
 */
export function breakdownAnswer(rows: Row[], distinct: boolean, request: BreakdownRequest): Breakdown {
  const found = aggregate(rows, distinct);
  const sortedOf = new Map<Group, Float64Array>();
  const groups = [...found].map(([g, { measures, sorted }]) => {
    const group: Group = { key: g === null ? null : String(g), ...measures };
    sortedOf.set(group, sorted);
    return group;
  });
  const { top, rest } = rankGroups(groups, request.sort, request.limit);
  if (rest.length === 0) return { items: top, other: null };
  const together = rest.flatMap((group) => [...(sortedOf.get(group) ?? [])]);
  return { items: top, other: { ...sumGroups(rest), ...percentiles(Float64Array.from(together).sort()) } };
}

/**
 * The series from the rollups (docs/decisions/026-analytics-rollups.md; used when
 * domain/analytics.ts seriesFromRollups says so): each range's slots' sums, and its histogram
 * (the counts of each duration bucket over the range's slots, and the largest duration put in).
 * Rows of slots or buckets that writes have emptied (n or sessions 0) add nothing.
 */
export function rollupSeriesQueries(d: Dialect) {
  return {
    sums: `WITH b AS (${d.ranges})
      SELECT b.i AS g, sum(r.sessions) AS sessions, sum(r.failures) AS failures, sum(r.events) AS events,
        sum(r.error_events) AS error_events, sum(r.prompt_tokens) AS prompt_tokens,
        sum(r.completion_tokens) AS completion_tokens, sum(r.cost) AS cost
      FROM b CROSS JOIN session_rollups r
      WHERE r.project_id = @a_project AND r.slot_us >= b.lo AND r.slot_us < b.hi
      GROUP BY b.i`,
    histogram: `WITH b AS (${d.ranges})
      SELECT b.i AS g, h.bucket, sum(h.n) AS n, max(CASE WHEN h.n > 0 THEN h.max_us END) AS max_us
      FROM b CROSS JOIN session_rollup_durations h
      WHERE h.project_id = @a_project AND h.slot_us >= b.lo AND h.slot_us < b.hi
      GROUP BY b.i, h.bucket
      ORDER BY b.i, h.bucket`,
  };
}

/** The rollups' parameters for a series. */
export const rollupParams = (projectId: string, ranges: readonly Range[]) => ({
  a_project: projectId,
  a_lo: ranges.map((r) => r.lo),
  a_hi: ranges.map((r) => r.hi),
});

/** A rollup row of the sums (PostgreSQL's bigints as strings). */
export interface RollupSums {
  g: unknown;
  sessions: unknown;
  failures: unknown;
  events: unknown;
  error_events: unknown;
  prompt_tokens: unknown;
  completion_tokens: unknown;
  cost: unknown;
}

/** The series' points from the rollups' rows: sums as summed, percentiles from the histogram. */
export function rollupSeriesAnswer(
  sums: RollupSums[],
  histogram: { g: unknown; bucket: unknown; n: unknown; max_us: unknown }[],
  count: number,
): Measures[] {
  const buckets = new Map<number, [number, number, number][]>();
  for (const row of histogram) {
    const n = Number(row.n);
    if (n <= 0) continue;
    const g = Number(row.g);
    const list = buckets.get(g) ?? [];
    list.push([Number(row.bucket), n, Number(row.max_us)]);
    buckets.set(g, list);
  }
  const points: Measures[] = Array.from({ length: count }, () => EMPTY);
  for (const row of sums) {
    const g = Number(row.g);
    if (Number(row.sessions) <= 0) continue;
    const list = buckets.get(g) ?? [];
    points[g] = {
      sessions: Number(row.sessions),
      failures: Number(row.failures),
      events: Number(row.events),
      error_events: Number(row.error_events),
      prompt_tokens: Number(row.prompt_tokens),
      completion_tokens: Number(row.completion_tokens),
      cost: Number(row.cost),
      p50_us: fromHistogram(list, 50),
      p95_us: fromHistogram(list, 95),
      p99_us: fromHistogram(list, 99),
    };
  }
  return points;
}

/**
 * A breakdown from the event rollups (SQLite migration 011, docs/decisions/027-event-rollups.md),
 * for one range of one level: the sums per key, and the histogram per key. Keys are stored as ''
 * (no key) or '=' and the key. Parameters: a_project, a_dim, a_level, a_lo, a_hi.
 */
export const EVENT_ROLLUPS = {
  sums: `SELECT key, sum(sessions) AS sessions, sum(failures) AS failures, sum(events) AS events,
      sum(error_events) AS error_events, sum(prompt_tokens) AS prompt_tokens,
      sum(completion_tokens) AS completion_tokens, sum(cost) AS cost
    FROM event_rollups
    WHERE project_id = @a_project AND dim = @a_dim AND level = @a_level AND slot_us >= @a_lo AND slot_us < @a_hi
    GROUP BY key`,
  histogram: `SELECT key, bucket, sum(n) AS n, max(CASE WHEN n > 0 THEN max_us END) AS max_us
    FROM event_rollup_durations
    WHERE project_id = @a_project AND dim = @a_dim AND level = @a_level AND slot_us >= @a_lo AND slot_us < @a_hi
    GROUP BY key, bucket`,
};

/** A row of EVENT_ROLLUPS.sums. */
export interface KeySums extends Omit<RollupSums, "g"> {
  key: unknown;
}

/** A row of EVENT_ROLLUPS.histogram. */
export interface KeyBuckets {
  key: unknown;
  bucket: unknown;
  n: unknown;
  max_us: unknown;
}

/** A group's sums and its histogram: bucket -> [n, max_us]. */
interface Merged {
  measures: Measures;
  histogram: Map<number, [number, number]>;
}

/** Counts `count` durations, the largest `max`, into a histogram's bucket. */
function addTo(h: Map<number, [number, number]>, bucket: number, count: number, max: number) {
  const at = h.get(bucket);
  if (at === undefined) h.set(bucket, [count, max]);
  else {
    at[0] += count;
    if (max > at[1]) at[1] = max;
  }
}

const stored = (key: unknown) => (key === "" ? null : String(key).slice(1));

const percentilesOf = (histogram: Map<number, [number, number]>) => {
  const buckets = [...histogram]
    .filter(([, [n]]) => n > 0)
    .sort((a, b) => a[0] - b[0])
    .map(([bucket, [n, max]]) => [bucket, n, max] as const);
  return { p50_us: fromHistogram(buckets, 50), p95_us: fromHistogram(buckets, 95), p99_us: fromHistogram(buckets, 99) };
};

/**
 * A breakdown's answer from the rollups' rows of its whole hours and days and the exact rows of
 * its partial hours (`breakdownQuery` rows): the sums added (the parts hold different sessions),
 * the exact durations put in the histogram, percentiles from it (domain/analytics.ts
 * fromHistogram), ranked and cut as breakdownAnswer does.
 */
export function rollupBreakdownAnswer(
  sums: readonly KeySums[],
  histogram: readonly KeyBuckets[],
  exact: Row[],
  request: BreakdownRequest,
): Breakdown {
  const groups = new Map<string | null, Merged>();
  const groupOf = (key: string | null) => {
    let group = groups.get(key);
    if (group === undefined) {
      group = { measures: { ...EMPTY }, histogram: new Map() };
      groups.set(key, group);
    }
    return group;
  };
  const add = (key: string | null, m: Omit<Measures, "p50_us" | "p95_us" | "p99_us">) => {
    const group = groupOf(key);
    group.measures = sumGroups([group.measures, { ...EMPTY, ...m }]);
  };
  const put = (key: string | null, bucket: number, count: number, max: number) =>
    addTo(groupOf(key).histogram, bucket, count, max);
  for (const row of sums) {
    add(stored(row.key), {
      sessions: n(row.sessions),
      failures: n(row.failures),
      events: n(row.events),
      error_events: n(row.error_events),
      prompt_tokens: n(row.prompt_tokens),
      completion_tokens: n(row.completion_tokens),
      cost: n(row.cost),
    });
  }
  for (const row of histogram) {
    if (n(row.n) > 0) put(stored(row.key), n(row.bucket), n(row.n), n(row.max_us));
  }
  for (const [g, { measures, sorted }] of aggregate(exact, true)) {
    const key = g === null ? null : String(g);
    add(key, measures);
    for (const us of sorted) put(key, histogramBucket(us), 1, us);
  }
  const histogramOf = new Map<Group, Map<number, [number, number]>>();
  const found: Group[] = [];
  for (const [key, { measures, histogram: h }] of groups) {
    // A group every event of which was taken out again (deleted sessions) is no group.
    if (measures.sessions <= 0) continue;
    const group: Group = { key, ...measures, ...percentilesOf(h) };
    histogramOf.set(group, h);
    found.push(group);
  }
  const { top, rest } = rankGroups(found, request.sort, request.limit);
  if (rest.length === 0) return { items: top, other: null, percentiles: "approximate" };
  const together = new Map<number, [number, number]>();
  for (const group of rest) {
    for (const [bucket, [count, max]] of histogramOf.get(group) ?? []) addTo(together, bucket, count, max);
  }
  return { items: top, other: { ...sumGroups(rest), ...percentilesOf(together) }, percentiles: "approximate" };
}
