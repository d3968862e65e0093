/**
 * The storage thread (db/thread.ts, docs/decisions/008-storage-thread.md): a file database's
 * store runs in a worker and every call is a message. These tests hold it to the in-thread
 * store's behaviour: the same answers, a write settled only once committed (G7), errors that keep
 * their meaning (O4), a bounded backlog (O2), and what happens when the thread stops.
 */
import { existsSync } from "node:fs";
import { join } from "node:path";
import Database from "better-sqlite3";
import t, { type Test } from "tap";
import { SchemaMismatch, type StorageFault } from "../../db/errors.ts";
import { schemaVersion } from "../../db/sqlite/migrate.ts";
import { openDb } from "../../db/sqlite/open.ts";
import { sqliteStore } from "../../db/sqlite/store.ts";
import { openThreadedStore, type ThreadedStore } from "../../db/sqlite/thread.ts";
import type { Store } from "../../db/store.ts";
import type { EventRecord } from "../../domain/types.ts";
import { inspect, tempDir } from "../helper.ts";
import { newEvent, newSession, patch, US0 } from "./records.ts";

const session = (id: string, tags: string[] | null = null) =>
  newSession(id, { tags, host_env: { OS: { OS: "Linux" } }, extra: { unknown: [1, null, { deep: "ok" }] } });

const event = (id: string, model = "gpt-4o-mini") =>
  newEvent(id, {
    init_timestamp: `2026-11-22T05:00:0${id.length % 10}Z`,
    init_us: US0 + id.length * 1_000_000,
    end_timestamp: "2026-11-22T05:00:09.123456Z",
    agent_id: "agent-1",
    model,
    prompt_tokens: 100,
    completion_tokens: 20,
    fields: { prompt: [{ role: "user", content: "hi ✓ \u0000 '; DROP TABLE events; --" }] },
    extra: { __proto__: "kept", n: 1.5 },
  });
const events = (prefix: string, n: number) => Array.from({ length: n }, (_, i) => event(`${prefix}-${i}`));

async function threaded(t: Test, options: { maxBacklog?: number } = {}) {
  const path = join(tempDir(t), "agentmon.db");
  const failures: Error[] = [];
  const store = await openThreadedStore({ path, ...options, onFailure: (error) => failures.push(error) });
  t.teardown(() => store.close());
  const project = (await store.createApiKey("hash", "hhhhhhhh", "p", "2026-11-22T00:00:00Z")).project_id;
  return { path, store, project, failures };
}

/** Every kind of call, in order, answers collected; project ids are replaced by "P". */
async function script(store: Store) {
  const key = await store.createApiKey("hash-1", "prefix-1", "team", "2026-11-22T00:00:00Z");
  const p = key.project_id;
  const answers: unknown[] = [key.project_name, key.prefix];
  answers.push(await store.createSession(p, session("s1", ["a", "b"])));
  answers.push(await store.createSession(p, session("s1")));
  answers.push(await store.createSession(p, session("s2")));
  answers.push(await store.insertEvents(p, "s1", events("e", 30)));
  answers.push(await store.insertEvents(p, "s1", [event("e-0", "changed")]));
  answers.push(await store.insertEvents(p, "missing", [event("x")]));
  answers.push(await store.updateEvents(p, "s1", [patch({ event_id: "e-1", model: "gpt-4o", prompt_tokens: 7 })]));
  answers.push(await store.updateEvents(p, "s1", [patch({ event_id: "nope" })]));
  answers.push(await store.updateSession(p, "s1", { end_state: "Success", tags: ["z"], extra: { more: true } }));
  answers.push(await store.upsertAgent(p, "s1", { id: "agent-1", name: "first", extra: { x: 1 } }));
  answers.push(await store.upsertAgent(p, "s1", { id: "agent-1", name: null, extra: { y: 2 } }));
  answers.push(await inspect(store).getSession("s1"));
  answers.push(await inspect(store).tokenCost("s1"));
  answers.push(await inspect(store).listEvents("s1"));
  answers.push(await inspect(store).listAgents("s1"));
  answers.push(await store.listSessions(p, {}, undefined, 10));
  answers.push(await store.readSession(p, "s1", { agents: true, events: true }));
  answers.push(await store.listEventsPage(p, "s1", { limit: 7, types: ["llm"] }));
  answers.push(await store.deleteSession(p, "s2"));
  answers.push(await store.deleteSession(p, "s2"));
  answers.push(await store.metaValue("m", "first"));
  answers.push(await store.metaValue("m", "second"));
  answers.push(await store.ping("2026-11-22T06:00:00Z"));
  answers.push((await store.apiKeyByHash("hash-1"))?.id === key.id);
  answers.push((await store.apiKeyById(key.id))?.prefix);
  await store.revokeApiKey(key.id, "2026-11-22T07:00:00Z");
  answers.push((await store.apiKeyById(key.id))?.revoked_at);
  answers.push((await store.listApiKeys()).map((k) => [k.prefix, k.revoked_at]));
  return JSON.parse(JSON.stringify(answers).replaceAll(p, "P"));
}

