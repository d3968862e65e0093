/** The SQLite adapter without HTTP: migrations, pragmas and the Store's transactional promises. */
import { join } from "node:path";
import Database from "better-sqlite3";
import t, { type Test } from "tap";
import { migrate } from "../../db/sqlite/migrate.ts";
import { openDb } from "../../db/sqlite/open.ts";
import { sqliteStore } from "../../db/sqlite/store.ts";
import { readEvent } from "../../domain/records.ts";
import type { EventRecord, NewSession } from "../../domain/types.ts";
import { inspect, tempDir } from "../helper.ts";

/** A database path in a folder that does not exist yet, in a temporary folder removed when `t` ends. */
const tempDb = (t: Test) => join(tempDir(t), "nested", "agentmon.db");

const session = (id: string): NewSession => ({
  id,
  init_timestamp: "2026-11-22T05:00:00Z",
  init_us: 1_795_323_600_000_000,
  end_timestamp: null,
  end_state: null,
  end_state_reason: null,
  tags: ["a"],
  host_env: null,
  extra: { video: null, nested: { deep: [1, { x: null }] } },
});

const event = (id: string, cost: number | null = null, type: EventRecord["type"] = "llm"): EventRecord => ({
  id,
  type,
  init_timestamp: "2026-11-22T05:00:01Z",
  init_us: 1_795_323_601_000_000,
  end_timestamp: null,
  agent_id: null,
  model: "m",
  prompt_tokens: 1,
  completion_tokens: 2,
  cost,
  fields: { prompt: "hi" },
  aliases: [],
  extra: {},
});

t.test("migrations: a new file is created with its folder, WAL on, schema at the latest version (2)", async (t) => {
  const path = tempDb(t);
  const db = openDb(path);
  t.equal(db.pragma("journal_mode", { simple: true }), "wal");
  t.equal(db.pragma("foreign_keys", { simple: true }), 1);
  t.equal(db.pragma("user_version", { simple: true }), 2);
  t.equal(migrate(db), 2, "running again changes nothing");
  db.close();
  const again = openDb(path);
  t.equal(again.pragma("user_version", { simple: true }), 2, "reopening keeps the version");
  again.close();
});

t.test("migrations: a database from a newer agentmon is refused", async (t) => {
  const path = tempDb(t);
  openDb(path).close();
  const raw = new Database(path);
  raw.pragma("user_version = 99");
  raw.close();
  t.throws(() => openDb(path), /schema version 99, newer than this agentmon/);
});

t.test("tables are STRICT: a wrong type is refused by SQLite itself", async (t) => {
  const db = openDb(":memory:");
  t.throws(() => db.prepare("INSERT INTO projects (id, name, created_at) VALUES (1, 'p', x'00')").run());
  db.close();
});

t.test("meta values keep the first value written (the JWT secret survives restarts)", async (t) => {
  const path = tempDb(t);
  const store = sqliteStore(openDb(path));
  t.equal(await store.metaValue("jwt_secret", "first"), "first");
  t.equal(await store.metaValue("jwt_secret", "second"), "first");
  await store.close();
  const reopened = sqliteStore(openDb(path));
  t.equal(await reopened.metaValue("jwt_secret", "third"), "first");
  await reopened.close();
});

t.test("api keys: one project per name, lookup by hash and id, revocation", async (t) => {
  const store = sqliteStore(openDb(":memory:"));
  const a = await store.createApiKey("hash-a", "aaaaaaaa", "default", "2026-11-22T00:00:00Z");
  const b = await store.createApiKey("hash-b", "bbbbbbbb", "default", "2026-11-22T00:00:01Z");
  const c = await store.createApiKey("hash-c", "cccccccc", "other", "2026-11-22T00:00:02Z");
  t.equal(a.project_id, b.project_id, "same project name, same project");
  t.not(a.project_id, c.project_id);
  t.same(await store.apiKeyByHash("hash-b"), b);
  t.same(await store.apiKeyById(c.id), c);
  t.equal(await store.apiKeyByHash("nope"), undefined);
  await store.revokeApiKey(a.id, "2026-11-22T01:00:00Z");
  t.equal((await store.apiKeyById(a.id))?.revoked_at, "2026-11-22T01:00:00Z");
  await store.revokeApiKey(a.id, "2026-11-22T02:00:00Z");
  t.equal((await store.apiKeyById(a.id))?.revoked_at, "2026-11-22T01:00:00Z", "a second revoke keeps the first time");
  t.same(
    (await store.listApiKeys()).map((k) => k.prefix),
    ["aaaaaaaa", "bbbbbbbb", "cccccccc"],
  );
  await store.close();
});

