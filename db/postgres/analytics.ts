/**
 * Analytics on PostgreSQL (docs/decisions/024-analytics.md): the queries of db/analytics.ts in
 * PostgreSQL's spelling, each in a snapshot.
 */
import type pg from "pg";
import {
  type Breakdown,
  type BreakdownRequest,
  breakdownRollupPlan,
  type Range,
  seriesFromRollups,
} from "../../domain/analytics.ts";
import type { SessionFilter } from "../../domain/types.ts";
import {
  breakdownAnswer,
  breakdownQuery,
  type Dialect,
  EVENT_ROLLUPS,
  fieldName,
  type KeyBuckets,
  type KeySums,
  type Query,
  type RollupSums,
  type Row,
  rollupBreakdownAnswer,
  rollupParams,
  rollupSeriesAnswer,
  rollupSeriesQueries,
  seriesAnswer,
  seriesQuery,
} from "../analytics.ts";
import { conditions } from "./sessions.ts";

export const POSTGRES: Dialect = {
  greatest: (a, b) => `greatest(${a}, ${b})`,
  bodyText: (column, field) => `((${column})::json ->> '${fieldName(field)}') COLLATE "C"`,
  tagRows: `SELECT DISTINCT s.pk, t.key COLLATE "C" AS key FROM sessions s, unnest(s.tags) AS t(key)
    WHERE s.pk IN (SELECT pk FROM fs0)`,
  ranges: `SELECT (b.o - 1)::int AS i, b.lo, b.hi
    FROM unnest(@a_lo::int8[], @a_hi::int8[]) WITH ORDINALITY AS b(lo, hi, o)`,
  text: (expr) => `(${expr}) COLLATE "C"`,
  inRanges: (columns, where) =>
    `b CROSS JOIN LATERAL (SELECT ${columns} FROM sessions s
      WHERE s.init_us >= b.lo AND s.init_us < b.hi AND ${where} OFFSET 0) s`,
};

/** The SQL's @a_ placeholders as $n, numbered after the filter's parameters. */
export function numbered(sql: string, named: Record<string, unknown>, filterParams: unknown[]) {
  const params = [...filterParams];
  const numbers = new Map<string, string>();
  const text = sql.replace(/@(a_\w+)/g, (_, name: string) => {
    let n = numbers.get(name);
    if (n === undefined) {
      n = `$${params.push(named[name])}`;
      numbers.set(name, n);
    }
    return n;
  });
  return { text, params };
}

/** A question's rows, as arrays (run in a snapshot: REPEATABLE READ). */
async function ask(db: pg.ClientBase, query: Query, filter: { params: unknown[] }) {
  const { text, params } = numbered(query.rows, query.params, filter.params);
  return (await db.query<Row>({ text, values: params, rowMode: "array" })).rows;
}

const ROLLUPS = rollupSeriesQueries(POSTGRES);

export async function analyticsSeries(db: pg.ClientBase, projectId: string, filter: SessionFilter, ranges: Range[]) {
  if (seriesFromRollups(filter, ranges)) {
    const named = rollupParams(projectId, ranges);
    const sums = numbered(ROLLUPS.sums, named, []);
    const histogram = numbered(ROLLUPS.histogram, named, []);
    return rollupSeriesAnswer(
      (await db.query<RollupSums>(sums.text, sums.params)).rows,
      (await db.query<{ g: unknown; bucket: unknown; n: unknown; max_us: unknown }>(histogram.text, histogram.params))
        .rows,
      ranges.length,
    );
  }
  const found = conditions(projectId, filter, undefined);
  return seriesAnswer(await ask(db, seriesQuery(POSTGRES, found.where.join(" AND "), ranges), found), ranges.length);
}

export async function analyticsBreakdown(
  db: pg.ClientBase,
  projectId: string,
  filter: SessionFilter,
  request: BreakdownRequest,
): Promise<Breakdown> {
  const plan = breakdownRollupPlan(filter, request.by);
  if (plan) {
    // Whole days and hours from the rollups (migration 009); the partial hours at the ends exactly.
    const sums: KeySums[] = [];
    const histogram: KeyBuckets[] = [];
    const parts = [...plan.days.map((r) => [1, r] as const), ...plan.hours.map((r) => [0, r] as const)];
    for (const [level, range] of parts) {
      const named = { a_project: projectId, a_dim: request.by, a_level: level, a_lo: range.lo, a_hi: range.hi };
      const s = numbered(EVENT_ROLLUPS.sums, named, []);
      const h = numbered(EVENT_ROLLUPS.histogram, named, []);
      sums.push(...(await db.query<KeySums>(s.text, s.params)).rows);
      histogram.push(...(await db.query<KeyBuckets>(h.text, h.params)).rows);
    }
    const exact: Row[] = [];
    for (const range of plan.exact) {
      const edge = conditions(projectId, { ...filter, from_us: range.lo, to_us: range.hi }, undefined);
      exact.push(...(await ask(db, breakdownQuery(POSTGRES, edge.where.join(" AND "), request.by), edge)));
    }
    return rollupBreakdownAnswer(sums, histogram, exact, request);
  }
  const found = conditions(projectId, filter, undefined);
  const query = breakdownQuery(POSTGRES, found.where.join(" AND "), request.by);
  return breakdownAnswer(await ask(db, query, found), query.distinct, request);
}