t.test("every call answers through the storage thread exactly as in-thread", async (t) => {
  const dir = tempDir(t);
  const inThread = sqliteStore(openDb(join(dir, "a.db")));
  const expected = await script(inThread);
  await inThread.close();
  const thread = await openThreadedStore({ path: join(dir, "b.db") });
  const actual = await script(thread);
  await thread.close();
  t.same(actual, expected);
  t.ok(JSON.stringify(expected).includes("DROP TABLE"), "the script did store and read events back");
});

t.test("G7: a write settles only once it is committed, and calls apply in the order made", async (t) => {
  const { path, store, project } = await threaded(t);
  const reader = new Database(path, { readonly: true });
  t.teardown(() => reader.close());
  const count = reader.prepare("SELECT count(*) FROM events").pluck();
  // Not awaited one by one: the session must exist for the events, and the update must see them.
  const created = store.createSession(project, session("s"));
  const inserted = store.insertEvents(project, "s", events("e", 500));
  const updated = store.updateEvents(project, "s", [patch({ event_id: "e-499", model: "last" })]);
  const sawEvents = inserted.then(() => count.get());
  t.same(await Promise.all([created, inserted, updated]), [
    { created: true, projectId: project },
    500,
    { status: "updated", updated: 1 },
  ]);
  t.equal(await sawEvents, 500, "another connection sees every row when the call resolves");
  t.equal((await inspect(store).listEvents("s")).find((e) => e.id === "e-499")?.model, "last");
});

t.test("small calls of one turn share a message; a large one goes at once, in order", async (t) => {
  const { store, project } = await threaded(t);
  await store.createSession(project, session("s"));
  const sent: number[] = [];
  const post = store.thread.postMessage.bind(store.thread);
  store.thread.postMessage = (calls: unknown[]) => {
    sent.push(calls.length);
    post(calls);
  };
  t.teardown(() => {
    store.thread.postMessage = post;
  });
  // One turn: 20 one-event calls, a call of 50 events (one of them an id sent before, in another
  // model), then 20 more small ones. The first copy of an id is kept (E3), so the order shows.
  const first = Array.from({ length: 20 }, (_, i) => store.insertEvents(project, "s", [event(`a-${i}`)]));
  const large = store.insertEvents(project, "s", [event("a-3", "second"), ...events("b", 49)]);
  const after = Array.from({ length: 20 }, (_, i) => store.insertEvents(project, "s", [event(`c-${i}`)]));
  t.same(sent, [20, 1], "the waiting small calls went first, in one message, then the large one");
  t.same(await Promise.all(first), Array(20).fill(1));
  t.equal(await large, 49, "a-3 was stored already: the small call ran first");
  t.same(await Promise.all(after), Array(20).fill(1));
  t.same(sent, [20, 1, 20], "the small calls after it went together at the end of the turn");
  const stored = await inspect(store).listEvents("s");
  t.equal(stored.length, 89);
  t.equal(stored.find((e) => e.id === "a-3")?.model, "gpt-4o-mini");
});

t.test("O4: errors cross the thread with their meaning", async (t) => {
  const { path, store, project } = await threaded(t);
  await store.createSession(project, session("s"));
  const bad = { ...event("b"), cost_source: "bogus" } as unknown as EventRecord;
  await t.rejects(store.insertEvents(project, "s", [event("ok"), bad]), { code: "SQLITE_CONSTRAINT_CHECK" });
  t.same(await inspect(store).listEvents("s"), [], "the failed call stored nothing, not even its good row");

  const other = new Database(path);
  other.pragma("user_version = 99");
  other.close();
  const mismatch = await store.ping("2026-11-22T06:00:00Z").catch((error: unknown) => error);
  t.ok(mismatch instanceof SchemaMismatch, "a schema mismatch is still a SchemaMismatch");
  t.match(mismatch, { found: 99, needed: schemaVersion() });
});

