import { existsSync, statSync } from "node:fs";
import { join } from "node:path";
import Database from "better-sqlite3";
import t from "tap";
import { ConfigError, loadConfig } from "../../cli/config.ts";
import { GROUP_MAX_CALLS, GROUP_MAX_ROWS } from "../../db/sqlite/group-commit.ts";
import { type DbOptions, openDb } from "../../db/sqlite/open.ts";
import { sqliteStore } from "../../db/sqlite/store.ts";
import type { EventRecord } from "../../domain/types.ts";
import { main } from "../../server.ts";
import { inspect, tempDir } from "../helper.ts";
import { event, events, fixture, outcome, session } from "./group-commit.helpers.ts";
import { patch } from "./records.ts";

t.test("203 concurrent write calls of every kind are one transaction, settled only once committed", async (t) => {
  const { store, project, reader, committed } = await fixture(t);
  for (let i = 0; i < 50; i++) await store.createSession(project, session(`s${i}`));
  await store.insertEvents(project, "s0", [event("old")]);
  await store.createSession(project, session("doomed"));
  const before = store.commits;

  const calls: Promise<unknown>[] = [];
  const seen: string[] = [];
  /** Each call, once resolved, must already be visible to the other connection. */
  const track = <T>(what: string, call: Promise<T>, isCommitted: () => boolean) => {
    calls.push(
      call.then((value) => {
        if (isCommitted()) seen.push(what);
        return value;
      }),
    );
  };
  for (let i = 0; i < 50; i++) {
    track(
      `events ${i}`,
      store.insertEvents(project, `s${i}`, events(`e${i}`, 3)),
      () => committed.events(`e${i}-0`, `e${i}-1`, `e${i}-2`) === 3,
    );
    track(
      `agent ${i}`,
      store.upsertAgent(project, `s${i}`, { id: `a${i}`, name: "n", extra: {} }),
      () => committed.agent(`a${i}`) !== undefined,
    );
    track(
      `update ${i}`,
      store.updateSession(project, `s${i}`, { end_state: "Success", extra: {} }),
      () => committed.session(`s${i}`)?.end_state === "Success",
    );
    track(
      `create ${i}`,
      store.createSession(project, session(`new${i}`)),
      () => committed.session(`new${i}`) !== undefined,
    );
  }
  track(
    "patch",
    store.updateEvents(project, "s0", [patch({ event_id: "old", model: "patched" })]),
    () => reader.prepare("SELECT model FROM events WHERE id = 'old'").pluck().get() === "patched",
  );
  track("delete", store.deleteSession(project, "doomed"), () => committed.session("doomed") === undefined);
  track(
    "ping",
    store.ping("2026-11-22T06:00:00Z"),
    () => reader.prepare("SELECT value FROM meta WHERE key = 'heartbeat'").pluck().get() === "2026-11-22T06:00:00Z",
  );
  t.equal(calls.length, 203);
  t.equal(committed.events("e0-0"), 0, "nothing is written while the calls are only queued");
  t.same(await inspect(store).listEvents("s1"), [], "and the store's own reads do not see them either");

  await Promise.all(calls);
  t.equal(store.commits - before, 1, "203 calls, one commit");
  t.equal(seen.length, 203, "each call's data was committed when it resolved, for every call");
});

t.test(
  `a group holds at most ${GROUP_MAX_CALLS} calls and ${GROUP_MAX_ROWS} rows; the rest go to the next`,
  async (t) => {
    const { store, project, committed } = await fixture(t);
    await store.createSession(project, session("s"));

    let before = store.commits;
    const small = Array.from({ length: 1200 }, (_, i) => store.insertEvents(project, "s", [event(`c${i}`)]));
    t.ok(
      (await Promise.all(small)).every((stored) => stored === 1),
      "each call stored its event",
    );
    t.equal(store.commits - before, 3, "1200 one-event calls: groups of 500, 500 and 200");

    before = store.commits;
    const big = [0, 1, 2].map((n) => store.insertEvents(project, "s", events(`b${n}`, 4000)));
    await Promise.all(big);
    t.equal(store.commits - before, 2, "three calls of 4000 events: 8000 rows in the first group, 4000 in the second");

    before = store.commits;
    const huge = store.insertEvents(project, "s", events("h", GROUP_MAX_ROWS + 2000));
    const after = store.insertEvents(project, "s", [event("after")]);
    await Promise.all([huge, after]);
    t.equal(store.commits - before, 2, "a call over the row cap is not split: it is a group of its own");
    t.equal(committed.events(`h-${GROUP_MAX_ROWS + 1999}`, "after", "c1199", "b2-3999"), 4);
  },
);

