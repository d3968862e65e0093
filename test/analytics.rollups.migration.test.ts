import t, { type Test } from "tap";
import { openPostgresStore } from "../db/postgres/store.ts";
import type { Store } from "../db/store.ts";
import { seriesFromRollups } from "../domain/analytics.ts";
import { newSession } from "./db/records.ts";
import { databaseAtVersion } from "./postgres.ts";

const US0 = Date.UTC(2026, 0, 1) * 1000;
const HOUR = 3_600_000_000;
const iso = (us: number) => new Date(us / 1000).toISOString();

/** Sessions as an older schema holds them: id, init, end, state, events, errors, prompt, completion, cost, last_us. */
const SESSIONS: [
  string,
  number,
  number | null,
  string | null,
  number,
  number,
  number,
  number,
  number,
  number | null,
][] = [
  ["a", US0 + 60_000_000, US0 + 65_000_000, "Success", 3, 1, 11, 6, 0.75, US0 + 63_000_000],
  ["b", US0 + 120_000_000, null, null, 2, 0, 100, 50, 2, US0 + 128_000_000],
  ["c", US0 + 900_000_000, US0 + 902_000_000, "Fail", 0, 0, 0, 0, 0, null],
  ["d", US0 + HOUR + 5, US0 + 2 * HOUR, "Fail", 1, 1, 1, 1, 0.5, US0 + HOUR + 10],
];
const RANGES = [
  { lo: US0, hi: US0 + HOUR },
  { lo: US0 + HOUR, hi: US0 + 2 * HOUR },
  { lo: US0 + 2 * HOUR, hi: US0 + 3 * HOUR },
];

async function answers(t: Test, store: Store, project: string) {
  t.ok(seriesFromRollups({}, RANGES), "these ranges are answered from the rollups");
  const got = await store.analyticsSeries(project, {}, RANGES);
  t.strictSame(
    got.map((m) => [m.sessions, m.failures, m.events, m.error_events, m.prompt_tokens, m.completion_tokens, m.cost]),
    [
      [3, 1, 5, 1, 111, 56, 2.75],
      [1, 1, 1, 1, 1, 1, 0.5],
      [0, 0, 0, 0, 0, 0, 0],
    ],
    "the rollups hold the sums of the sessions stored before",
  );
  // Durations: a 5 s, b 8 s (its last event), c 2 s: each alone in its bucket, so exact.
  t.strictSame(
    got.map((m) => [m.p50_us, m.p95_us, m.p99_us]),
    [
      [5_000_000, 8_000_000, 8_000_000],
      [HOUR - 5, HOUR - 5, HOUR - 5],
      [null, null, null],
    ],
  );
  t.strictSame(got, await store.analyticsSeries(project, { min_duration_us: 0 }, RANGES), "as the exact scan");
  await store.createSession(project, newSession("e", { init_timestamp: iso(US0 + 2 * HOUR), init_us: US0 + 2 * HOUR }));
  t.strictSame(
    await store.analyticsSeries(project, {}, RANGES),
    await store.analyticsSeries(project, { min_duration_us: 0 }, RANGES),
    "a session written after the migration counts too",
  );
}

// SQLite's rollups are projections since migration 012: test/projections.migration.test.ts.
t.test("PostgreSQL: migration 008 rolls up the sessions of a version-7 database", async (t) => {
  const url = await databaseAtVersion(t, 7, async (client) => {
    await client.query("INSERT INTO projects (id, name, created_at) VALUES ('p1', 'default', '2026-01-01T00:00:00Z')");
    for (const [id, init, end, state, events, errors, prompt, completion, cost, last] of SESSIONS) {
      await client.query(
        `INSERT INTO sessions (id, project_id, init_timestamp, init_us, end_timestamp, end_state, extra, event_count,
           error_count, prompt_tokens, completion_tokens, cost, last_us)
         VALUES ($1, 'p1', $2, $3, $4, $5, '{}', $6, $7, $8, $9, $10, $11)`,
        [id, iso(init), init, end === null ? null : iso(end), state, events, errors, prompt, completion, cost, last],
      );
    }
  });
  if (url === undefined) return;
  const store = await openPostgresStore({ url });
  t.teardown(() => store.close());
  await answers(t, store, "p1");
});
