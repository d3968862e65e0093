/**
 * The analytics queries' plans (docs/decisions/024-analytics.md, 026-analytics-rollups.md): the
 * time series reads the covering index sessions_analytics only (SQLite migration 009, PostgreSQL
 * 007), one index range per bucket, never a sessions row. Checked with EXPLAIN on both engines;
 * PostgreSQL is asked with sequential and bitmap scans off, so that its choice on a nearly empty
 * table says whether an index-only scan can answer, not whether the table is small.
 */
import { join } from "node:path";
import pg from "pg";
import t from "tap";
import { rollupParams, rollupSeriesQueries, seriesQuery } from "../db/analytics.ts";
import { numbered, POSTGRES } from "../db/postgres/analytics.ts";
import { conditions } from "../db/postgres/sessions.ts";
import { openPostgresStore } from "../db/postgres/store.ts";
import { SQLITE } from "../db/sqlite/analytics.ts";
import { openDb } from "../db/sqlite/open.ts";
import { filterWhere } from "../db/sqlite/sessions.ts";
import { tempDir } from "./helper.ts";
import { postgresRequired, postgresUnavailable, testDatabase } from "./postgres.ts";

const RANGES = [
  { lo: 0, hi: 86_400_000_000 },
  { lo: 86_400_000_000, hi: 2 * 86_400_000_000 },
];

t.test("SQLite: the series searches sessions_analytics as a covering index, one range per bucket", (t) => {
  const db = openDb(join(tempDir(t), "plan.db"));
  t.teardown(() => db.close());
  const { where, params } = filterWhere("p", {});
  const query = seriesQuery(SQLITE, where, RANGES);
  const bound = {
    ...params,
    a_lo: JSON.stringify(RANGES.map((r) => r.lo)),
    a_hi: JSON.stringify(RANGES.map((r) => r.hi)),
  };
  for (const sql of [query.rows]) {
    const plan = db
      .prepare<Record<string, unknown>, { detail: string }>(`EXPLAIN QUERY PLAN ${sql}`)
      .all(bound)
      .map((row) => row.detail);
    const sessions = plan.filter((detail) => / s\b/.test(detail) && !detail.startsWith("SCAN lo"));
    t.strictSame(
      sessions,
      ["SEARCH s USING COVERING INDEX sessions_analytics (project_id=? AND init_us>? AND init_us<?)"],
      plan.join("\n"),
    );
  }
  // The rollups (docs/decisions/026-analytics-rollups.md): WITHOUT ROWID tables, read by their key.
  const rollups = rollupSeriesQueries(SQLITE);
  const named = { a_project: "p", a_lo: bound.a_lo, a_hi: bound.a_hi };
  for (const [sql, table] of [
    [rollups.sums, "r"],
    [rollups.histogram, "h"],
  ] as const) {
    const plan = db
      .prepare<Record<string, unknown>, { detail: string }>(`EXPLAIN QUERY PLAN ${sql}`)
      .all(named)
      .map((row) => row.detail);
    t.ok(
      plan.includes(`SEARCH ${table} USING PRIMARY KEY (project_id=? AND slot_us>? AND slot_us<?)`),
      plan.join("\n"),
    );
  }
  t.end();
});

t.test("PostgreSQL: the series is an index-only scan of sessions_analytics", async (t) => {
  const unavailable = await postgresUnavailable();
  if (unavailable && !postgresRequired()) {
    t.comment(`skipped: ${unavailable}`);
    return;
  }
  const url = await testDatabase(t);
  const store = await openPostgresStore({ url });
  await store.close();
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  t.teardown(() => client.end());
  // Sessions to plan over, vacuumed (an index-only scan needs the visibility map) and analyzed:
  // on an empty table every index of sessions costs the same and the planner's pick is a tie.
  await client.query("INSERT INTO projects (id, name, created_at) VALUES ('p', 'p', '2026-01-01T00:00:00Z')");
  await client.query(`INSERT INTO sessions (id, project_id, init_timestamp, init_us, extra)
    SELECT 's' || n, 'p', '2026-01-01T00:00:00Z', ${RANGES[0]?.lo ?? 0} + n * 1000000, '{}' FROM generate_series(1, 2000) n`);
  await client.query("VACUUM ANALYZE sessions");
  await client.query("SET enable_seqscan = off");
  await client.query("SET enable_bitmapscan = off");
  const found = conditions("p", {}, undefined);
  const query = seriesQuery(POSTGRES, found.where.join(" AND "), RANGES);
  for (const sql of [query.rows]) {
    const { text, params } = numbered(sql, query.params, found.params);
    const { rows } = await client.query<{ "QUERY PLAN": string }>(`EXPLAIN ${text}`, params);
    const plan = rows.map((row) => row["QUERY PLAN"]);
    const scans = plan.filter((line) => / on sessions\b| using .* on sessions\b/.test(line));
    t.equal(scans.length, 1, plan.join("\n"));
    t.match(scans[0], /Index Only Scan using sessions_analytics on sessions s/, plan.join("\n"));
  }
  // The rollups' histogram (docs/decisions/026-analytics-rollups.md): its key's index carries n and max_us.
  const { text, params } = numbered(rollupSeriesQueries(POSTGRES).histogram, rollupParams("p", RANGES), []);
  const plan = (await client.query<{ "QUERY PLAN": string }>(`EXPLAIN ${text}`, params)).rows.map(
    (row) => row["QUERY PLAN"],
  );
  t.match(plan.join("\n"), /Index Only Scan using session_rollup_durations_pkey on session_rollup_durations h/);
});