t.test("O2: rows sent and not yet committed are bounded; past the bound a call fails at once", async (t) => {
  const { store, project } = await threaded(t, { maxBacklog: 100 });
  await store.createSession(project, session("s"));
  const first = store.insertEvents(project, "s", events("a", 60));
  const second = store.insertEvents(project, "s", events("b", 60));
  const small = store.insertEvents(project, "s", events("c", 40));
  const refused = await second.catch((error: unknown) => error);
  t.match(refused, { name: "StorageFault", kind: "behind" });
  t.equal((refused as StorageFault).reason, "writes arrive faster than the disk takes them");
  t.same(await Promise.all([first, small]), [60, 40], "calls within the bound are taken");
  const stored = (await inspect(store).listEvents("s")).map((e) => e.id[0]);
  t.same([...new Set(stored)].sort(), ["a", "c"], "nothing of the refused call was stored");
  t.equal(await store.insertEvents(project, "s", events("d", 100)), 100, "once answered, the room is back");
  t.equal(await store.insertEvents(project, "s", events("huge", 500)), 500, "one call over the bound alone is taken");
});

t.test("when the thread stops, every call fails as a storage fault; key checks still read", async (t) => {
  const { store, project, failures } = await threaded(t);
  const key = await store.createApiKey("hash-2", "prefix-2", "p", "2026-11-22T00:00:00Z");
  await store.createSession(project, session("s"));
  await (store as ThreadedStore).thread.terminate();
  const failed = await store.insertEvents(project, "s", [event("x")]).catch((error: unknown) => error);
  t.match(failed, { name: "StorageFault", kind: "unavailable", message: /stopped unexpectedly/ });
  t.equal((failed as StorageFault).reason, "the storage thread stopped");
  await t.rejects(
    store.getSession(project, "s"),
    { name: "StorageFault", reason: "the storage thread stopped" },
    "reads too",
  );
  t.equal((await store.apiKeyById(key.id))?.prefix, "prefix-2", "the key check reads on this thread");
  t.equal(failures.length, 1, "onFailure was called once (the server exits on it)");
  t.match(failures[0], { name: "StorageFault", reason: "the storage thread stopped" });
});

t.test("close runs what was sent before it, then removes the WAL", async (t) => {
  const { path, store, project, failures } = await threaded(t);
  await store.createSession(project, session("s"));
  const pending = [
    store.insertEvents(project, "s", events("a", 200)),
    store.insertEvents(project, "s", events("b", 5)),
  ];
  await store.close();
  t.same(await Promise.all(pending), [200, 5]);
  t.notOk(existsSync(`${path}-wal`), "the last connection closed cleaned the WAL up");
  const reader = new Database(path, { readonly: true });
  t.equal(reader.prepare("SELECT count(*) FROM events").pluck().get(), 205);
  reader.close();
  await t.rejects(
    store.getSession(project, "s"),
    { name: "StorageFault", reason: "the server is stopping" },
    "a call after close fails as a storage fault, as on a closed in-thread store",
  );
  t.equal(failures.length, 0, "closing is not a failure");
});

t.test("4.3: a key revoked by another connection fails at the very next lookup", async (t) => {
  const { path, store } = await threaded(t);
  const key = await store.createApiKey("hash-3", "prefix-3", "p", "2026-11-22T00:00:00Z");
  t.equal((await store.apiKeyById(key.id))?.revoked_at, null);
  const other = new Database(path);
  other.prepare("UPDATE api_keys SET revoked_at = 'now' WHERE id = ?").run(key.id);
  other.close();
  t.equal((await store.apiKeyById(key.id))?.revoked_at, "now");
  t.equal((await store.apiKeyByHash("hash-3"))?.revoked_at, "now");
});

t.test("a database newer than the code is refused at start, and no thread is left behind", async (t) => {
  const path = join(tempDir(t), "newer.db");
  const db = openDb(path);
  db.pragma("user_version = 99");
  db.close();
  await t.rejects(openThreadedStore({ path }), { message: /schema version 99, newer than this agentmon/ });
});