t.test("a call that fails on its own is undone alone and rejects alone; the others commit", async (t) => {
  const bug = new TypeError("a bug in a patch");
  const { store, project, committed } = await fixture(
    t,
    {},
    {
      patcher: () => {
        throw bug;
      },
    },
  );
  await store.createSession(project, session("s1"));
  await store.createSession(project, session("s2"));
  await store.insertEvents(project, "s1", [event("x")]);
  const before = store.commits;

  const a = store.insertEvents(project, "s1", [event("a1")]);
  // Two good rows, then one the CHECK constraint of events.cost_source refuses: the two must go too.
  const bad = { ...event("b3"), cost_source: "bogus" } as unknown as EventRecord;
  const b = store.insertEvents(project, "s2", [event("b1"), event("b2"), bad]);
  const c = store.updateEvents(project, "s1", [patch({ event_id: "x", model: "never" })]);
  const d = store.createSession(project, session("d"));
  const e = store.insertEvents(project, "s2", [event("b4")]);

  t.equal(await outcome(a), "resolved");
  await t.rejects(b, { code: "SQLITE_CONSTRAINT_CHECK" }, "the constraint fails that call");
  await t.rejects(c, bug, "an exception thrown inside a call fails that call, with that error");
  t.equal(await outcome(d), "resolved");
  t.equal(await outcome(e), "resolved", "a later call on the same session is not affected");
  t.equal(store.commits - before, 1, "one transaction, committed");

  t.equal(committed.events("a1", "b4"), 2, "the calls that succeeded are committed");
  t.equal(committed.events("b1", "b2", "b3"), 0, "none of the failed call's rows, not even those before the bad one");
  t.equal(
    (await inspect(store).listEvents("s1")).find((ev) => ev.id === "x")?.model,
    "m",
    "the failed patch changed nothing",
  );
  t.not(committed.session("d"), undefined);
});

t.test("two calls on the same session in one group apply in call order", async (t) => {
  const { store, project, committed } = await fixture(t);
  const before = store.commits;
  const calls = [
    store.createSession(project, session("s")),
    store.insertEvents(project, "s", [event("e1")]),
    store.updateEvents(project, "s", [patch({ event_id: "e1", model: "second" })]),
    store.updateSession(project, "s", { end_state: "Fail", end_state_reason: "first", extra: { n: 1 } }),
    store.updateSession(project, "s", { end_state: "Success", extra: { m: 2 } }),
    store.upsertAgent(project, "s", { id: "a", name: "first", extra: {} }),
    store.upsertAgent(project, "s", { id: "a", name: null, extra: { later: true } }),
    store.createSession(project, session("gone")),
    store.deleteSession(project, "gone"),
    store.insertEvents(project, "gone", [event("lost")]),
  ] as const;
  const results = await Promise.all(calls);
  t.equal(store.commits - before, 1, "all in one group");

  t.same(results[0], { created: true, projectId: project });
  t.equal(results[1], 1, "the events found the session created before them");
  t.same(results[2], { status: "updated", updated: 1 }, "the patch found the event inserted before it");
  t.equal(results[3]?.session.end_state, "Fail", "each update answers the record as it left it");
  t.same(results[4]?.session.extra, { n: 1, m: 2 }, "the second update merged into the first one's extras");
  t.equal(results[4]?.session.end_state_reason, "first");
  t.equal(results[8], true, "the session created earlier in the group was deleted");
  t.equal(results[9], false, "events for it after the delete find no session");

  t.same(committed.session("s"), { end_state: "Success", end_state_reason: "first" }, "the later update wins");
  t.equal((await inspect(store).listEvents("s"))[0]?.model, "second");
  t.same(await inspect(store).listAgents("s"), [{ id: "a", name: "first", extra: { later: true } }]);
  t.equal(committed.session("gone"), undefined);
  t.equal(committed.events("lost"), 0);
});

