/**
 * Analytics on SQLite (docs/decisions/024-analytics.md): the queries of db/analytics.ts in
 * SQLite's spelling, each statement prepared once per SQL text (one per combination of filters),
 * each question in one read transaction.
 */
import type Database from "better-sqlite3";
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
import type { Db } from "./open.ts";
import { filterWhere } from "./sessions.ts";

export const SQLITE: Dialect = {
  greatest: (a, b) => `max(${a}, ${b})`,
  bodyText: (column, field) => `CAST(json_extract(${column}, '$.${fieldName(field)}') AS TEXT)`,
  tagRows:
    "SELECT DISTINCT s.pk, t.value AS key FROM sessions s, json_each(s.tags) t WHERE s.pk IN (SELECT pk FROM fs0)",
  // Both bounds from one row, so that each range is one index range of sessions (a join of two
  // json_each would read the sessions after lo for every lo).
  ranges:
    "SELECT lo.key AS i, lo.value AS lo, json_extract(@a_hi, '$[' || lo.key || ']') AS hi FROM json_each(@a_lo) lo",
  text: (expr) => expr,
  inRanges: (_, where) => `b CROSS JOIN sessions s WHERE s.init_us >= b.lo AND s.init_us < b.hi AND ${where}`,
};

export function analyticsQueries(db: Db) {
  const statements = new Map<string, Database.Statement<Record<string, unknown>, unknown>>();
  const prepared = (sql: string) => {
    let statement = statements.get(sql);
    if (!statement) {
      statement = db.prepare<Record<string, unknown>, unknown>(sql);
      statements.set(sql, statement);
    }
    return statement;
  };
  /** A question's rows, as arrays. */
  const ask = (query: Query, filterParams: Record<string, unknown>) => {
    const params: Record<string, unknown> = { ...filterParams };
    for (const [name, value] of Object.entries(query.params))
      params[name] = Array.isArray(value) ? JSON.stringify(value) : value;
    return prepared(query.rows).raw(true).all(params) as Row[];
  };

  const rollups = rollupSeriesQueries(SQLITE);
  const series = db.transaction((projectId: string, filter: SessionFilter, ranges: Range[]) => {
    if (seriesFromRollups(filter, ranges)) {
      const { a_project, a_lo, a_hi } = rollupParams(projectId, ranges);
      const params = { a_project, a_lo: JSON.stringify(a_lo), a_hi: JSON.stringify(a_hi) };
      return rollupSeriesAnswer(
        prepared(rollups.sums).all(params) as RollupSums[],
        prepared(rollups.histogram).all(params) as { g: unknown; bucket: unknown; n: unknown; max_us: unknown }[],
        ranges.length,
      );
    }
    const { where, params } = filterWhere(projectId, filter);
    return seriesAnswer(ask(seriesQuery(SQLITE, where, ranges), params), ranges.length);
  });
  const breakdown = db.transaction((projectId: string, filter: SessionFilter, request: BreakdownRequest): Breakdown => {
    const plan = breakdownRollupPlan(filter, request.by);
    if (plan) {
      // Whole days and hours from the rollups; the partial hours at the ends exactly.
      const sums: KeySums[] = [];
      const histogram: KeyBuckets[] = [];
      const read = (level: number) => (range: Range) => {
        const params = { a_project: projectId, a_dim: request.by, a_level: level, a_lo: range.lo, a_hi: range.hi };
        sums.push(...(prepared(EVENT_ROLLUPS.sums).all(params) as KeySums[]));
        histogram.push(...(prepared(EVENT_ROLLUPS.histogram).all(params) as KeyBuckets[]));
      };
      plan.days.forEach(read(1));
      plan.hours.forEach(read(0));
      const exact = plan.exact.flatMap((range) => {
        const { where, params } = filterWhere(projectId, { ...filter, from_us: range.lo, to_us: range.hi });
        return ask(breakdownQuery(SQLITE, where, request.by), params);
      });
      return rollupBreakdownAnswer(sums, histogram, exact, request);
    }
    const { where, params } = filterWhere(projectId, filter);
    const query = breakdownQuery(SQLITE, where, request.by);
    return breakdownAnswer(ask(query, params), query.distinct, request);
  });
  return { series, breakdown };
}
