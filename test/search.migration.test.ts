import { join } from "node:path";
import t, { type Test } from "tap";
import { schemaVersion as postgresVersion } from "../db/postgres/migrate.ts";
import { openPostgresStore } from "../db/postgres/store.ts";
import { schemaVersion } from "../db/sqlite/migrate.ts";
import { openDb } from "../db/sqlite/open.ts";
import { sqliteStore } from "../db/sqlite/store.ts";
import type { Store } from "../db/store.ts";
import { parseSearch, type SearchQuery } from "../domain/search.ts";
import { fileAtVersion, tempDir } from "./helper.ts";
import { databaseAtVersion } from "./postgres.ts";

const US0 = 1_795_323_600_000_000;
const BODY = JSON.stringify({
  prompt: [
    { role: "user", content: "Where is the Okapi?" },
    { role: "assistant", content: "In the forest" },
  ],
  completion: "Ituri rainforest",
});
/** Rows as an older version wrote them: two sessions, three events. */
const SESSIONS: [number, string, string | null, string | null][] = [
  [1, "older", "Ran out of budget", null],
  [2, "newer", null, '["nightly","régression"]'],
];
const EVENTS: [number, string, string, string][] = [
  [1, "e1", "llm", BODY],
  [1, "e2", "tool", JSON.stringify({ name: "lookup", input: { id: 12 } })],
  [2, "e3", "error", JSON.stringify({ error_type: "ValueError", details: "bad okapi count" })],
];

const search = (q: string) => parseSearch(q) as SearchQuery;

async function findsOldRows(t: Test, store: Store, project: string) {
  const list = async (q: string) =>
    (await store.listSessions(project, { q: search(q) }, undefined, 10)).items.map((item) => ({
      id: item.session.id,
      field: item.match?.field,
      event: item.match?.event_id,
    }));
  t.strictSame(await list("okapi"), [
    { id: "newer", field: "details", event: "e3" },
    { id: "older", field: "prompt", event: "e1" },
  ]);
  t.strictSame(await list("ituri"), [{ id: "older", field: "completion", event: "e1" }]);
  t.strictSame(await list('"12"'), [{ id: "older", field: "input", event: "e2" }]);
  t.strictSame(await list("budget"), [{ id: "older", field: "end_state_reason", event: null }]);
  t.strictSame(await list("regression nightly"), [{ id: "newer", field: "tags", event: null }]);
  t.strictSame(await list("lookup"), [], "a tool's name is not searched");
  t.strictSame(await list("assistant"), [], "nor role values");
  // New writes after the migration are indexed as well.
  await store.insertEvents(project, "newer", [
    {
      id: "e4",
      type: "llm",
      init_timestamp: "2026-11-22T05:00:01Z",
      init_us: US0 + 1_000_000,
      end_timestamp: null,
      agent_id: null,
      model: null,
      prompt_tokens: null,
      completion_tokens: null,
      cost: null,
      fields: { prompt: "zebra crossing" },
      aliases: [],
      extra: {},
    },
  ]);
  t.strictSame(await list("zebra"), [{ id: "newer", field: "prompt", event: "e4" }], "a new event");
}

t.test("SQLite: migration 008 indexes a version-7 file's events and sessions", async (t) => {
  const path = join(tempDir(t), "v7.db");
  const v7 = fileAtVersion(path, 7);
  v7.prepare("INSERT INTO projects (id, name, created_at) VALUES ('p1', 'default', '2026-01-01T00:00:00Z')").run();
  for (const [pk, id, reason, tags] of SESSIONS) {
    v7.prepare(
      `INSERT INTO sessions (pk, id, project_id, init_timestamp, init_us, end_state_reason, tags, extra)
       VALUES (?, ?, 'p1', ?, ?, ?, ?, '{}')`,
    ).run(pk, id, new Date((US0 + pk) / 1000).toISOString(), US0 + pk, reason, tags);
  }
  for (const [session, id, type, body] of EVENTS) {
    v7.prepare(
      `INSERT INTO events (session_pk, id, type, init_timestamp, init_us, body, extra)
       VALUES (?, ?, ?, '2026-11-22T05:00:00Z', ?, ?, '{}')`,
    ).run(session, id, type, US0, body);
  }
  v7.close();

  const db = openDb(path);
  t.equal(db.pragma("user_version", { simple: true }), schemaVersion(), "now at the latest version");
  t.equal(db.prepare("SELECT count(*) FROM event_search").pluck().get(), 3, "every event with searched text");
  t.equal(db.prepare("SELECT count(*) FROM session_search").pluck().get(), 2, "every session with some");
  const store = sqliteStore(db, { checkpointer: false });
  t.teardown(() => store.close());
  await findsOldRows(t, store, "p1");
});

