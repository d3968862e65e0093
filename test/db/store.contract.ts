/**
 * The Store contract (db/store.ts): one suite that every storage adapter must pass, whatever its
 * engine. A runner per adapter calls `storeContract` (store.sqlite.test.ts,
 * store.sqlite-thread.test.ts); nothing here knows an engine. Each subtest opens a fresh, empty
 * store through the runner's `open`, on a real database that the runner removes when the
 * subtest ends.
 *
 * What comes back is compared whole (strictSame) with what was sent, on values chosen to break a
 * careless adapter: SQL and LIKE metacharacters, NUL, emoji, `__proto__` keys, nested nulls.
 */
import type { Test } from "tap";
import { KeyRevoked, StorageFault } from "../../db/errors.ts";
import type { Store } from "../../db/store.ts";
import type {
  AgentRecord,
  EndState,
  EventRecord,
  JsonObject,
  NewSession,
  SessionChanges,
  SessionFilter,
  SessionTotals,
} from "../../domain/types.ts";
import { iso, newEvent, patch, newSession as sessionRecord, US0 } from "./records.ts";

/** A store as the runner opened it. */
export interface Opened {
  store: Store;
  /**
   * Reads of the same database through another connection, which sees only what is committed:
   * the G7 checks look through it. Optional; without it they are skipped.
   */
  committed?: Pick<Store, "readSession" | "apiKeyById">;
}

export interface Adapter {
  /**
   * Opens a fresh, empty store on a new database, removed when `t` ends (the contract closes
   * the store itself, in a teardown registered after `open` returns, so before the runner's).
   */
  open(t: Test): Promise<Opened>;
  /** What ping must answer. */
  schemaVersion: number;
}

// ----------------------------------------------------------------------------- values

/** SQL and LIKE metacharacters, quotes, a backslash, NUL, emoji (a ZWJ sequence, a flag), accents. */
const NASTY = "'; DROP TABLE sessions; -- \" \\ % _ [x] \u0000 nul 🧪👩‍💻🇺🇳 Ünïcödé";

/** An object with a `__proto__` key (as JSON.parse makes it: data, not a prototype), nested nulls, odd numbers. */
const nasty = (): JsonObject =>
  JSON.parse(
    `{"__proto__": {"polluted": true}, "constructor": {"prototype": {"x": null}}, ${JSON.stringify(NASTY)}: ${JSON.stringify(NASTY)},
      "deepNulls": {"a": [1, null, {"b": null, "c": [[], {}, ""]}]}, "null": null, "float": 1.5, "big": 9007199254740991,
      "tiny": -1e-7, "false": false, "empty": "", "emptyObject": {}, "emptyArray": []}`,
  );

const newSession = (id: string, fields: Partial<NewSession> = {}) =>
  sessionRecord(id, { init_timestamp: iso(US0), ...fields });

/** An llm event at US0 + 1 s, as services store it (cost_source set). */
const event = (id: string, fields: Partial<EventRecord> = {}) =>
  newEvent(id, { init_timestamp: iso(US0 + 1_000_000), ...fields });

/** An event at this instant, ending at `endUs` (or not ended). */
const eventAt = (id: string, us: number, fields: Partial<EventRecord> = {}, endUs?: number) =>
  event(id, {
    init_timestamp: iso(us),
    init_us: us,
    end_timestamp: endUs === undefined ? null : iso(endUs),
    ...fields,
  });

const NO_TOTALS: SessionTotals = {
  events: 0,
  event_counts: { llm: 0, tool: 0, action: 0, error: 0 },
  prompt_tokens: 0,
  completion_tokens: 0,
  cost: 0,
  first_us: null,
  last_us: null,
};

const WHOLE = { agents: true, events: true };
const T0 = "2026-11-22T00:00:00Z";

/** JSON with every object's keys sorted: the same text for the same data, whatever the key order. */
const canonical = (value: unknown) =>
  JSON.stringify(value, (_key, v: unknown) =>
    v !== null && typeof v === "object" && !Array.isArray(v)
      ? Object.fromEntries(Object.entries(v).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)))
      : v,
  );

/**
 * strictSame for values holding nasty(): tcompare's strict mode takes an own `constructor` key for
 * the object's class and fails two equal copies ("object identities differ"), so these compare
 * as JSON, which is as strict about types and every character.
 */
const sameData = (t: Test, actual: unknown, expected: unknown, message: string) =>
  t.equal(canonical(actual), canonical(expected), message);

/** A rejection's error, or "resolved". */
const failure = (promise: Promise<unknown>) =>
  promise.then(
    () => "resolved",
    (error: unknown) => error,
  );

// ----------------------------------------------------------------------------- the suite

