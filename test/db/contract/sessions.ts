/** The Store contract: Sessions: create, project scoping, update (one transaction, concurrent updates lose nothing), delete. */
import type { Test } from "tap";
import type { EndState, SessionChanges } from "../../../domain/types.ts";
import { iso, patch, US0 } from "../records.ts";
import type { Fixtures } from "./fixture.ts";
import { event, NASTY, NO_TOTALS, nasty, newSession, sameData, WHOLE } from "./values.ts";

export function sessionContract(t: Test, { fresh }: Fixtures) {
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
    // s + U+0001, not U+0000: no adapter is given a NUL (decision 017; see NASTY).
    t.strictSame(
      await store.createSession(p, newSession("s\u0001")),
      { created: true, projectId: p },
      "and s + U+0001",
    );
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
    t.equal(await store.insertEvents(p, "s", [event("e1", { model: "new" })]), 1);
    t.equal((await snapshot(p, "s"))?.events[0]?.model, "new", "an old event id is new again");
  });
}