t.test("PostgreSQL: migration 006 indexes a version-5 database's events and sessions", async (t) => {
  const url = await databaseAtVersion(t, 5, async (client) => {
    await client.query("INSERT INTO projects (id, name, created_at) VALUES ('p1', 'default', '2026-01-01T00:00:00Z')");
    for (const [, id, reason, tags] of SESSIONS) {
      await client.query(
        `INSERT INTO sessions (id, project_id, init_timestamp, init_us, end_state_reason, tags, extra)
         VALUES ($1, 'p1', $2, $3, $4, $5, '{}')`,
        [
          id,
          new Date((US0 + (id === "older" ? 1 : 2)) / 1000).toISOString(),
          US0 + (id === "older" ? 1 : 2),
          reason,
          tags === null ? null : JSON.parse(tags),
        ],
      );
    }
    for (const [session, id, type, body] of EVENTS) {
      await client.query(
        `INSERT INTO events (session_pk, id, type, init_timestamp, init_us, body, extra)
         VALUES ((SELECT pk FROM sessions WHERE id = $1), $2, $3, '2026-11-22T05:00:00Z', $4, $5, '{}')`,
        [session === 1 ? "older" : "newer", id, type, US0, body],
      );
    }
  });
  if (url === undefined) return;
  const store = await openPostgresStore({ url });
  t.teardown(() => store.close());
  t.equal(await store.ping(new Date().toISOString()), postgresVersion(), "now at the latest version");
  await findsOldRows(t, store, "p1");
});

t.test(
  "SQLite: migration 017 indexes a version-16 file's sessions with their words folded as queries are",
  async (t) => {
    const path = join(tempDir(t), "v16.db");
    const v16 = fileAtVersion(path, 16);
    v16.prepare("INSERT INTO projects (id, name, created_at) VALUES ('p1', 'default', '2026-01-01T00:00:00Z')").run();
    const insert = v16.prepare(
      `INSERT INTO sessions (pk, id, project_id, init_timestamp, init_us, end_state_reason, tags, extra)
     VALUES (?, ?, 'p1', '2026-11-22T05:00:00Z', ?, ?, ?, '{}')`,
    );
    insert.run(1, "greek", US0 + 1, "Done: ÄÖÜ Σίσυφος", null);
    insert.run(2, "tags", US0 + 2, null, '["Ωμέγα night", "régression"]');
    // What version 16 indexed: unicode61's own folding of the raw text keeps the tonos.
    t.equal(
      v16.prepare("SELECT count(*) FROM session_search WHERE session_search MATCH ?").pluck().get('"σισυφ"*'),
      0,
      "before: the folded query misses",
    );
    v16.close();

    const db = openDb(path);
    t.equal(db.pragma("user_version", { simple: true }), schemaVersion(), "now at the latest version");
    const store = sqliteStore(db, { checkpointer: false });
    t.teardown(() => store.close());
    const list = async (q: string) =>
      (await store.listSessions("p1", { q: search(q) }, undefined, 10)).items.map((item) => [
        item.session.id,
        item.match?.field,
      ]);
    t.strictSame(await list("ΣΊΣΥΦ"), [["greek", "end_state_reason"]], "a Greek prefix, its tonos folded");
    t.strictSame(
      await list('"done äöü σίσυφος"'),
      [["greek", "end_state_reason"]],
      "a phrase: the words keep their order",
    );
    t.strictSame(await list('"äöü done"'), [], "and only that order");
    t.strictSame(await list("ωμεγα"), [["tags", "tags"]]);
    t.strictSame(await list("regression"), [["tags", "tags"]]);
    await store.createSession("p1", {
      id: "new",
      init_timestamp: "2026-11-22T05:00:00Z",
      init_us: US0 + 3,
      end_timestamp: null,
      end_state: "Fail",
      end_state_reason: "Ἀχιλλεύς lost",
      tags: null,
      host_env: null,
      extra: {},
    });
    t.strictSame(await list("αχιλλευς"), [["new", "end_state_reason"]], "a session written after the migration");
  },
);
