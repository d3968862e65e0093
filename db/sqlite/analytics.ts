/**
 * Analytics on SQLite (docs/decisions/024-analytics.md): the queries of db/analytics.ts in
 * SQLite's spelling, each statement prepared once per SQL text (one per combination of filters),
 * a breakdown's two queries in one read transaction.
 */
import type Database from "better-sqlite3";
import { type Breakdown, type BreakdownRequest, EMPTY, type Range, rankGroups } from "../../domain/analytics.ts";
import type { SessionFilter } from "../../domain/types.ts";
import {
  breakdownQuery,
  type Dialect,
  group,
  type MeasureRow,
  otherOf,
  type Query,
  seriesPoints,
  seriesQuery,
} from "../analytics.ts";
import type { Db } from "./open.ts";
import { filterWhere, usOf } from "./sessions.ts";

const SQLITE: Dialect = {
  greatest: (a, b) => `max(${a}, ${b})`,
  usOf,
  bodyText: (column, field) => `CAST(json_extract(${column}, '$.${field}') AS TEXT)`,
  tagRows:
    "SELECT DISTINCT s.pk, t.value AS key FROM sessions s, json_each(s.tags) t WHERE s.pk IN (SELECT pk FROM fs0)",
  ranges: `SELECT lo.key AS i, lo.value AS lo, hi.value AS hi
    FROM json_each(@a_lo) lo JOIN json_each(@a_hi) hi ON hi.key = lo.key`,
  inKeys: (expr) => `${expr} IN (SELECT value FROM json_each(@a_keys))`,
  text: (expr) => expr,
};

export function analyticsQueries(db: Db) {
  const statements = new Map<string, Database.Statement<Record<string, unknown>, MeasureRow>>();
  const all = (query: Query, filterParams: Record<string, unknown>) => {
    let statement = statements.get(query.sql);
    if (!statement) {
      statement = db.prepare<Record<string, unknown>, MeasureRow>(query.sql);
      statements.set(query.sql, statement);
    }
    const params: Record<string, unknown> = { ...filterParams };
    for (const [name, value] of Object.entries(query.params))
      params[name] = Array.isArray(value) ? JSON.stringify(value) : value;
    return statement.all(params);
  };

  const series = (projectId: string, filter: SessionFilter, ranges: Range[]) => {
    const { where, params } = filterWhere(projectId, filter);
    return seriesPoints(all(seriesQuery(SQLITE, where, ranges), params), ranges.length, EMPTY);
  };

  const breakdown = db.transaction((projectId: string, filter: SessionFilter, request: BreakdownRequest): Breakdown => {
    const { where, params } = filterWhere(projectId, filter);
    const groups = all(breakdownQuery(SQLITE, where, request.by), params).map(group);
    const { top, rest } = rankGroups(groups, request.sort, request.limit);
    if (rest.length === 0) return { items: top, other: null };
    const keys = top.flatMap((g) => (g.key === null ? [] : [g.key]));
    const [row] = all(
      breakdownQuery(SQLITE, where, request.by, { keys, topNull: top.some((g) => g.key === null) }),
      params,
    );
    return { items: top, other: otherOf(rest, row) };
  });
  return { series, breakdown };
}