export function storeContract(t: Test, adapter: Adapter) {
  /** A fresh store, closed when the test ends unless the test closed it. */
  async function bare(t: Test) {
    const { store, committed } = await adapter.open(t);
    let closed = false;
    t.teardown(() => (closed ? undefined : store.close()));
    const close = () => {
      closed = true;
      return store.close();
    };
    return { store, committed, close };
  }

  /** A fresh store with two projects, `p` (key `key`) and `other` (key `otherKey`). */
  async function fresh(t: Test) {
    const opened = await bare(t);
    const key = await opened.store.createApiKey("hash-mine", "minemine", "mine", T0);
    const otherKey = await opened.store.createApiKey("hash-theirs", "theirs00", "theirs", T0);
    const { store } = opened;
    return {
      ...opened,
      key,
      otherKey,
      p: key.project_id,
      other: otherKey.project_id,
      /** The session whole (agents and events), in that project. */
      snapshot: (project: string, id: string) => store.readSession(project, id, WHOLE),
    };
  }

  t.test("metaValue sets the fallback once and keeps the first value", async (t) => {
    const { store } = await bare(t);
    t.equal(await store.metaValue("jwt_secret", "first"), "first");
    t.equal(await store.metaValue("jwt_secret", "second"), "first");
    t.equal(await store.metaValue(NASTY, NASTY), NASTY, "any key and value round-trip");
    t.equal(await store.metaValue(NASTY, "other"), NASTY);
    t.equal(await store.metaValue("jwt_secret", "third"), "first", "each key keeps its own value");
  });

  t.test("api keys: one project per name, lookup by hash and id, oldest first, revocation", async (t) => {
    const { store } = await bare(t);
    t.strictSame(await store.listApiKeys(), [], "a new store has no keys");
    const a = await store.createApiKey("hash-a", "aaaaaaaa", "default", "2026-11-22T00:00:00Z");
    const b = await store.createApiKey("hash-b", "bbbbbbbb", "default", "2026-11-22T00:00:01Z");
    const c = await store.createApiKey("hash-c", "cccccccc", "other", "2026-11-22T00:00:02Z");
    t.strictSame(
      a,
      {
        id: a.id,
        project_id: a.project_id,
        project_name: "default",
        prefix: "aaaaaaaa",
        created_at: "2026-11-22T00:00:00Z",
        revoked_at: null,
      },
      "the record, live",
    );
    t.ok(typeof a.id === "string" && a.id !== "" && typeof a.project_id === "string" && a.project_id !== "");
    t.equal(a.project_id, b.project_id, "same project name, same project");
    t.not(a.project_id, c.project_id);
    t.not(a.id, b.id, "each key its own id");
    t.strictSame(await store.apiKeyByHash("hash-b"), b);
    t.strictSame(await store.apiKeyById(c.id), c);
    t.equal(await store.apiKeyByHash("nope"), undefined);
    t.equal(await store.apiKeyByHash("HASH-A"), undefined, "a hash matches exactly");
    t.equal(await store.apiKeyById("nope"), undefined);
    t.same(
      (await store.listApiKeys()).map((k) => k.prefix),
      ["aaaaaaaa", "bbbbbbbb", "cccccccc"],
    );

    const d = await store.createApiKey(`hash-${NASTY}`, "dddddddd", NASTY, "2026-11-21T23:59:59Z");
    t.equal(d.project_name, NASTY, "any project name round-trips");
    t.strictSame(await store.apiKeyByHash(`hash-${NASTY}`), d);
    t.strictSame(await store.listApiKeys(), [d, a, b, c], "listed oldest first (by created_at)");

    await store.revokeApiKey(a.id, "2026-11-22T01:00:00Z");
    const revoked = { ...a, revoked_at: "2026-11-22T01:00:00Z" };
    t.strictSame(await store.apiKeyById(a.id), revoked);
    t.strictSame(await store.apiKeyByHash("hash-a"), revoked, "a revoked key is still found, as revoked");
    t.equal((await store.apiKeyById(b.id))?.revoked_at, null, "only that key is revoked");
    await store.revokeApiKey(a.id, "2026-11-22T02:00:00Z");
    t.equal((await store.apiKeyById(a.id))?.revoked_at, "2026-11-22T01:00:00Z", "a second revoke keeps the first time");
    await t.resolves(store.revokeApiKey("nope", "2026-11-22T03:00:00Z"), "revoking an unknown id is no error");
    t.strictSame(await store.listApiKeys(), [d, revoked, b, c]);
  });

  t.test("createSession: created once, owned by one project (S3); every field round-trips", async (t) => {
    const { store, p, other } = await fresh(t);
    const s = newSession("s", { tags: ["a"], extra: { video: null, nested: { deep: [1, { x: null }] } } });
    t.strictSame(await store.createSession(p, s), { created: true, projectId: p });
    t.strictSame(await store.createSession(p, { ...s, tags: ["changed"] }), { created: false, projectId: p });
    t.strictSame(
      await store.createSession(other, s),
      { created: false, projectId: p },
      "another project sees the owner",
    );
    t.strictSame(
      await store.getSession(p, "s"),
      { ...s, project_id: p },
      "a repeated create overwrites nothing; unknown fields round-trip, nulls included",
    );
    t.equal(await store.getSession(other, "s"), undefined, "the other project does not see it");

    const full = newSession(NASTY, {
      init_timestamp: iso(US0 + 123_456),
      init_us: US0 + 123_456,
      end_timestamp: iso(US0 + 9_000_001),
      end_state: "Fail",
      end_state_reason: NASTY,
      tags: [NASTY, "🧪", "", "a"],
      host_env: nasty(),
      extra: nasty(),
    });
    t.strictSame(await store.createSession(p, full), { created: true, projectId: p });
    const back = await store.getSession(p, NASTY);
    sameData(t, back, { ...full, project_id: p }, "every field round-trips as sent");
    sameData(t, (await store.readSession(p, NASTY, WHOLE))?.session, back, "readSession gives the same");
    t.ok(back && Object.hasOwn(back.extra, "__proto__"), "a __proto__ key is kept as data");
    t.equal(back && Object.getPrototypeOf(back.extra), Object.prototype, "and is not a prototype");
    t.equal(({} as Record<string, unknown>).polluted, undefined, "nothing was polluted");

    t.strictSame(await store.createSession(p, newSession("S")), { created: true, projectId: p }, "ids are exact: S");
    t.strictSame(await store.createSession(p, newSession("s\u0000")), { created: true, projectId: p }, "and s + NUL");
    t.equal((await store.getSession(p, "s"))?.tags?.[0], "a", "are other sessions than s");
  });

  t.test("another project's session (or none) is not found by any method, and nothing changes", async (t) => {
    const { store, p, other, otherKey, snapshot } = await fresh(t);
    await store.createSession(p, newSession("s", { tags: ["a"], extra: { keep: NASTY } }));
    await store.insertEvents(p, "s", [event("e1")]);
    await store.upsertAgent(p, "s", { id: "a", name: "one", extra: { role: "planner" } });
    const before = await snapshot(p, "s");
    const cases: [project: string, id: string, keyId: string | undefined, why: string][] = [
      [other, "s", undefined, "another project's session"],
      [other, "s", otherKey.id, "another project's session, with a live key of that project"],
      ["no-such-project", "s", undefined, "a project that does not exist"],
      [p, "missing", undefined, "an unknown session"],
    ];
    for (const [project, id, keyId, why] of cases) {
      t.equal(await store.getSession(project, id), undefined, `getSession: ${why}`);
      t.equal(await store.readSession(project, id, WHOLE), undefined, `readSession: ${why}`);
      t.equal(await store.listEventsPage(project, id, { limit: 10 }), undefined, `listEventsPage: ${why}`);
      t.equal(
        await store.updateSession(project, id, { end_state: "Fail", tags: ["x"], extra: { x: 1 } }, keyId),
        undefined,
        `updateSession: ${why}`,
      );
      t.equal(await store.insertEvents(project, id, [event("e2")], keyId), false, `insertEvents: ${why}`);
      t.strictSame(
        await store.updateEvents(project, id, [patch({ event_id: "e1", model: "x" })], keyId),
        { status: "no-session" },
        `updateEvents: ${why}`,
      );
      t.equal(
        await store.upsertAgent(project, id, { id: "a", name: "x", extra: { x: 1 } }, keyId),
        false,
        `upsertAgent: ${why}`,
      );
      t.equal(await store.deleteSession(project, id), false, `deleteSession: ${why}`);
    }
    t.strictSame(await store.listSessions(other, {}, undefined, 10), { items: [], next: null }, "not listed there");
    t.strictSame(await snapshot(p, "s"), before, "nothing changed in the session");
    t.equal(await store.getSession(p, "missing"), undefined, "no write made the unknown session");
    t.strictSame(
      (await store.listSessions(p, {}, undefined, 10)).items.map((item) => item.session.id),
      ["s"],
    );
  });

  t.test("updateSession merges extras, sets the fields given, and answers what readSession then gives", async (t) => {
    const { store, p, snapshot } = await fresh(t);
    const s = newSession("s", { tags: ["a"], extra: { video: null, nested: { deep: [1, { x: null }] } } });
    await store.createSession(p, s);
    await store.insertEvents(p, "s", [event("e1", { cost: 0.5, cost_source: "client" })]);

    const updated = await store.updateSession(p, "s", { end_state: "Fail", extra: { video: "v", more: 1 } });
    t.equal(updated?.session.end_state, "Fail");
    t.same(updated?.session.tags, ["a"], "fields not given are unchanged");
    t.same(updated?.session.extra, { video: "v", nested: { deep: [1, { x: null }] }, more: 1 }, "extras merge");
    const read = await store.readSession(p, "s", { agents: false, events: false });
    t.strictSame(updated, { session: read?.session, totals: read?.totals }, "what update answers is what is stored");
    t.strictSame([read?.agents, read?.events], [[], []], "parts not asked for are empty");
    t.equal(updated?.totals.events, 1, "with the session's totals");
    t.strictSame(await store.getSession(p, "s"), updated?.session);

    const changes: SessionChanges = {
      init_timestamp: iso(US0 - 5),
      init_us: US0 - 5,
      end_timestamp: iso(US0 + 7_654_321),
      end_state: "Indeterminate",
      end_state_reason: NASTY,
      tags: [NASTY, "b"],
      host_env: nasty(),
      extra: { nested: { replaced: true }, ...nasty() },
    };
    const second = await store.updateSession(p, "s", changes);
    const expected = {
      ...s,
      project_id: p,
      init_timestamp: iso(US0 - 5),
      init_us: US0 - 5,
      end_timestamp: iso(US0 + 7_654_321),
      end_state: "Indeterminate",
      end_state_reason: NASTY,
      tags: [NASTY, "b"],
      host_env: nasty(),
      extra: { video: "v", more: 1, nested: { replaced: true }, ...nasty() },
    };
    sameData(t, second?.session, expected, "every field given is set; an extra key given is replaced whole");
    t.ok(second && Object.hasOwn(second.session.extra, "__proto__"), "a __proto__ extra is merged as data");
    const whole = await snapshot(p, "s");
    sameData(t, second, { session: whole?.session, totals: whole?.totals }, "what update answers is what is stored");

    const third = await store.updateSession(p, "s", { extra: { video: null } });
    t.ok(third && Object.hasOwn(third.session.extra, "video"), "an extra set to null is kept");
    t.equal(third?.session.extra.video, null, "as null");
    sameData(t, await store.updateSession(p, "s", { extra: {} }), third, "no changes change nothing");
  });

  t.test("item 5: concurrent updateSession calls lose none of each other's fields", async (t) => {
    const { store, p } = await fresh(t);
    await store.createSession(p, newSession("s", { extra: { base: true } }));
    const STATES: EndState[] = ["Success", "Fail", "Indeterminate"];
    const N = 50;
    const changes = Array.from({ length: N }, (_, i): SessionChanges => {
      const c: SessionChanges = { extra: { [`k${i}`]: i, last: i } };
      if (i % 3 === 0) c.tags = [`t${i}`];
      if (i % 4 === 0) c.end_state = STATES[i % 3] as EndState;
      if (i % 5 === 0) c.end_state_reason = `reason ${i}`;
      return c;
    });
    // Issued together, none awaited before the next is made: they interleave however the adapter
    // runs them. The named fields must be the last issued: the calls take effect in the order made
    // (as one writer connection does; an adapter with a pool of connections must keep that order).
    const answers = await Promise.all(changes.map((c) => store.updateSession(p, "s", c)));
    t.ok(
      answers.every((answer, i) => answer?.session.extra[`k${i}`] === i),
      "each answer holds its own update",
    );
    const final = await store.getSession(p, "s");
    const keys = Object.fromEntries(Array.from({ length: N }, (_, i) => [`k${i}`, i]));
    t.strictSame(final?.extra, { base: true, ...keys, last: N - 1 }, "every update's extra key is there");
    const lastOf = <K extends keyof SessionChanges>(key: K) => changes.findLast((c) => c[key] !== undefined)?.[key];
    t.strictSame(final?.tags, lastOf("tags"), "the last tags issued");
    t.equal(final?.end_state, lastOf("end_state"), "the last end_state issued");
    t.equal(final?.end_state_reason, lastOf("end_state_reason"), "the last end_state_reason issued");
    t.strictSame(answers[N - 1]?.session, final, "the last update answers the final session");
  });

  t.test("insertEvents: stored once per id and session; a retry keeps the first copy; round-trips", async (t) => {
    const { store, p, other, snapshot } = await fresh(t);
    await store.createSession(p, newSession("s1"));
    await store.createSession(p, newSession("s2"));
    const e1 = event("e1", { cost: 0.25, cost_source: "client" });
    const stored = [
      e1,
      event("e2", { cost: 0.5, cost_source: "client" }),
      event("t", { type: "tool", cost: 9, cost_source: "client" }),
    ];
    t.equal(await store.insertEvents(p, "s1", stored), true);
    t.equal(
      await store.insertEvents(p, "s1", [event("e1", { cost: 100, model: "changed", cost_source: "client" })]),
      true,
      "a retry is accepted",
    );
    t.equal(
      await store.insertEvents(p, "s2", [event("e1", { cost: 1, cost_source: "client" })]),
      true,
      "the same id in another session is another event",
    );
    t.equal(await store.insertEvents(p, "nope", [event("x")]), false, "unknown session");
    t.equal(await store.insertEvents(other, "s1", [event("x")]), false, "session of another project");
    const s1 = await snapshot(p, "s1");
    t.same(s1?.events.map((e) => e.id).sort(), ["e1", "e2", "t"]);
    t.equal(s1?.events.find((e) => e.id === "e1")?.cost, 0.25, "the first copy stays");
    t.strictSame(
      s1?.events.find((e) => e.id === "e1"),
      e1,
      "whole",
    );
    t.equal(s1?.totals.cost, 0.75, "only llm events count");
    t.equal((await snapshot(p, "s2"))?.totals.cost, 1);

    t.equal(await store.insertEvents(p, "s2", [event("d", { model: "first" }), event("d", { model: "second" })]), true);
    t.equal(
      (await snapshot(p, "s2"))?.events.find((e) => e.id === "d")?.model,
      "first",
      "twice in one call: the first",
    );
    t.equal(await store.insertEvents(p, "s2", []), true, "an empty list, for a session of the project");

    const full = eventAt(
      NASTY,
      US0 + 42,
      {
        type: "tool",
        agent_id: NASTY,
        model: NASTY,
        prompt_tokens: 0,
        completion_tokens: 2 ** 31,
        cost: 1.25,
        cost_source: "client",
        fields: { prompt: [{ role: "user", content: NASTY }], completion: nasty(), name: NASTY, params: null },
        aliases: ["event_type", "timestamp"],
        extra: nasty(),
      },
      US0 + 5_000_042,
    );
    const { cost_source: _paid, ...paid } = event("no-source", { cost: 2 });
    const { cost_source: _free, ...free } = event("no-cost");
    t.equal(await store.insertEvents(p, "s1", [full, paid, free]), true);
    const events = (await snapshot(p, "s1"))?.events ?? [];
    sameData(
      t,
      events.find((e) => e.id === NASTY),
      full,
      "every field round-trips as sent",
    );
    t.strictSame(
      events.find((e) => e.id === "no-source"),
      { ...paid, cost_source: "client" },
      "no cost_source with a cost: client",
    );
    t.strictSame(
      events.find((e) => e.id === "no-cost"),
      { ...free, cost_source: "unknown" },
      "no cost_source, no cost: unknown",
    );
    const page = await store.listEventsPage(p, "s1", { limit: 100 });
    sameData(
      t,
      page?.items.find((e) => e.id === NASTY),
      full,
      "listEventsPage gives the same",
    );
  });

  t.test("totals: counts per kind, token and cost sums over llm events, first and last instants", async (t) => {
    const { store, p, snapshot } = await fresh(t);
    await store.createSession(p, newSession("s", { init_us: US0 + 1 }));
    await store.createSession(p, newSession("empty"));
    await store.createSession(p, newSession("one"));
    const empty = await snapshot(p, "empty");
    t.strictSame(empty?.totals, NO_TOTALS, "no events: zeros, and no instants");
    await store.insertEvents(p, "s", [
      eventAt(
        "llm-a",
        US0 + 1_000,
        { prompt_tokens: 10, completion_tokens: 20, cost: 0.5, cost_source: "client" },
        US0 + 5_000,
      ),
      eventAt("llm-b", US0 + 2_000, { prompt_tokens: null, completion_tokens: 5, cost: null }),
      eventAt(
        "tool",
        US0 + 500,
        { type: "tool", prompt_tokens: 100, completion_tokens: 100, cost: 9, cost_source: "client" },
        US0 + 9_000,
      ),
      eventAt("action", US0 + 3_000, { type: "action", prompt_tokens: null, completion_tokens: null }),
      eventAt("error", US0 + 4_000, { type: "error", cost: 3, cost_source: "client" }),
    ]);
    await store.insertEvents(p, "one", [eventAt("only", US0 + 7)]);
    const expected: SessionTotals = {
      events: 5,
      event_counts: { llm: 2, tool: 1, action: 1, error: 1 },
      prompt_tokens: 10,
      completion_tokens: 25,
      cost: 0.5,
      first_us: US0 + 500,
      last_us: US0 + 9_000,
    };
    t.strictSame((await snapshot(p, "s"))?.totals, expected, "readSession");
    t.strictSame((await store.updateSession(p, "s", { extra: {} }))?.totals, expected, "updateSession");
    const listed = await store.listSessions(p, {}, undefined, 10);
    t.strictSame(
      Object.fromEntries(listed.items.map((item) => [item.session.id, item.totals])),
      {
        s: expected,
        empty: NO_TOTALS,
        one: {
          ...NO_TOTALS,
          events: 1,
          event_counts: { llm: 1, tool: 0, action: 0, error: 0 },
          prompt_tokens: 1,
          completion_tokens: 2,
          first_us: US0 + 7,
          last_us: US0 + 7,
        },
      },
      "listSessions, every session its own",
    );
    await store.insertEvents(p, "s", [eventAt("late", US0 + 20_000, { type: "action" })]);
    t.equal((await snapshot(p, "s"))?.totals.last_us, US0 + 20_000, "last_us: the latest init or end");
  });

  t.test("updateEvents: all or nothing, unknown ids by index, in order, a table cost re-priced", async (t) => {
    const { store, p, other, snapshot } = await fresh(t);
    await store.createSession(p, newSession("s"));
    // gpt-4o-mini, shipped price: 0.15 USD per million prompt tokens, 0.6 per million completion tokens.
    const price = (prompt: number, completion: number) => (prompt * 0.15 + completion * 0.6) / 1_000_000;
    await store.insertEvents(p, "s", [
      event("e1"),
      event("e2"),
      event("priced", {
        model: "gpt-4o-mini",
        prompt_tokens: 1000,
        completion_tokens: 2000,
        cost: price(1000, 2000),
        cost_source: "table",
      }),
      event("paid", {
        model: "gpt-4o-mini",
        prompt_tokens: 1000,
        completion_tokens: 2000,
        cost: 7,
        cost_source: "client",
      }),
    ]);
    const before = await snapshot(p, "s");

    const one = await store.updateEvents(p, "s", [patch({ event_id: "e1", model: "new" }), patch({ event_id: "zz" })]);
    t.same(one.status === "unknown" && one.unknown.map((u) => [u.index, u.id]), [[1, "zz"]]);
    t.equal((await snapshot(p, "s"))?.events.find((e) => e.id === "e1")?.model, "m", "nothing was applied");
    const refused = await store.updateEvents(p, "s", [
      patch({ event_id: "e1", model: "new" }),
      patch({ event_id: "zz" }),
      patch({ event_id: "e2", model: "x" }),
      patch({ event_id: "yy" }),
      patch({ event_id: "zz" }),
    ]);
    t.strictSame(
      refused,
      {
        status: "unknown",
        unknown: [
          { index: 1, id: "zz" },
          { index: 3, id: "yy" },
          { index: 4, id: "zz" },
        ],
      },
      "every entry naming an unknown id, by its index, a repeat too",
    );
    t.equal((await snapshot(p, "s"))?.events.find((e) => e.id === "e1")?.model, "m", "nothing was applied");
    t.strictSame(await snapshot(p, "s"), before, "nothing at all");

    const done = await store.updateEvents(p, "s", [
      patch({ event_id: "e1", model: "new" }),
      patch({ event_id: "e1", completion: "done" }),
      patch({ event_id: "e2", cost: 2 }),
      patch({ event_id: "e2", model: "first" }),
      patch({ event_id: "e2", model: "second" }),
    ]);
    t.strictSame(done, { status: "updated", updated: 2 }, "distinct events are counted");
    let events = (await snapshot(p, "s"))?.events ?? [];
    const e1 = events.find((e) => e.id === "e1");
    t.equal(e1?.model, "new");
    t.same(e1?.fields, { prompt: "hi", completion: "done" }, "entries for the same event apply in order");
    t.strictSame(e1, { ...event("e1"), model: "new", fields: { prompt: "hi", completion: "done" } }, "the rest kept");
    t.strictSame(
      events.find((e) => e.id === "e2"),
      { ...event("e2"), model: "second", cost: 2, cost_source: "client" },
      "the last entry wins; a cost sent is the client's",
    );

    t.strictSame(await store.updateEvents(p, "s", [patch({ event_id: "priced", prompt_tokens: 4000 })]), {
      status: "updated",
      updated: 1,
    });
    events = (await snapshot(p, "s"))?.events ?? [];
    t.strictSame(
      events.find((e) => e.id === "priced"),
      event("priced", {
        model: "gpt-4o-mini",
        prompt_tokens: 4000,
        completion_tokens: 2000,
        cost: price(4000, 2000),
        cost_source: "table",
      }),
      "a table cost is re-priced when its tokens change",
    );
    await store.updateEvents(p, "s", [patch({ event_id: "priced", model: "no-such-model" })]);
    events = (await snapshot(p, "s"))?.events ?? [];
    t.match(
      events.find((e) => e.id === "priced"),
      { cost: null, cost_source: "unknown" },
      "no price, no cost",
    );
    await store.updateEvents(p, "s", [patch({ event_id: "paid", prompt_tokens: 1 })]);
    events = (await snapshot(p, "s"))?.events ?? [];
    t.match(
      events.find((e) => e.id === "paid"),
      { cost: 7, cost_source: "client" },
      "a client cost stands",
    );

    const raw = JSON.parse(`{"event_id": "e1", "__proto__": {"x": 1}, ${JSON.stringify(NASTY)}: null}`);
    t.strictSame(await store.updateEvents(p, "s", [patch(raw)]), { status: "updated", updated: 1 });
    const extra = (await snapshot(p, "s"))?.events.find((e) => e.id === "e1")?.extra;
    t.strictSame(
      extra,
      JSON.parse(`{"__proto__": {"x": 1}, ${JSON.stringify(NASTY)}: null}`),
      "unknown fields, as data",
    );
    t.ok(extra && Object.hasOwn(extra, "__proto__"));

    t.strictSame(await store.updateEvents(p, "s", []), { status: "updated", updated: 0 }, "no entries: none updated");
    t.same(await store.updateEvents(p, "missing", []), { status: "no-session" });
    t.strictSame(await store.updateEvents(p, "missing", [patch({ event_id: "e1" })]), { status: "no-session" });
    t.strictSame(await store.updateEvents(other, "s", [patch({ event_id: "e1" })]), { status: "no-session" });
  });

  t.test("upsertAgent: inserts, then keeps extras and the name when a repeat leaves it out", async (t) => {
    const { store, p, other, snapshot } = await fresh(t);
    await store.createSession(p, newSession("s"));
    await store.createSession(p, newSession("s2"));
    const agents = async (id: string) => (await snapshot(p, id))?.agents ?? [];
    t.equal(await store.upsertAgent(p, "s", { id: "a", name: "one", extra: { role: "planner" } }), true);
    t.equal(await store.upsertAgent(p, "s", { id: "a", name: null, extra: { model: "x" } }), true);
    t.same(await agents("s"), [{ id: "a", name: "one", extra: { role: "planner", model: "x" } }]);
    t.strictSame(await agents("s"), [{ id: "a", name: "one", extra: { role: "planner", model: "x" } }]);
    await store.upsertAgent(p, "s", { id: "a", name: "two", extra: {} });
    t.equal((await agents("s"))[0]?.name, "two");
    await store.upsertAgent(p, "s", { id: "a", name: null, extra: { role: "critic" } });
    t.strictSame(
      await agents("s"),
      [{ id: "a", name: "two", extra: { role: "critic", model: "x" } }],
      "a key given wins",
    );
    t.equal(await store.upsertAgent("other", "s", { id: "b", name: null, extra: {} }), false);
    t.equal(await store.upsertAgent(other, "s", { id: "b", name: null, extra: {} }), false);

    const odd: AgentRecord = { id: NASTY, name: NASTY, extra: nasty() };
    t.equal(await store.upsertAgent(p, "s2", odd), true);
    t.equal(await store.upsertAgent(p, "s2", { id: "a", name: null, extra: {} }), true);
    const s2 = [...(await agents("s2"))].sort((x, y) => (x.id < y.id ? -1 : 1));
    sameData(
      t,
      s2,
      [{ id: "a", name: null, extra: {} }, odd].sort((x, y) => (x.id < y.id ? -1 : 1)),
      "the same agent id in another session is another agent; every field round-trips",
    );
    t.strictSame(await agents("s"), [{ id: "a", name: "two", extra: { role: "critic", model: "x" } }], "s unchanged");
  });

  t.test("listSessions: newest first, every filter, keyset pages with a stable next", async (t) => {
    const { store, p, other } = await fresh(t);
    const sessions = [
      newSession("old", { tags: ["x", "y"], end_state: "Success", end_state_reason: "Done: ÄÖÜ Σίσυφος" }),
      newSession("mid-a", { init_us: US0 + 10, tags: ["x"], end_state: "Fail", end_state_reason: "100% fail_ed" }),
      newSession("mid-b", { init_us: US0 + 10, extra: nasty() }),
      newSession("new", {
        init_us: US0 + 20,
        tags: ["y", NASTY],
        end_state: "Indeterminate",
        end_state_reason: "timeout",
      }),
      newSession("newest", { init_us: US0 + 30, tags: [], end_state: "Success", end_state_reason: "ok" }),
    ];
    for (const s of sessions) await store.createSession(p, s);
    await store.createSession(other, newSession("theirs", { init_us: US0 + 15, tags: ["x"], end_state: "Success" }));
    await store.upsertAgent(p, "mid-b", { id: "agent-1", name: null, extra: {} });
    await store.insertEvents(p, "new", [event("e", { agent_id: "agent-2" })]);
    await store.insertEvents(other, "theirs", [event("e", { agent_id: "agent-1" })]);

    const ids = async (filter: SessionFilter, project = p) =>
      (await store.listSessions(project, filter, undefined, 100)).items.map((item) => item.session.id);
    t.same(await ids({}), ["newest", "new", "mid-b", "mid-a", "old"], "newest first; a tie on init_us: id desc");
    t.same(await ids({}, other), ["theirs"], "only the project's");
    const filters: [SessionFilter, string[], string][] = [
      [{ tags: ["x"] }, ["mid-a", "old"], "a tag"],
      [{ tags: ["x", "y"] }, ["old"], "every tag given"],
      [{ tags: ["x", "x"] }, ["mid-a", "old"], "a tag given twice"],
      [{ tags: [NASTY] }, ["new"], "any tag"],
      [{ tags: ["nope"] }, [], "no such tag"],
      [{ end_state: "Success" }, ["newest", "old"], "end_state"],
      [{ end_state: "Indeterminate" }, ["new"], "end_state"],
      [{ from_us: US0 + 10 }, ["newest", "new", "mid-b", "mid-a"], "from_us, inclusive"],
      [{ to_us: US0 + 10 }, ["old"], "to_us, exclusive"],
      [{ from_us: US0 + 10, to_us: US0 + 20 }, ["mid-b", "mid-a"], "a range"],
      [{ agent_id: "agent-1" }, ["mid-b"], "agent_id: a registered agent"],
      [{ agent_id: "agent-2" }, ["new"], "agent_id: an event's agent_id"],
      [{ agent_id: "nobody" }, [], "agent_id: none"],
      [{ q: "done" }, ["old"], "q: case-insensitive"],
      [{ q: "äöü" }, ["old"], "q: case-insensitive beyond ASCII"],
      [{ q: "ΣΊΣΥΦ" }, ["old"], "q: Greek"],
      [{ q: "%" }, ["mid-a"], "q: % is a character"],
      [{ q: "l_e" }, ["mid-a"], "q: _ is a character"],
      [{ q: "o" }, ["newest", "new", "old"], "q: a substring"],
      [{ q: "'; drop" }, [], "q: no match"],
      [{ tags: ["x"], end_state: "Fail" }, ["mid-a"], "filters together"],
      [{ tags: ["y"], from_us: US0 + 1, q: "TIME" }, ["new"], "filters together"],
    ];
    for (const [filter, expected, why] of filters)
      t.same(await ids(filter), expected, `${why}: ${JSON.stringify(filter)}`);

    const all = await store.listSessions(p, {}, undefined, 100);
    for (const item of all.items) {
      const read = await store.readSession(p, item.session.id, { agents: false, events: false });
      sameData(
        t,
        item,
        { session: read?.session, totals: read?.totals },
        `${item.session.id}: as readSession gives it`,
      );
    }
    sameData(
      t,
      all.items.find((item) => item.session.id === "mid-b")?.session,
      { ...(sessions[2] as NewSession), project_id: p },
      "round-trips",
    );
    t.equal(all.next, null, "one page: no next");
    t.equal((await store.listSessions(p, {}, undefined, 5)).next, null, "a last page exactly full: no next");

    const page1 = await store.listSessions(p, {}, undefined, 2);
    t.same(
      page1.items.map((item) => item.session.id),
      ["newest", "new"],
    );
    t.strictSame(page1.next, { init_us: US0 + 20, id: "new" }, "next: the last item's position");
    // A session made after page 1 was read, newer than all: the next page does not move.
    await store.createSession(p, newSession("newer", { init_us: US0 + 40 }));
    const page2 = await store.listSessions(p, {}, page1.next ?? undefined, 2);
    t.same(
      page2.items.map((item) => item.session.id),
      ["mid-b", "mid-a"],
      "page 2, as if nothing was added",
    );
    t.strictSame(page2.next, { init_us: US0 + 10, id: "mid-a" });
    const page3 = await store.listSessions(p, {}, page2.next ?? undefined, 2);
    t.same(
      page3.items.map((item) => item.session.id),
      ["old"],
    );
    t.equal(page3.next, null, "the last page");
    t.strictSame(await store.listSessions(p, {}, page2.next ?? undefined, 2), page3, "a page read again is the same");
    t.same(
      (await store.listSessions(p, {}, { init_us: US0 + 10, id: "mid-b" }, 10)).items.map((i) => i.session.id),
      ["mid-a", "old"],
      "after a position: strictly after it",
    );

    const filtered1 = await store.listSessions(p, { tags: ["x"] }, undefined, 1);
    t.same(
      filtered1.items.map((item) => item.session.id),
      ["mid-a"],
    );
    t.strictSame(filtered1.next, { init_us: US0 + 10, id: "mid-a" });
    const filtered2 = await store.listSessions(p, { tags: ["x"] }, filtered1.next ?? undefined, 1);
    t.same(
      filtered2.items.map((item) => item.session.id),
      ["old"],
      "paging within a filter",
    );
    t.equal(filtered2.next, null);
  });

  t.test("listEventsPage: (init_us, id) order, kinds, pages", async (t) => {
    const { store, p, snapshot } = await fresh(t);
    await store.createSession(p, newSession("s"));
    t.strictSame(await store.listEventsPage(p, "s", { limit: 10 }), { items: [], next: null }, "no events");
    await store.insertEvents(p, "s", [
      eventAt("e-b", US0 + 1),
      eventAt("e-a", US0 + 1, { type: "tool" }),
      eventAt("e-c", US0, { type: "error", extra: nasty() }),
      eventAt("e-d", US0 + 2, { type: "action" }),
      eventAt("e-e", US0 + 3),
    ]);
    const ids = (page: { items: EventRecord[] } | undefined) => page?.items.map((e) => e.id);
    const all = await store.listEventsPage(p, "s", { limit: 10 });
    t.same(ids(all), ["e-c", "e-a", "e-b", "e-d", "e-e"], "by init_us, then id");
    t.equal(all?.next, null);
    const stored = (await snapshot(p, "s"))?.events ?? [];
    sameData(
      t,
      [...(all?.items ?? [])].sort((x, y) => (x.id < y.id ? -1 : 1)),
      [...stored].sort((x, y) => (x.id < y.id ? -1 : 1)),
      "the events as readSession gives them",
    );
    t.equal((await store.listEventsPage(p, "s", { limit: 5 }))?.next, null, "a last page exactly full: no next");

    const first = await store.listEventsPage(p, "s", { limit: 2 });
    t.same(ids(first), ["e-c", "e-a"]);
    t.strictSame(first?.next, { init_us: US0 + 1, id: "e-a" });
    const second = await store.listEventsPage(p, "s", { limit: 2, ...(first?.next ? { after: first.next } : {}) });
    t.same(ids(second), ["e-b", "e-d"]);
    t.strictSame(second?.next, { init_us: US0 + 2, id: "e-d" });
    const third = await store.listEventsPage(p, "s", { limit: 2, ...(second?.next ? { after: second.next } : {}) });
    t.same(ids(third), ["e-e"]);
    t.equal(third?.next, null);

    t.same(ids(await store.listEventsPage(p, "s", { limit: 10, types: ["llm"] })), ["e-b", "e-e"], "one kind");
    t.same(ids(await store.listEventsPage(p, "s", { limit: 10, types: ["tool", "error"] })), ["e-c", "e-a"], "kinds");
    t.strictSame(
      await store.listEventsPage(p, "s", { limit: 10, types: ["action"] }),
      { items: [eventAt("e-d", US0 + 2, { type: "action" })], next: null },
      "whole events",
    );
    const llm1 = await store.listEventsPage(p, "s", { limit: 1, types: ["llm"] });
    t.same(ids(llm1), ["e-b"]);
    t.strictSame(llm1?.next, { init_us: US0 + 1, id: "e-b" });
    const llm2 = await store.listEventsPage(p, "s", {
      limit: 1,
      types: ["llm"],
      ...(llm1?.next ? { after: llm1.next } : {}),
    });
    t.same(ids(llm2), ["e-e"], "paging within kinds");
    t.equal(llm2?.next, null);
  });

  t.test("deleteSession removes the session with its events and agents", async (t) => {
    const { store, p, snapshot } = await fresh(t);
    await store.createSession(p, newSession("s", { tags: ["a"] }));
    await store.createSession(p, newSession("kept"));
    await store.insertEvents(p, "s", [event("e1"), event("e2", { agent_id: "agent" })]);
    await store.insertEvents(p, "kept", [event("e1")]);
    await store.upsertAgent(p, "s", { id: "agent", name: "n", extra: { x: 1 } });
    await store.upsertAgent(p, "kept", { id: "agent", name: "n", extra: {} });
    const kept = await snapshot(p, "kept");

    t.equal(await store.deleteSession(p, "s"), true);
    t.equal(await store.getSession(p, "s"), undefined);
    t.equal(await snapshot(p, "s"), undefined);
    t.equal(await store.listEventsPage(p, "s", { limit: 10 }), undefined);
    t.equal(await store.deleteSession(p, "s"), false, "a second delete finds nothing");
    t.same(await store.listSessions(p, { agent_id: "agent" }, undefined, 10).then((page) => page.items.length), 1);
    t.strictSame(await snapshot(p, "kept"), kept, "another session keeps its events and agents");

    t.strictSame(await store.createSession(p, newSession("s")), { created: true, projectId: p }, "the id is free");
    const again = await snapshot(p, "s");
    t.strictSame(again?.events, [], "no event is left");
    t.strictSame(again?.agents, [], "no agent is left");
    t.strictSame(again?.totals, NO_TOTALS);
    t.equal(again?.session.tags, null, "the new session is the new one");
    t.equal(await store.insertEvents(p, "s", [event("e1", { model: "new" })]), true);
    t.equal((await snapshot(p, "s"))?.events[0]?.model, "new", "an old event id is new again");
  });

  t.test("4.3: a JWT's write through a revoked, unknown or other project's key stores nothing", async (t) => {
    const { store, p, key, otherKey, snapshot } = await fresh(t);
    const revoked = await store.createApiKey("hash-revoked", "revoked0", "mine", T0);
    await store.revokeApiKey(revoked.id, "2026-11-22T01:00:00Z");
    await store.createSession(p, newSession("s"));
    await store.insertEvents(p, "s", [event("e1")]);
    const writes = (keyId: string, n: number): [string, () => Promise<unknown>][] => [
      ["updateSession", () => store.updateSession(p, "s", { end_state: "Fail", extra: { [`x${n}`]: 1 } }, keyId)],
      ["insertEvents", () => store.insertEvents(p, "s", [event(`e-${n}`)], keyId)],
      ["updateEvents", () => store.updateEvents(p, "s", [patch({ event_id: "e1", model: `m${n}` })], keyId)],
      ["upsertAgent", () => store.upsertAgent(p, "s", { id: `a${n}`, name: "x", extra: {} }, keyId)],
    ];
    const refusals = async (keyId: string, why: string, n: number) => {
      for (const [name, write] of writes(keyId, n)) {
        const error = await failure(write());
        t.ok(error instanceof KeyRevoked, `${name}, with a key ${why}: KeyRevoked (got ${String(error)})`);
      }
    };

    let before = await snapshot(p, "s");
    await refusals(revoked.id, "revoked", 1);
    await refusals("no-such-key", "unknown", 2);
    await refusals(otherKey.id, "of another project", 3);
    t.strictSame(await snapshot(p, "s"), before, "none stored anything");

    const mixed = await Promise.allSettled([
      store.insertEvents(p, "s", [event("ok-1")], key.id),
      store.insertEvents(p, "s", [event("refused")], revoked.id),
      store.upsertAgent(p, "s", { id: "ok-agent", name: null, extra: {} }, key.id),
    ]);
    t.same(
      mixed.map((outcome) => outcome.status),
      ["fulfilled", "rejected", "fulfilled"],
      "issued together, only the refused write fails",
    );
    t.ok(mixed[1]?.status === "rejected" && mixed[1].reason instanceof KeyRevoked);

    t.ok(await store.updateSession(p, "s", { end_state: "Success", extra: { live: 1 } }, key.id), "a live key writes");
    t.equal(await store.insertEvents(p, "s", [event("ok-2")], key.id), true);
    t.strictSame(await store.updateEvents(p, "s", [patch({ event_id: "e1", model: "live" })], key.id), {
      status: "updated",
      updated: 1,
    });
    t.equal(await store.upsertAgent(p, "s", { id: "live", name: null, extra: {} }, key.id), true);
    const written = await snapshot(p, "s");
    t.same(written?.events.map((e) => e.id).sort(), ["e1", "ok-1", "ok-2"]);
    t.same(written?.agents.map((a) => a.id).sort(), ["live", "ok-agent"]);
    t.match(written?.session, { end_state: "Success", extra: { live: 1 } });

    await store.revokeApiKey(key.id, "2026-11-22T02:00:00Z");
    before = await snapshot(p, "s");
    await refusals(key.id, "revoked after its JWT was issued", 4);
    t.strictSame(await snapshot(p, "s"), before, "nothing stored after the revoke");
    t.equal(await store.insertEvents(p, "s", [event("no-jwt")]), true, "an API key's write (no keyId) still writes");
  });

  t.test("ping answers the schema version", async (t) => {
    const { store } = await bare(t);
    t.equal(await store.ping("2026-11-22T06:00:00Z"), adapter.schemaVersion);
    t.equal(await store.ping("2026-11-22T06:00:01Z"), adapter.schemaVersion, "again");
  });

  t.test("G7: every write resolves only once it is committed", async (t) => {
    const { store, committed, p } = await fresh(t);
    if (committed === undefined) {
      t.pass("skipped: the runner gives no second connection to look through");
      return;
    }
    const seen = (id: string) => committed.readSession(p, id, WHOLE);
    // Each check runs as the write resolves (in its then), before anything else can commit.
    const key = await store.createApiKey("hash-g7", "g7g7g7g7", "mine", T0).then(async (k) => ({
      k,
      seen: await committed.apiKeyById(k.id),
    }));
    t.strictSame(key.seen, key.k, "createApiKey");
    t.equal(
      await store
        .revokeApiKey(key.k.id, "2026-11-22T01:00:00Z")
        .then(async () => (await committed.apiKeyById(key.k.id))?.revoked_at),
      "2026-11-22T01:00:00Z",
      "revokeApiKey",
    );
    t.ok(await store.createSession(p, newSession("s")).then(() => seen("s")), "createSession");
    t.equal(
      await store
        .updateSession(p, "s", { end_state: "Fail", extra: {} })
        .then(async () => (await seen("s"))?.session.end_state),
      "Fail",
      "updateSession",
    );
    t.same(
      await store.insertEvents(p, "s", [event("e1")]).then(async () => (await seen("s"))?.events.map((e) => e.id)),
      ["e1"],
      "insertEvents",
    );
    t.equal(
      await store
        .updateEvents(p, "s", [patch({ event_id: "e1", model: "patched" })])
        .then(async () => (await seen("s"))?.events[0]?.model),
      "patched",
      "updateEvents",
    );
    t.same(
      await store
        .upsertAgent(p, "s", { id: "a", name: null, extra: {} })
        .then(async () => (await seen("s"))?.agents.map((a) => a.id)),
      ["a"],
      "upsertAgent",
    );
    t.equal(await store.deleteSession(p, "s").then(() => seen("s")), undefined, "deleteSession");

    // Many at once: each one, as it resolves, is committed.
    const N = 40;
    for (let i = 0; i < N; i++) await store.createSession(p, newSession(`s${i}`));
    const checks = Array.from({ length: N }, (_, i) =>
      Promise.all([
        store.insertEvents(p, `s${i}`, [event(`e${i}`)]).then(async () => (await seen(`s${i}`))?.events.length === 1),
        store
          .updateSession(p, `s${i}`, { extra: { [`k${i}`]: i } })
          .then(async () => (await seen(`s${i}`))?.session.extra[`k${i}`] === i),
      ]),
    );
    t.ok(
      (await Promise.all(checks)).flat().every(Boolean),
      `${2 * N} concurrent writes, each committed when it resolved`,
    );
  });

  t.test("close commits what was queued; later calls reject", async (t) => {
    const { store, committed, p, close } = await fresh(t);
    await store.createSession(p, newSession("s"));
    const queued = [
      store.insertEvents(
        p,
        "s",
        Array.from({ length: 200 }, (_, i) => event(`e${i}`)),
      ),
      store.updateSession(p, "s", { end_state: "Success", extra: { last: true } }),
      store.upsertAgent(p, "s", { id: "a", name: null, extra: {} }),
      store.createSession(p, newSession("s2")),
    ];
    await close();
    const [inserted, updated, upserted, created] = await Promise.all(queued);
    t.equal(inserted, true, "insertEvents made before close resolved");
    t.match(updated, { session: { end_state: "Success", extra: { last: true } } }, "updateSession too");
    t.equal(upserted, true, "upsertAgent too");
    t.strictSame(created, { created: true, projectId: p }, "createSession too");
    // As a storage fault (O4: 503, the call may succeed later), whichever call it is.
    const later: [string, () => Promise<unknown>][] = [
      ["a read", () => store.getSession(p, "s")],
      ["a write", () => store.insertEvents(p, "s", [event("late")])],
      ["listApiKeys", () => store.listApiKeys()],
      ["apiKeyById", () => store.apiKeyById("x")],
      ["ping", () => store.ping("2026-11-22T06:00:00Z")],
    ];
    for (const [what, call] of later) {
      const error = await failure(call());
      t.ok(
        error instanceof StorageFault && error.kind === "unavailable",
        `${what} after close rejects with an unavailable StorageFault (got ${String(error)})`,
      );
    }
    if (committed !== undefined) {
      const s = await committed.readSession(p, "s", WHOLE);
      t.equal(s?.events.length, 200, "the queued events are committed");
      t.notOk(
        s?.events.some((e) => e.id === "late"),
        "the late one is not",
      );
      t.match(s?.session, { end_state: "Success", extra: { last: true } }, "the update is committed");
      t.same(
        s?.agents.map((a) => a.id),
        ["a"],
      );
      t.ok(await committed.readSession(p, "s2", WHOLE), "the created session is committed");
    }
  });
}
