import { join } from "node:path";
import t, { type Test } from "tap";
import { openPostgresStore } from "../db/postgres/store.ts";
import { openDb } from "../db/sqlite/open.ts";
import { sqliteStore } from "../db/sqlite/store.ts";
import type { Store } from "../db/store.ts";
import { fileAtVersion, tempDir } from "./helper.ts";
import { databaseAtVersion } from "./postgres.ts";

const US0 = Date.UTC(2026, 0, 1) * 1000;
const iso = (us: number) => new Date(us / 1000).toISOString();

/** Rows as the older schema holds them: a, ended after 5 s; b, running, its last event ends at 7 s; c, no events. */
const SESSIONS = [
  ["a", US0, US0 + 5_000_000],
  ["b", US0 + 1_000_000, null],
  ["c", US0 + 2_000_000, null],
] as const;
const EVENTS: [
  string,
  string,
  string,
  number,
  number | null,
  string | null,
  number | null,
  number | null,
  number | null,
][] = [
  // session, id, type, init_us, end_us, model, prompt, completion, cost
  ["a", "a1", "llm", US0 + 1_000_000, US0 + 2_000_000, "m1", 10, 5, 0.5],
  ["a", "a2", "llm", US0 + 1_500_000, null, "m2", 1, 1, 0.25],
  ["a", "a3", "error", US0 + 3_000_000, null, null, null, null, null],
  ["b", "b1", "llm", US0 + 1_000_000, US0 + 8_000_000, "m1", 100, 50, 2],
  ["b", "b2", "tool", US0 + 2_000_000, null, null, 7, 7, 9],
];

async function answersAsCounted(t: Test, store: Store, project: string) {
  const a = await store.readSession(project, "a", { agents: false, events: false });
  t.strictSame(a?.totals, {
    events: 3,
    event_counts: { llm: 2, tool: 0, action: 0, error: 1 },
    prompt_tokens: 11,
    completion_tokens: 6,
    cache_read_tokens: 0,
    cache_creation_tokens: 0,
    reasoning_tokens: 0,
    cost: 0.75,
    first_us: US0 + 1_000_000,
    last_us: US0 + 3_000_000,
  });
  const b = await store.readSession(project, "b", { agents: false, events: false });
  t.equal(b?.totals.events, 2);
  t.equal(b?.totals.prompt_tokens, 100, "tokens of llm events only");
  t.equal(b?.totals.last_us, US0 + 8_000_000);
  const order = async (by: "duration" | "cost" | "tokens" | "events") =>
    (await store.listSessions(project, {}, undefined, 10, { by, order: "desc" })).items.map((i) => i.session.id);
  // Durations: a 5 s (its end), b 7 s (its last event), c 0.
  t.strictSame(await order("duration"), ["b", "a", "c"]);
  t.strictSame(await order("cost"), ["b", "a", "c"]);
  t.strictSame(await order("events"), ["a", "b", "c"]);
  const withModel = async (model: string) =>
    (await store.listSessions(project, { model }, undefined, 10)).items.map((i) => i.session.id);
  t.strictSame(await withModel("m1"), ["b", "a"]);
  t.strictSame(await withModel("m2"), ["a"]);
  t.strictSame(
    (await store.listSessions(project, { has_errors: true }, undefined, 10)).items.map((i) => i.session.id),
    ["a"],
  );
  t.strictSame(
    (
      await store.listSessions(project, { min_duration_us: 5_000_000, max_duration_us: 5_000_000 }, undefined, 10)
    ).items.map((i) => i.session.id),
    ["a"],
  );
}

t.test("SQLite: migration 007 counts the sessions of a version-6 file", async (t) => {
  const path = join(tempDir(t), "v6.db");
  const v6 = fileAtVersion(path, 6);
  v6.prepare("INSERT INTO projects (id, name, created_at) VALUES ('p1', 'default', '2026-01-01T00:00:00Z')").run();
  const session = v6.prepare(
    "INSERT INTO sessions (id, project_id, init_timestamp, init_us, end_timestamp, extra) VALUES (?, 'p1', ?, ?, ?, '{}')",
  );
  for (const [id, init, end] of SESSIONS) session.run(id, iso(init), init, end === null ? null : iso(end));
  const event = v6.prepare(
    `INSERT INTO events (session_pk, id, type, init_timestamp, init_us, end_timestamp, end_us, model, prompt_tokens,
       completion_tokens, cost, body, extra)
     VALUES ((SELECT pk FROM sessions WHERE id = ?), ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, '{}', '{}')`,
  );
  for (const [s, id, type, init, end, model, prompt, completion, cost] of EVENTS) {
    event.run(s, id, type, iso(init), init, end === null ? null : iso(end), end, model, prompt, completion, cost);
  }
  v6.close();

  const store = sqliteStore(openDb(path));
  t.teardown(() => store.close());
  await answersAsCounted(t, store, "p1");
});

t.test("PostgreSQL: migration 005 counts the sessions of a version-4 database", async (t) => {
  const url = await databaseAtVersion(t, 4, async (client) => {
    await client.query("INSERT INTO projects (id, name, created_at) VALUES ('p1', 'default', '2026-01-01T00:00:00Z')");
    for (const [id, init, end] of SESSIONS) {
      await client.query(
        "INSERT INTO sessions (id, project_id, init_timestamp, init_us, end_timestamp, extra) VALUES ($1, 'p1', $2, $3, $4, '{}')",
        [id, iso(init), init, end === null ? null : iso(end)],
      );
    }
    for (const [s, id, type, init, end, model, prompt, completion, cost] of EVENTS) {
      await client.query(
        `INSERT INTO events (session_pk, id, type, init_timestamp, init_us, end_timestamp, end_us, model, prompt_tokens,
           completion_tokens, cost, body, extra)
         VALUES ((SELECT pk FROM sessions WHERE id = $1), $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, '{}', '{}')`,
        [s, id, type, iso(init), init, end === null ? null : iso(end), end, model, prompt, completion, cost],
      );
    }
  });
  if (url === undefined) return;
  const store = await openPostgresStore({ url });
  t.teardown(() => store.close());
  await answersAsCounted(t, store, "p1");
});
