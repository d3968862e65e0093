import pg from "pg";
import t, { type Test } from "tap";
import { openPostgresStore } from "../db/postgres/store.ts";
import type { Store } from "../db/store.ts";
import { type BreakdownBy, breakdownRollupPlan } from "../domain/analytics.ts";
import { eventAt } from "./db/contract/values.ts";
import { iso, US0 } from "./db/records.ts";
import { databaseAtVersion } from "./postgres.ts";

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

/** The same rows as text, whatever the engine gave (PostgreSQL's bigints are strings). */
const asText = (rows: unknown[][]) => rows.map((row) => row.map((v) => (v === null ? null : String(v))));

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

// SQLite's event rollups are projections since migration 012: test/projections.migration.test.ts.

/** The projections' rows on PostgreSQL: the rollups, the totals and session_models. */
const POSTGRES_TABLES = {
  event_rollups: TABLES.event_rollups,
  event_rollup_durations: TABLES.event_rollup_durations,
  session_rollups: `SELECT project_id, slot_us, sessions, failures, events, error_events, prompt_tokens, completion_tokens,
      round(cost::numeric, 9)::text FROM session_rollups WHERE sessions <> 0 ORDER BY 1, 2`,
  session_rollup_durations:
    "SELECT project_id, slot_us, bucket, n FROM session_rollup_durations WHERE n <> 0 ORDER BY 1, 2, 3",
  totals: `SELECT id, event_count, llm_count, tool_count, action_count, error_count, prompt_tokens, completion_tokens,
      round(cost::numeric, 9)::text, first_us, last_us, duration_us FROM sessions ORDER BY id`,
  session_models: `SELECT s.id, m.model, m.llm_count, m.prompt_tokens, m.completion_tokens, round(m.cost::numeric, 9)::text
      FROM session_models m JOIN sessions s ON s.pk = m.session_pk ORDER BY 1, 2`,
};

async function postgresRows(client: pg.Client) {
  const found: Record<string, unknown> = {};
  for (const [name, sql] of Object.entries(POSTGRES_TABLES)) {
    found[name] = asText((await client.query<unknown[]>({ text: sql, rowMode: "array" })).rows);
  }
  return found;
}

t.test("PostgreSQL: migration 010's projector makes the rows migration 009's triggers made", async (t) => {
  let triggered: Record<string, unknown> = {};
  // A version-9 database written as the code of then wrote it: rows in, the triggers rolling up.
  const url = await databaseAtVersion(t, 9, async (client) => {
    await client.query("INSERT INTO projects (id, name, created_at) VALUES ('p', 'p', '2026-01-01T00:00:00Z')");
    for (let i = 0; i < 12; i += 1) {
      const init = US0 + i * 37 * 60 * SECOND + i;
      const end = i % 3 ? init + 9 * SECOND : null;
      await client.query(
        `INSERT INTO sessions (id, project_id, init_timestamp, init_us, end_timestamp, end_state, extra)
         VALUES ($1, 'p', $2, $3, $4, $5, '{}')`,
        [`s${i}`, iso(init), init, end === null ? null : iso(end), i % 3 ? (i % 4 ? "Success" : "Fail") : null],
      );
      const events: [
        string,
        string,
        number,
        number | null,
        string | null,
        number | null,
        number | null,
        object,
        string | null,
      ][] = [
        ["a", "llm", init + SECOND, init + i * SECOND, i % 2 ? "m1" : "m2", i, 0.25 * i, {}, null],
        [
          "t",
          "tool",
          init + 2 * SECOND,
          init + 3 * SECOND + i,
          null,
          null,
          null,
          { name: i % 3 ? "search" : "fetch" },
          null,
        ],
        ["u", "tool", init + 2 * SECOND, null, null, null, null, {}, null],
        ["n", "llm", init + 2 * SECOND, init + 4 * SECOND, null, 1, null, {}, null],
        ["e", "error", init + 5 * SECOND, null, null, null, null, { trigger_event_id: i % 2 ? "a" : "later" }, null],
        ["p", "error", init + 5 * SECOND, null, null, null, null, {}, "t"],
      ];
      if (i % 2 === 0)
        events.push(["later", "action", init + 6 * SECOND, init + 7 * SECOND, null, null, null, {}, null]);
      for (const [id, type, at, end, model, prompt, cost, body, parent] of events) {
        await client.query(
          `INSERT INTO events (session_pk, id, type, init_timestamp, init_us, end_timestamp, end_us, model, prompt_tokens,
             cost, body, extra, parent_id)
           VALUES ((SELECT pk FROM sessions WHERE id = $1), $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, '{}', $12)`,
          [
            `s${i}`,
            id,
            type,
            iso(at),
            at,
            end === null ? null : iso(end),
            end,
            model,
            prompt,
            cost,
            JSON.stringify(body),
            parent,
          ],
        );
      }
    }
    await client.query(
      "UPDATE events SET model = 'm3', cost = 9 WHERE id = 'a' AND session_pk = (SELECT pk FROM sessions WHERE id = 's3')",
    );
    await client.query("UPDATE sessions SET init_us = $1, init_timestamp = $2 WHERE id = 's4'", [
      US0 + 30 * HOUR,
      iso(US0 + 30 * HOUR),
    ]);
    await client.query("UPDATE sessions SET end_state = 'Fail' WHERE id = 's5'");
    await client.query("DELETE FROM sessions WHERE id = 's7'");
    triggered = await postgresRows(client);
  });
  if (url === undefined) return;
  t.ok((triggered.event_rollups as unknown[]).length > 10, "the triggers rolled up");
  const store = await openPostgresStore({ url });
  t.teardown(() => store.close());
  while ((await store.projectBatch()) > 0) {}
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  t.teardown(() => client.end());
  t.strictSame(await postgresRows(client), triggered, "the projector's rows are the triggers'");
  await answers(t, store, "p");
});
