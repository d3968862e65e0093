/** The Store contract: Events and agents: insert, totals, update, agent upsert. */
import type { Test } from "tap";
import type { AgentRecord, SessionTotals } from "../../../domain/types.ts";
import { patch, US0 } from "../records.ts";
import type { Fixtures } from "./fixture.ts";
import { event, eventAt, NASTY, NO_TOTALS, nasty, newSession, sameData } from "./values.ts";

export function eventContract(t: Test, { fresh }: Fixtures) {
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
    t.equal(await store.insertEvents(p, "s1", stored), 3, "the number of events stored");
    t.equal(
      await store.insertEvents(p, "s1", [event("e1", { cost: 100, model: "changed", cost_source: "client" })]),
      0,
      "a retry is accepted, and stores nothing (G8)",
    );
    t.equal(await store.insertEvents(p, "s1", [...stored, event("e3")]), 1, "a retry with one more: that one");
    t.equal(
      await store.insertEvents(p, "s2", [event("e1", { cost: 1, cost_source: "client" })]),
      1,
      "the same id in another session is another event",
    );
    t.equal(await store.insertEvents(p, "nope", [event("x")]), false, "unknown session");
    t.equal(await store.insertEvents(other, "s1", [event("x")]), false, "session of another project");
    const s1 = await snapshot(p, "s1");
    t.same(s1?.events.map((e) => e.id).sort(), ["e1", "e2", "e3", "t"]);
    t.equal(s1?.events.find((e) => e.id === "e1")?.cost, 0.25, "the first copy stays");
    t.strictSame(
      s1?.events.find((e) => e.id === "e1"),
      e1,
      "whole",
    );
    t.equal(s1?.totals.cost, 0.75, "only llm events count");
    t.equal((await snapshot(p, "s2"))?.totals.cost, 1);

    t.equal(await store.insertEvents(p, "s2", [event("d", { model: "first" }), event("d", { model: "second" })]), 1);
    t.equal(
      (await snapshot(p, "s2"))?.events.find((e) => e.id === "d")?.model,
      "first",
      "twice in one call: the first",
    );
    t.equal(await store.insertEvents(p, "s2", []), 0, "an empty list, for a session of the project");

    const full = eventAt(
      NASTY,
      US0 + 42,
      {
        type: "tool",
        agent_id: NASTY,
        model: NASTY,
        prompt_tokens: 0,
        completion_tokens: 2 ** 31,
        cache_read_tokens: 0,
        cache_creation_tokens: 2 ** 53 - 1,
        reasoning_tokens: 12,
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
    t.equal(await store.insertEvents(p, "s1", [full, paid, free]), 3);
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

  t.test("insertEvents: calls queued together for one session count each stored event once, first come", async (t) => {
    const { store, p } = await fresh(t);
    await store.createSession(p, newSession("s"));
    await store.createSession(p, newSession("t"));
    // Not awaited one by one, so that a store that groups calls (both do) commits them together.
    const answers = await Promise.all([
      store.insertEvents(p, "s", [event("a"), event("b")]),
      store.insertEvents(p, "s", [event("b"), event("c")]),
      store.insertEvents(p, "t", [event("a")]),
      store.insertEvents(p, "s", [event("a"), event("c")]),
      store.insertEvents(p, "s", [event("d")]),
    ]);
    t.same(answers, [2, 1, 1, 0, 1], "each id counted for the first call that sent it");
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
        { prompt_tokens: 10, completion_tokens: 20, cost: 0.5, cost_source: "client", cache_read_tokens: 4 },
        US0 + 5_000,
      ),
      eventAt("llm-b", US0 + 2_000, {
        prompt_tokens: null,
        completion_tokens: 5,
        cost: null,
        cache_creation_tokens: 7,
        reasoning_tokens: 3,
      }),
      eventAt(
        "tool",
        US0 + 500,
        {
          type: "tool",
          prompt_tokens: 100,
          completion_tokens: 100,
          cost: 9,
          cost_source: "client",
          cache_read_tokens: 50,
          reasoning_tokens: 50,
        },
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
      cache_read_tokens: 4,
      cache_creation_tokens: 7,
      reasoning_tokens: 3,
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
}
