/** The Store contract: Lists: sessions with every filter and keyset pages, a session's events by page. */
import type { Test } from "tap";
import { parseSearch, type SearchQuery } from "../../../domain/search.ts";
import type { EventRecord, NewSession, SessionFilter } from "../../../domain/types.ts";
import { US0 } from "../records.ts";
import type { Fixtures } from "./fixture.ts";
import { event, eventAt, NASTY, nasty, newSession, sameData } from "./values.ts";

const search = (q: string) => parseSearch(q) as SearchQuery;

export function listContract(t: Test, { fresh }: Fixtures) {
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
      [{ q: search("done") }, ["old"], "q: case-insensitive"],
      [{ q: search("äöü") }, ["old"], "q: case-insensitive beyond ASCII"],
      [{ q: search("aou") }, ["old"], "q: accents folded"],
      [{ q: search("ΣΊΣΥΦ") }, ["old"], "q: Greek, a prefix"],
      [{ q: search("100%") }, ["mid-a"], "q: % separates words"],
      [{ q: search("fail_ed") }, ["mid-a"], "q: _ separates words"],
      [{ q: search("x y") }, ["new", "old"], "q: tags, every word (NASTY has [x])"],
      [{ q: search('"ti"') }, [], "q: a quoted word is whole"],
      [{ q: search("ti") }, ["new"], "q: the last word, a prefix"],
      [{ q: search("'; drop") }, ["new"], "q: NASTY's words"],
      [{ q: search("(zzz OR") }, [], "q: no match"],
      [{ tags: ["x"], end_state: "Fail" }, ["mid-a"], "filters together"],
      [{ tags: ["y"], from_us: US0 + 1, q: search("TIME") }, ["new"], "filters together"],
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
}
