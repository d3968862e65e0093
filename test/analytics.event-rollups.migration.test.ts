import pg from "pg";
import t, { type Test } from "tap";
import { openPostgresStore } from "../db/postgres/store.ts";
import { openDb } from "../db/sqlite/open.ts";
import type { Store } from "../db/store.ts";
import { type BreakdownBy, breakdownRollupPlan } from "../domain/analytics.ts";
import { eventAt, newSession } from "./db/contract/values.ts";
import { iso, patch, US0 } from "./db/records.ts";
import { postgresRequired, postgresUnavailable, testDatabase } from "./postgres.ts";

const SECOND = 1_000_000;
const HOUR = 3600 * SECOND;

/** The rollup tables' rows that hold something, in key order (emptied rows are left by writes). */
const TABLES = {
  session_keys: `SELECT session_pk, dim, key, events, error_events, prompt_tokens, completion_tokens,
      round(cost::numeric, 9)::text FROM session_keys WHERE events <> 0 ORDER BY session_pk, dim, key`,
  event_rollups: `SELECT project_id, dim, level, slot_us, key, sessions, failures, events, error_events, prompt_tokens,
      completion_tokens, round(cost::numeric, 9)::text FROM event_rollups WHERE sessions <> 0 ORDER BY 1, 2, 3, 4, 5`,
  event_rollup_durations:
    "SELECT project_id, dim, level, slot_us, key, bucket, n FROM event_rollup_durations WHERE n <> 0 ORDER BY 1, 2, 3, 4, 5, 6",
};

/** SQLite has no numeric type: the same rows with its own spelling of the rounded cost. */
const sqliteSql = (sql: string) => sql.replaceAll("round(cost::numeric, 9)::text", "printf('%.9f', cost)");

/** The same rows as text, whatever the engine gave (PostgreSQL's bigints are strings). */
const asText = (rows: unknown[][]) => rows.map((row) => row.map((v) => (v === null ? null : String(v))));

function _sqliteTables(path: string) {
  const db = openDb(path);
  try {
    return Object.fromEntries(
      Object.entries(TABLES).map(([name, sql]) => [
        name,
        asText(db.prepare(sqliteSql(sql)).raw(true).all() as unknown[][]),
      ]),
    );
  } finally {
    db.close();
  }
}

async function postgresTables(url: string) {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const found: Record<string, unknown> = {};
    for (const [name, sql] of Object.entries(TABLES)) {
      found[name] = asText((await client.query<unknown[]>({ text: sql, rowMode: "array" })).rows);
    }
    return found;
  } finally {
    await client.end();
  }
}

/** Every kind of event write, on sessions spread over hours; answers the project. */
async function write(store: Store) {
  const key = await store.createApiKey("hash", "abcdefgh", "p", "2026-01-01T00:00:00Z");
  const p = key.project_id;
  for (let i = 0; i < 12; i += 1) {
    const init = US0 + i * 37 * 60 * SECOND + i;
    await store.createSession(
      p,
      newSession(`s${i}`, {
        init_us: init,
        init_timestamp: iso(init),
        end_timestamp: i % 3 ? iso(init + 9 * SECOND) : null,
        end_state: i % 3 ? (i % 4 ? "Success" : "Fail") : null,
      }),
    );
    await store.insertEvents(p, `s${i}`, [
      eventAt("a", init + SECOND, { model: i % 2 ? "m1" : "m2", cost: 0.25 * i, prompt_tokens: i }, init + i * SECOND),
      eventAt(
        "t",
        init + 2 * SECOND,
        { type: "tool", model: null, fields: { name: i % 3 ? "search" : "fetch" } },
        init + 3 * SECOND + i,
      ),
      eventAt("n", init + 2 * SECOND, { model: null }, init + 4 * SECOND),
      eventAt("e", init + 5 * SECOND, {
        type: "error",
        model: null,
        fields: { trigger_event_id: i % 2 ? "a" : "later" },
      }),
    ]);
    if (i % 2 === 0) {
      await store.insertEvents(p, `s${i}`, [
        eventAt("later", init + 6 * SECOND, { type: "action", model: null }, init + 7 * SECOND),
      ]);
    }
  }
  await store.updateEvents(p, "s3", [patch({ event_id: "a", model: "m3", cost: 9 })]);
  await store.updateSession(p, "s4", { init_us: US0 + 30 * HOUR, init_timestamp: iso(US0 + 30 * HOUR), extra: {} });
  await store.updateSession(p, "s5", { end_state: "Fail", extra: {} });
  await store.deleteSession(p, "s7");
  return p;
}

/** After the migration: breakdowns from the rollups as the exact ones, and a later write counted. */
async function answers(t: Test, store: Store, p: string) {
  const range = { from_us: US0 - 2 * HOUR - 5, to_us: US0 + 40 * HOUR + 5 };
  for (const by of ["model", "type", "tool"] as BreakdownBy[]) {
    t.ok(breakdownRollupPlan(range, by), `${by}: from the rollups`);
    const rolled = await store.analyticsBreakdown(p, range, { by, sort: "events", limit: 100 });
    const exact = await store.analyticsBreakdown(
      p,
      { ...range, min_duration_us: 0 },
      { by, sort: "events", limit: 100 },
    );
    t.equal(rolled.percentiles, "approximate");
    t.strictSame(
      rolled.items.map(({ p50_us, p95_us, p99_us, ...sums }) => sums),
      exact.items.map(({ p50_us, p95_us, p99_us, ...sums }) => sums),
      `${by}: the sums of the exact breakdown`,
    );
  }
  await store.insertEvents(p, "s1", [eventAt("x", US0 + 3 * SECOND, { model: "m9" }, US0 + 8 * SECOND)]);
  const after = await store.analyticsBreakdown(p, range, { by: "model", sort: "events", limit: 100 });
  t.ok(
    after.items.some((g) => g.key === "m9" && g.events === 1 && g.sessions === 1),
    "an event written after the migration counts",
  );
}

// SQLite's rollups are projections since migration 012: test/projections.migration.test.ts.
t.test("PostgreSQL: migration 009 rolls up the events of a version-8 database as the writes do", async (t) => {
  const unavailable = await postgresUnavailable();
  if (unavailable && !postgresRequired()) {
    t.comment(`skipped: ${unavailable}`);
    return;
  }
  const url = await testDatabase(t);
  let store: Store = await openPostgresStore({ url });
  const p = await write(store);
  await store.close();
  const written = await postgresTables(url);
  t.ok((written.event_rollups as unknown[]).length > 10, "the writes rolled up");

  const client = new pg.Client({ connectionString: url });
  await client.connect();
  await client.query(`DROP TABLE session_keys, event_rollups, event_rollup_durations;
    DROP TRIGGER events_rollups_added ON events; DROP TRIGGER events_rollups_changed ON events;
    DROP TRIGGER events_rollups_removed ON events; DROP TRIGGER sessions_event_rollups_changed ON sessions;
    DROP FUNCTION agentmon_session_keys_recount, agentmon_event_rollups_added, agentmon_event_rollups_changed,
      agentmon_event_rollups_removed, agentmon_event_rollups_sessions_changed, agentmon_session_keys_in,
      agentmon_session_keys_out, agentmon_session_keys_changed;
    UPDATE agentmon_schema SET version = 8`);
  await client.end();

  store = await openPostgresStore({ url });
  t.teardown(() => store.close());
  t.strictSame(await postgresTables(url), written, "migration 009 made the rows the writes had made");
  await answers(t, store, p);
});
