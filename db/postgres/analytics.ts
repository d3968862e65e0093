/**
 * Analytics on PostgreSQL (docs/decisions/024-analytics.md): the queries of db/analytics.ts in
 * PostgreSQL's spelling; a breakdown's two queries read one snapshot.
 */
import type pg from "pg";
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
import { conditions, usOf } from "./sessions.ts";

type Queryable = pg.Pool | pg.ClientBase;

const POSTGRES: Dialect = {
  greatest: (a, b) => `greatest(${a}, ${b})`,
  usOf,
  bodyText: (column, field) => `((${column})::json ->> '${field}') COLLATE "C"`,
  tagRows: `SELECT DISTINCT s.pk, t.key COLLATE "C" AS key FROM sessions s, unnest(s.tags) AS t(key)
    WHERE s.pk IN (SELECT pk FROM fs0)`,
  ranges: `SELECT (b.o - 1)::int AS i, b.lo, b.hi
    FROM unnest(@a_lo::int8[], @a_hi::int8[]) WITH ORDINALITY AS b(lo, hi, o)`,
  inKeys: (expr) => `${expr} = ANY(@a_keys::text[])`,
  text: (expr) => `(${expr}) COLLATE "C"`,
};

/** The query's @a_ placeholders as $n, numbered after the filter's parameters. */
async function run(db: Queryable, query: Query, filter: { where: string[]; params: unknown[] }) {
  const params = [...filter.params];
  const numbers = new Map<string, string>();
  const sql = query.sql.replace(/@(a_\w+)/g, (_, name: string) => {
    let n = numbers.get(name);
    if (n === undefined) {
      n = `$${params.push(query.params[name])}`;
      numbers.set(name, n);
    }
    return n;
  });
  return (await db.query<MeasureRow>(sql, params)).rows;
}

export async function analyticsSeries(db: Queryable, projectId: string, filter: SessionFilter, ranges: Range[]) {
  const found = conditions(projectId, filter, undefined);
  const rows = await run(db, seriesQuery(POSTGRES, found.where.join(" AND "), ranges), found);
  return seriesPoints(rows, ranges.length, EMPTY);
}

/** Run in a snapshot (REPEATABLE READ), so that `other` is of the same rows as the groups. */
export async function analyticsBreakdown(
  db: Queryable,
  projectId: string,
  filter: SessionFilter,
  request: BreakdownRequest,
): Promise<Breakdown> {
  const found = conditions(projectId, filter, undefined);
  const where = found.where.join(" AND ");
  const groups = (await run(db, breakdownQuery(POSTGRES, where, request.by), found)).map(group);
  const { top, rest } = rankGroups(groups, request.sort, request.limit);
  if (rest.length === 0) return { items: top, other: null };
  const keys = top.flatMap((g) => (g.key === null ? [] : [g.key]));
  const others = { keys, topNull: top.some((g) => g.key === null) };
  const [row] = await run(db, breakdownQuery(POSTGRES, where, request.by, others), found);
  return { items: top, other: otherOf(rest, row) };
}
