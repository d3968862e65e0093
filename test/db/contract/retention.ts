/**
 * The Store contract: retention and bulk delete (issue 16 parts 1 and 2): projects' retention
 * settings, and deleteSessions removing exactly the sessions it must, whole, and nothing else.
 */

import type { Test } from "tap";
import { parseSearch, type SearchQuery } from "../../../domain/search.ts";
import type { SessionFilter, SpanRecordWrite } from "../../../domain/types.ts";
import { deleteSessions, expiredFilter } from "../../../services/retention.ts";
import { iso, US0 } from "../records.ts";
import type { Fixtures } from "./fixture.ts";
import { eventAt, newSession, T0 } from "./values.ts";

const DAY_US = 86_400_000_000;
/** The sweep's cutoff in these tests: 10 days after US0, for a retention of 30 days. */
const CUTOFF = US0 + 10 * DAY_US;
const NOW_MS = (CUTOFF + 30 * DAY_US) / 1000;
/** Small batches, so that the tests cross batch boundaries. */
const SMALL = { maxSessions: 2, maxEvents: 3 };

export function retentionContract(t: Test, { fresh }: Fixtures) {
  t.test("projects: retention settings round trip; an unknown project is not made", async (t) => {
    const { store, p, other } = await fresh(t);
    const before = await store.listProjects();
    t.strictSame(
      before.map(({ id, name, created_at, retention_days }) => ({ id, name, created_at, retention_days })),
      [
        { id: p, name: "mine", created_at: T0, retention_days: null },
        { id: other, name: "theirs", created_at: T0, retention_days: null },
      ],
      "by name, each with the server's default",
    );
    t.strictSame(await store.setRetention("mine", 30), { id: p, name: "mine", created_at: T0, retention_days: 30 });
    t.equal((await store.setRetention("theirs", 0))?.retention_days, 0, "0: forever");
    t.same(
      (await store.listProjects()).map((project) => project.retention_days),
      [30, 0],
    );
    t.equal((await store.setRetention("mine", null))?.retention_days, null, "back to the default");
    t.equal(await store.setRetention("nobody", 5), undefined, "no such project");
    t.equal((await store.listProjects()).length, 2, "and none was made");
  });

  t.test("deleteSessions, idle filter: exactly the sessions idle since before the cutoff, whole", async (t) => {
    const { store, p, other, rows } = await fresh(t);
    const idle = [
      "idle-1",
      "idle-2",
      "idle-3",
      "idle-ended-just-before",
      "idle-many-events",
      "idle-no-events",
      "trace-0000-4000-8000-000000000001",
    ];
    const active = ["old-ended-after", "old-with-recent-event", "old-event-ends-after", "started-at-cutoff", "recent"];
    for (const id of ["idle-1", "idle-2", "idle-3"]) {
      await store.createSession(p, newSession(id));
      await store.insertEvents(p, id, [eventAt(`${id}-e`, US0 + 1_000_000, {}, US0 + 2_000_000)]);
    }
    await store.upsertAgent(p, "idle-1", { id: "agent", name: "a", extra: {} });
    t.ok(await store.appendSessionLog(p, "idle-2", "a log line\n", iso(US0 + 5)), "logs of an idle session");
    await store.createSession(p, newSession("idle-ended-just-before", { end_timestamp: iso(CUTOFF - 1) }));
    await store.createSession(p, newSession("idle-many-events", { init_us: US0 - 1, init_timestamp: iso(US0 - 1) }));
    await store.insertEvents(
      p,
      "idle-many-events",
      [1, 2, 3, 4, 5].map((n) => eventAt(`many-${n}`, US0 + n, {}, CUTOFF - 1)),
    );
    await store.createSession(p, newSession("idle-no-events", { tags: ["searchable"], end_state_reason: "indexed" }));
    const record = (n: number): SpanRecordWrite => ({
      session_id: "trace-0000-4000-8000-000000000001",
      span_id: "s1",
      init_timestamp: iso(US0 + n),
      init_us: US0 + n,
      record: { time_us: US0 + n, digest: `d${n}`, event: { name: "gen_ai.user.message", attributes: {}, body: {} } },
    });
    await store.attachSpanRecords(p, [record(1), record(2)]);

    await store.createSession(p, newSession("old-ended-after", { end_timestamp: iso(CUTOFF) }));
    await store.createSession(p, newSession("old-with-recent-event"));
    await store.insertEvents(p, "old-with-recent-event", [
      eventAt("early", US0 + 1),
      eventAt("recent", CUTOFF + 5_000_000),
    ]);
    await store.createSession(p, newSession("old-event-ends-after"));
    await store.insertEvents(p, "old-event-ends-after", [eventAt("long", US0 + 1, {}, CUTOFF)]);
    await store.createSession(p, newSession("started-at-cutoff", { init_us: CUTOFF, init_timestamp: iso(CUTOFF) }));
    await store.createSession(p, newSession("recent", { init_us: CUTOFF + 1, init_timestamp: iso(CUTOFF + 1) }));
    await store.createSession(other, newSession("theirs-idle"));
    await store.insertEvents(other, "theirs-idle", [eventAt("theirs-e", US0 + 1)]);
    await store.upsertAgent(other, "theirs-idle", { id: "agent", name: "a", extra: {} });

    const filter = expiredFilter(30, NOW_MS);
    t.equal(filter.idle_before_us, CUTOFF);
    // Every table counted with the projections caught up (decision 033), rollups aside: they are
    // per hour and day, not per session (test/db/contract/projections.ts holds them to a rebuild).
    const settled = async () => {
      while ((await store.projectBatch()) > 0) {}
      const all = await rows?.();
      if (all === undefined) return undefined;
      for (const table of Object.keys(all)) if (/rollup/.test(table)) delete all[table];
      return all;
    };
    const counted = await settled();
    const dry = await deleteSessions(store, p, filter, true, SMALL);
    t.strictSame(dry, { sessions: idle.length, events: 8 }, "a dry run counts them");
    t.strictSame(await settled(), counted, "and deletes nothing");

    const removed = await deleteSessions(store, p, filter, false, SMALL);
    t.strictSame(removed, dry, "the real run removes what the dry run counted");
    for (const id of idle) t.equal(await store.getSession(p, id), undefined, `${id}: removed`);
    for (const id of active) t.ok(await store.getSession(p, id), `${id}: kept`);
    t.ok(await store.getSession(other, "theirs-idle"), "another project's idle session: kept");
    if (counted !== undefined) {
      const after = (await settled()) as Record<string, number>;
      const expected = { ...counted };
      expected.sessions = (counted.sessions ?? 0) - idle.length;
      expected.events = (counted.events ?? 0) - 8;
      expected.agents = (counted.agents ?? 0) - 1;
      expected.session_logs = (counted.session_logs ?? 0) - 1;
      expected.span_records = (counted.span_records ?? 0) - 2;
      // The llm events of idle-1, idle-2, idle-3 and idle-many-events: one model each.
      expected.session_models = (counted.session_models ?? 0) - 4;
      // SQLite's search indexes (migration 008): the idle sessions' documents are gone too.
      if (counted.event_search !== undefined) expected.event_search = counted.event_search - 8;
      if (counted.session_search !== undefined) expected.session_search = counted.session_search - 1;
      // Their shares (SQLite's session_shares, decision 033): one per session.
      if (counted.session_shares !== undefined) expected.session_shares = counted.session_shares - idle.length;
      t.strictSame(after, expected, "every table: only the idle sessions' rows are gone");
    }
    t.strictSame(await deleteSessions(store, p, filter, false, SMALL), { sessions: 0, events: 0 }, "again: none");
    const reclaimed = await store.reclaimSpace(100);
    t.ok(reclaimed.freed >= 0 && reclaimed.left >= 0, "reclaimSpace answers pages");
  });

  t.test("deleteSessions: each list filter; a dry run counts what the real run removes", async (t) => {
    const { store, p, other } = await fresh(t);
    const make = async (id: string, fields: Parameters<typeof newSession>[1], events: number) => {
      await store.createSession(p, newSession(id, fields));
      if (events > 0) {
        await store.insertEvents(
          p,
          id,
          Array.from({ length: events }, (_, n) => eventAt(`${id}-${n}`, US0 + n, n === 0 ? { agent_id: id } : {})),
        );
      }
    };
    await make("tag-a", { tags: ["a", "b"] }, 2);
    await make("tag-a-2", { tags: ["a"], init_us: US0 + 1 }, 1);
    await make("failed", { end_state: "Fail", end_state_reason: "Timeout reached", init_us: US0 + 2 }, 3);
    await make("failed-2", { end_state: "Fail", end_state_reason: "other", init_us: US0 + 5 }, 1);
    await make("later", { init_us: US0 + 100 * DAY_US }, 4);
    await make("agent-x", { init_us: US0 + 3 }, 2);
    await make("plain", { init_us: US0 + 4 }, 0);
    await store.createSession(other, newSession("theirs", { tags: ["a"], end_state: "Fail" }));
    const filters: [SessionFilter, string[]][] = [
      [{ tags: ["a", "b"] }, ["tag-a"]],
      [{ tags: ["a"] }, ["tag-a-2"]],
      [{ q: parseSearch("timeout") as SearchQuery }, ["failed"]],
      [{ end_state: "Fail" }, ["failed-2"]],
      [{ from_us: US0 + 50 * DAY_US }, ["later"]],
      [{ agent_id: "agent-x" }, ["agent-x"]],
      [{ to_us: US0 + 50 * DAY_US }, ["plain"]],
    ];
    for (const [filter, ids] of filters) {
      const listed = (await store.listSessions(p, filter, undefined, 100)).items;
      t.same(
        listed.map((item) => item.session.id),
        ids,
        `${JSON.stringify(filter)}: matches`,
      );
      const events = listed.reduce((n, item) => n + item.totals.events, 0);
      const dry = await deleteSessions(store, p, filter, true, SMALL);
      t.strictSame(dry, { sessions: ids.length, events }, `${JSON.stringify(filter)}: counted`);
      t.equal((await store.listSessions(p, filter, undefined, 100)).items.length, ids.length, "dry: kept");
      t.strictSame(await deleteSessions(store, p, filter, false, SMALL), dry, "removed as counted");
      t.same((await store.listSessions(p, filter, undefined, 100)).items, [], "none left");
    }
    t.same((await store.listSessions(p, {}, undefined, 100)).items, [], "the project is empty");
    t.ok(await store.getSession(other, "theirs"), "another project's matching session is kept");
  });

  t.test("deleteSessions: batches of at most maxSessions, and maxEvents past the first session", async (t) => {
    const { store, p } = await fresh(t);
    for (let n = 0; n < 5; n++) {
      await store.createSession(p, newSession(`s${n}`, { init_us: US0 + n }));
      await store.insertEvents(
        p,
        `s${n}`,
        Array.from({ length: n === 4 ? 7 : 1 }, (_, e) => eventAt(`e${e}`, US0 + e)),
      );
    }
    const batch = { maxSessions: 2, maxEvents: 3, dryRun: false };
    const first = await store.deleteSessions(p, {}, batch);
    t.strictSame(first, { sessions: 1, events: 7, next: { init_us: US0 + 4, id: "s4" } }, "a big session alone");
    const second = await store.deleteSessions(p, {}, { ...batch, after: first.next ?? undefined });
    t.strictSame(second, { sessions: 2, events: 2, next: { init_us: US0 + 2, id: "s2" } }, "then two");
    const third = await store.deleteSessions(p, {}, { ...batch, after: second.next ?? undefined });
    t.strictSame(third, { sessions: 2, events: 2, next: null }, "the last");
  });
}
