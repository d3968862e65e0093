/** Cost (issue 5, part 2): migration 002 upgrades a real version-1 database file. */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import Database from "better-sqlite3";
import t from "tap";
import { schemaVersion } from "../db/sqlite/migrate.ts";
import { openDb } from "../db/sqlite/open.ts";
import { parseTimestamp } from "../domain/timestamps.ts";
import { costOf, read, send } from "./cost.helpers.ts";
import { build, tempDir } from "./helper.ts";

// ----------------------------------------------------------------------------------- migration

t.test("migration 002 upgrades a real version-1 database file", async (t) => {
  const path = join(tempDir(t), "v1.db");
  // A version-1 file, made as agentmon 1 made it: migration 001 alone, user_version 1.
  const v1 = new Database(path);
  v1.pragma("journal_mode = WAL");
  v1.exec(readFileSync(new URL("../db/sqlite/migrations/001-create-tables.sql", import.meta.url), "utf8"));
  v1.pragma("user_version = 1");
  v1.prepare("INSERT INTO projects (id, name, created_at) VALUES ('p1', 'default', '2026-01-01T00:00:00Z')").run();
  v1.prepare(
    `INSERT INTO sessions (id, project_id, init_timestamp, init_us, extra)
     VALUES ('old', 'p1', '2026-11-22T05:00:00Z', ?, '{}')`,
  ).run(Date.UTC(2026, 10, 22, 5) * 1000);
  const insert = v1.prepare(
    `INSERT INTO events (session_pk, id, type, init_timestamp, init_us, end_timestamp, model, prompt_tokens,
       completion_tokens, cost, body, extra)
     VALUES (1, @id, @type, '2026-11-22T05:00:01Z', @init_us, @end, @model, @pt, @ct, @cost, '{}', '{}')`,
  );
  const rows = [
    { id: "paid", type: "llm", end: "2026-11-22T05:00:02Z", model: "gpt-4o-mini", pt: 10, ct: 1, cost: 0.25 },
    { id: "unpaid", type: "llm", end: "2026-11-22T05:00:09.5Z", model: "gpt-4o-mini", pt: 1000, ct: 0, cost: null },
    { id: "tool", type: "tool", end: "2026-11-22T05:00:03.123456Z", model: null, pt: null, ct: null, cost: 3 },
    { id: "open", type: "error", end: null, model: null, pt: null, ct: null, cost: null },
    { id: "odd", type: "action", end: "2026-11-22T05:00:04.120Z", model: null, pt: null, ct: null, cost: null },
  ];
  for (const row of rows) insert.run({ ...row, init_us: Date.UTC(2026, 10, 22, 5, 0, 1) * 1000 });
  v1.close();

  const db = openDb(path);
  t.equal(db.pragma("user_version", { simple: true }), schemaVersion(), "now at the latest version");
  const migrated = db.prepare("SELECT id, cost_source, cost, end_timestamp, end_us FROM events ORDER BY id").all() as {
    id: string;
    cost_source: string;
    cost: number | null;
    end_timestamp: string | null;
    end_us: number | null;
  }[];
  const by = new Map(migrated.map((row) => [row.id, row]));
  t.equal(by.get("paid")?.cost_source, "client", "a cost that was set is the client's");
  t.equal(by.get("tool")?.cost_source, "client");
  t.equal(by.get("unpaid")?.cost_source, "unknown", "no cost: unknown, not priced after the fact");
  t.equal(by.get("unpaid")?.cost, null);
  for (const row of migrated) {
    t.equal(row.end_us, row.end_timestamp === null ? null : parseTimestamp(row.end_timestamp)?.us, `${row.id}: end_us`);
  }
  const indexes = (db.prepare("SELECT name FROM sqlite_master WHERE type = 'index'").all() as { name: string }[]).map(
    (row) => row.name,
  );
  const spans = db.prepare("SELECT count(*) AS n FROM events WHERE parent_id IS NOT NULL OR own_agent_id IS NOT NULL");
  t.equal((spans.get() as { n: number }).n, 0, "migration 003: the old events are no spans");
  const details = db.prepare(
    "SELECT count(*) AS n FROM events WHERE cache_read_tokens IS NOT NULL OR cache_creation_tokens IS NOT NULL OR reasoning_tokens IS NOT NULL",
  );
  t.equal((details.get() as { n: number }).n, 0, "migration 004: the old events have no detail counts");
  t.equal((db.prepare("SELECT count(*) AS n FROM price_imports").get() as { n: number }).n, 0, "and no imported table");
  for (const name of [
    "sessions_by_project_time",
    "sessions_by_project_state",
    "events_by_agent",
    "events_by_parent",
    "sessions_by_conversation",
  ]) {
    t.ok(indexes.includes(name), `index ${name}`);
  }
  t.throws(
    () => db.prepare("UPDATE events SET cost_source = 'guess'").run(),
    /CHECK constraint failed/,
    "cost_source is one of three values",
  );
  db.close();

  t.test("the upgraded file serves the read API", async (t) => {
    const api = await build(t, { dbPath: path });
    const stats = (await read(api, "/v2/sessions/old/stats")).json().stats;
    t.equal(stats.cost, "0.25", "the llm costs the client sent");
    t.equal(stats.last_event_at, "2026-11-22T05:00:09.5Z", "the latest end, from the migrated end_us");
    t.equal(stats.duration_ms, 9500);
    t.strictSame(await costOf(api, "old", "unpaid"), { cost_source: "unknown", cost: undefined });
    const jwt = (await api.withKey("/v2/reauthorize_jwt", { session_id: "old" })).json().jwt as string;
    await send(api, "/v2/update_events", { events: [{ event_id: "unpaid", completion_tokens: 0 }] }, jwt);
    t.strictSame(
      await costOf(api, "old", "unpaid"),
      { cost_source: "table", cost: 0.00015 },
      "the next update of an unknown event prices it",
    );
  });
});