t.test("close() commits every queued call before closing; a call after it fails", async (t) => {
  const path = join(tempDir(t), "agentmon.db");
  const store = sqliteStore(openDb(path));
  const project = (await store.createApiKey("hash", "hhhhhhhh", "p", "now")).project_id;
  await store.createSession(project, session("s"));

  // More than one group's worth, queued and not awaited before close().
  const queued = Array.from({ length: GROUP_MAX_CALLS + 100 }, (_, i) =>
    store.insertEvents(project, "s", [event(`q${i}`)]),
  );
  const failing = store.insertEvents(project, "s", [
    { ...event("bad"), cost_source: "bogus" } as unknown as EventRecord,
  ]);
  // Observed from now on: close() waits for the checkpoint worker, so the rejection comes first.
  const failed = t.rejects(failing, { code: "SQLITE_CONSTRAINT_CHECK" }, "a queued call that fails still rejects");
  const commitsBefore = store.commits;
  await store.close();
  t.equal(store.commits - commitsBefore, 2, "close() ran both groups");
  t.ok(
    (await Promise.all(queued)).every((stored) => stored === 1),
    "every queued call resolved",
  );
  await failed;

  await t.rejects(
    store.insertEvents(project, "s", [event("late")]),
    {
      name: "StorageFault",
      reason: "the server is stopping",
      cause: { message: "The database connection is not open" },
    },
    "a call after close() rejects (the app answers it 503, the server is stopping)",
  );
  await store.close(); // twice is harmless

  const reopened = new Database(path, { readonly: true });
  t.teardown(() => reopened.close());
  t.equal(reopened.prepare("SELECT count(*) FROM events WHERE id LIKE 'q%'").pluck().get(), GROUP_MAX_CALLS + 100);
  t.equal(reopened.prepare("SELECT count(*) FROM events WHERE id IN ('bad', 'late')").pluck().get(), 0);
});

t.test("AGENTMON_SYNCHRONOUS: normal by default, full on request, anything else a one-line config error", async (t) => {
  const dir = tempDir(t);
  const pragma = (options: DbOptions, name: string) => {
    const db = openDb(join(dir, name), options);
    try {
      return db.pragma("synchronous", { simple: true });
    } finally {
      db.close();
    }
  };
  // SQLite's numbers: 1 is NORMAL, 2 is FULL.
  t.equal(pragma({}, "default.db"), 1, "openDb: NORMAL by default");
  t.equal(pragma({ synchronous: "normal" }, "normal.db"), 1);
  t.equal(pragma({ synchronous: "full" }, "full.db"), 2, "openDb: FULL when asked");
  const full = openDb(join(dir, "full.db"), { synchronous: "full" });
  t.equal(full.pragma("journal_mode", { simple: true }), "wal", "still WAL");
  full.close();

  t.equal(loadConfig({}, {}).synchronous, "normal");
  t.equal(loadConfig({ AGENTMON_SYNCHRONOUS: "full" }, {}).synchronous, "full");
  t.equal(loadConfig({ AGENTMON_SYNCHRONOUS: "FULL" }, {}).synchronous, "full", "any case");
  t.equal(loadConfig({ AGENTMON_SYNCHRONOUS: "full" }, { synchronous: "normal" }).synchronous, "normal", "flag wins");

  for (const bad of ["off", "extra", "1", "fsync"]) {
    t.throws(
      () => loadConfig({ AGENTMON_SYNCHRONOUS: bad }, {}),
      new ConfigError(`AGENTMON_SYNCHRONOUS must be one of normal, full (got "${bad}")`),
      `${bad} is refused`,
    );
  }
  const out: string[] = [];
  const err: string[] = [];
  const io = { out: (line: string) => out.push(line), err: (line: string) => err.push(line) };
  const code = await main(["keys", "list", "--db", join(dir, "cli.db"), "--synchronous", "off"], {}, io);
  t.equal(code, 1, "the command stops with exit code 1");
  t.same(err, ['agentmon: AGENTMON_SYNCHRONOUS must be one of normal, full (got "off")'], "and one line");
  t.same(out, []);
});

t.test("checkpoints run in a worker, not in the writer's commits; close() leaves no WAL behind", async (t) => {
  const path = join(tempDir(t), "agentmon.db");
  const db = openDb(path);
  const store = sqliteStore(db);
  t.equal(db.pragma("wal_autocheckpoint", { simple: true }), 10_000, "the writer checkpoints only 40 MB behind");
  const project = (await store.createApiKey("hash", "hhhhhhhh", "p", "now")).project_id;
  await store.createSession(project, session("s"));
  const before = statSync(path).size;
  // About 8 MB of WAL: far below the writer's own threshold.
  for (let i = 0; i < 20; i++) await store.insertEvents(project, "s", events(`w${i}`, 100, 4000));
  t.ok(statSync(`${path}-wal`).size > 4_000_000, "the WAL holds the writes");
  // Bounded wait for the worker (it runs every 100 ms): the rows reach the database file.
  for (let tries = 0; tries < 200 && statSync(path).size <= before + 4_000_000; tries++) {
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  t.ok(statSync(path).size > before + 4_000_000, "the worker copied the WAL into the database file");
  await store.close();
  t.notOk(existsSync(`${path}-wal`), "closed last, the writer's connection removed the WAL");
  const reopened = new Database(path, { readonly: true });
  t.teardown(() => reopened.close());
  t.equal(reopened.prepare("SELECT count(*) FROM events").pluck().get(), 2000, "every row is there");
});
