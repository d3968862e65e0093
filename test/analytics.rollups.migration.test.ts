import { join } from "node:path";
import t, { type Test } from "tap";
import { openPostgresStore } from "../db/postgres/store.ts";
import { openDb } from "../db/sqlite/open.ts";
import { sqliteStore } from "../db/sqlite/store.ts";
import type { Store } from "../db/store.ts";
import { seriesFromRollups } from "../domain/analytics.ts";
import { newSession } from "./db/records.ts";
import { fileAtVersion, tempDir } from "./helper.ts";
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
  ["d", US0 + HOUR + 5, US0 + 2 * HOUR, "Fail", 2, 1, 1, 1, 0.5, US0 + HOUR + 10],
];

/**
 * The events behind those totals (the projections count them again from the raw rows, decision
 * 033): an llm event with the tokens and cost ending at last_us, the errors, actions for the rest.
 * Each: id, type, init_us, end_us, model, prompt, completion, cost.
 */
const eventsOf = ([, init, , , events, errors, prompt, completion, cost, last]: (typeof SESSIONS)[number]) =>
  Array.from({ length: events }, (_, i) =>
    i === 0
      ? (["l", "llm", init + 1, last, "m", prompt, completion, cost] as const)
      : ([`x${i}`, i <= errors ? "error" : "action", init + 1, null, null, null, null, null] as const),
  );
const EVENT_INSERT = `INSERT INTO events (session_pk, id, type, init_timestamp, init_us, end_timestamp, end_us, model,
  prompt_tokens, completion_tokens, cost, body, extra)`;
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
      [1, 1, 2, 1, 1, 1, 0.5],
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

t.test("SQLite: migration 010 rolls up the sessions of a version-9 file", async (t) => {
  const path = join(tempDir(t), "v9.db");
  const v8 = fileAtVersion(path, 9);
  v8.prepare("INSERT INTO projects (id, name, created_at) VALUES ('p1', 'default', '2026-01-01T00:00:00Z')").run();
  const session = v8.prepare(
    `INSERT INTO sessions (id, project_id, init_timestamp, init_us, end_timestamp, end_state, extra, event_count,
       error_count, prompt_tokens, completion_tokens, cost, last_us)
     VALUES (?, 'p1', ?, ?, ?, ?, '{}', ?, ?, ?, ?, ?, ?)`,
  );
  const event = v8.prepare(
    `${EVENT_INSERT} VALUES ((SELECT pk FROM sessions WHERE id = ?), ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, '{}', '{}')`,
  );
  for (const row of SESSIONS) {
    const [id, init, end, state, events, errors, prompt, completion, cost, last] = row;
    session.run(
      id,
      iso(init),
      init,
      end === null ? null : iso(end),
      state,
      events,
      errors,
      prompt,
      completion,
      cost,
      last,
    );
    for (const [e, type, at, until, model, p, c, k] of eventsOf(row)) {
      event.run(id, e, type, iso(at), at, until === null ? null : iso(until), until, model, p, c, k);
    }
  }
  // Migration 007's triggers set duration_us of an ended session; b's from its last event.
  v8.prepare(
    "UPDATE sessions SET duration_us = max(0, last_us - init_us) WHERE end_timestamp IS NULL AND last_us IS NOT NULL",
  ).run();
  v8.close();

  const store = sqliteStore(openDb(path));
  t.teardown(() => store.close());
  await answers(t, store, "p1");
});

t.test("PostgreSQL: migration 008 rolls up the sessions of a version-7 database", async (t) => {
  const url = await databaseAtVersion(t, 7, async (client) => {
    await client.query("INSERT INTO projects (id, name, created_at) VALUES ('p1', 'default', '2026-01-01T00:00:00Z')");
    // The totals by migration 005's triggers, from the events.
    for (const row of SESSIONS) {
      const [id, init, end, state] = row;
      await client.query(
        `INSERT INTO sessions (id, project_id, init_timestamp, init_us, end_timestamp, end_state, extra)
         VALUES ($1, 'p1', $2, $3, $4, $5, '{}')`,
        [id, iso(init), init, end === null ? null : iso(end), state],
      );
      for (const [e, type, at, until, model, p, c, k] of eventsOf(row)) {
        await client.query(
          `${EVENT_INSERT} VALUES ((SELECT pk FROM sessions WHERE id = $1), $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, '{}', '{}')`,
          [id, e, type, iso(at), at, until === null ? null : iso(until), until, model, p, c, k],
        );
      }
    }
  });
  if (url === undefined) return;
  const store = await openPostgresStore({ url });
  t.teardown(() => store.close());
  await answers(t, store, "p1");
});