t.test("sessions: created once, owned by one project, updated field by field", async (t) => {
  const store = sqliteStore(openDb(":memory:"));
  const p1 = (await store.createApiKey("h1", "11111111", "p1", "now")).project_id;
  const p2 = (await store.createApiKey("h2", "22222222", "p2", "now")).project_id;
  t.same(await store.createSession(p1, session("s")), { created: true, projectId: p1 });
  t.same(await store.createSession(p1, { ...session("s"), tags: ["changed"] }), { created: false, projectId: p1 });
  t.same(
    await store.createSession(p2, session("s")),
    { created: false, projectId: p1 },
    "another project sees the owner",
  );
  t.same((await inspect(store).getSession("s"))?.tags, ["a"], "a repeated create overwrites nothing");
  t.same(
    (await inspect(store).getSession("s"))?.extra,
    session("s").extra,
    "unknown fields round-trip, nulls included",
  );

  t.equal(await store.updateSession(p2, "s", { extra: {} }), undefined, "another project cannot update it");
  const updated = await store.updateSession(p1, "s", { end_state: "Fail", extra: { video: "v", more: 1 } });
  t.equal(updated?.session.end_state, "Fail");
  t.same(updated?.session.tags, ["a"], "fields not given are unchanged");
  t.same(updated?.session.extra, { video: "v", nested: { deep: [1, { x: null }] }, more: 1 }, "extras merge");
  t.same(await inspect(store).getSession("s"), updated?.session, "what update answers is what is stored");
  await store.close();
});

t.test("events: stored once per id and session, retries keep the first copy, cost sums llm events", async (t) => {
  const store = sqliteStore(openDb(":memory:"));
  const p = (await store.createApiKey("h", "hhhhhhhh", "p", "now")).project_id;
  await store.createSession(p, session("s1"));
  await store.createSession(p, session("s2"));
  t.equal(await store.insertEvents(p, "s1", [event("e1", 0.25), event("e2", 0.5), event("t", 9, "tool")]), true);
  t.equal(await store.insertEvents(p, "s1", [{ ...event("e1", 100) }]), true, "a retry is accepted");
  t.equal(await store.insertEvents(p, "s2", [event("e1", 1)]), true, "the same id in another session is another event");
  t.equal(await store.insertEvents(p, "nope", [event("x")]), false, "unknown session");
  t.equal(await store.insertEvents("other-project", "s1", [event("x")]), false, "session of another project");
  const stored = await inspect(store).listEvents("s1");
  t.same(stored.map((e) => e.id).sort(), ["e1", "e2", "t"]);
  t.equal(stored.find((e) => e.id === "e1")?.cost, 0.25, "the first copy stays");
  t.equal(await inspect(store).tokenCost("s1"), 0.75, "only llm events count");
  t.equal(await inspect(store).tokenCost("s2"), 1);
  await store.close();
});

t.test("updateEvents: all or nothing, unknown ids reported with their index", async (t) => {
  const store = sqliteStore(openDb(":memory:"));
  const p = (await store.createApiKey("h", "hhhhhhhh", "p", "now")).project_id;
  await store.createSession(p, session("s"));
  await store.insertEvents(p, "s", [event("e1"), event("e2")]);
  const patch = (raw: Record<string, unknown>) => ({
    ...readEvent(raw, "events[0]", [], "event_id"),
    id: String(raw.event_id),
  });

  const refused = await store.updateEvents(p, "s", [
    patch({ event_id: "e1", model: "new" }),
    patch({ event_id: "zz" }),
  ]);
  t.same(refused.status === "unknown" && refused.unknown.map((u) => [u.index, u.id]), [[1, "zz"]]);
  t.equal((await inspect(store).listEvents("s")).find((e) => e.id === "e1")?.model, "m", "nothing was applied");

  const done = await store.updateEvents(p, "s", [
    patch({ event_id: "e1", model: "new" }),
    patch({ event_id: "e1", completion: "done" }),
    patch({ event_id: "e2", cost: 2 }),
  ]);
  t.same(done, { status: "updated", updated: 2 }, "distinct events are counted");
  const e1 = (await inspect(store).listEvents("s")).find((e) => e.id === "e1");
  t.equal(e1?.model, "new");
  t.same(e1?.fields, { prompt: "hi", completion: "done" }, "entries for the same event apply in order");
  t.same(await store.updateEvents(p, "missing", []), { status: "no-session" });
  await store.close();
});

t.test("agents: upsert keeps extras and the name when a repeat leaves it out", async (t) => {
  const store = sqliteStore(openDb(":memory:"));
  const p = (await store.createApiKey("h", "hhhhhhhh", "p", "now")).project_id;
  await store.createSession(p, session("s"));
  t.equal(await store.upsertAgent(p, "s", { id: "a", name: "one", extra: { role: "planner" } }), true);
  t.equal(await store.upsertAgent(p, "s", { id: "a", name: null, extra: { model: "x" } }), true);
  t.same(await inspect(store).listAgents("s"), [{ id: "a", name: "one", extra: { role: "planner", model: "x" } }]);
  await store.upsertAgent(p, "s", { id: "a", name: "two", extra: {} });
  t.equal((await inspect(store).listAgents("s"))[0]?.name, "two");
  t.equal(await store.upsertAgent("other", "s", { id: "b", name: null, extra: {} }), false);
  await store.close();
});
