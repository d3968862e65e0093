/**
 * The Store contract: OTLP traces (shared/spec/otlp.md T12-T17) and session logs (T6). The
 * heart of it is a property: a trace's spans sent in any order, split into any requests, some of
 * them twice, give the same session, events and agents as one clean send (T17).
 */
import fc from "fast-check";
import type { Test } from "tap";
import { KeyRevoked } from "../../../db/errors.ts";
import type { RootCandidate, SpanEventRecord, SpanRecordWrite, TraceWrite } from "../../../domain/types.ts";
import { iso, US0 } from "../records.ts";
import type { Fixtures } from "./fixture.ts";
import { failure, WHOLE } from "./values.ts";

const TRACE = "0af76519-16cd-43dd-8448-eb211c80319c";

/** A span's event: `parent` null for a root; `agent` when it is an agent span. */
function span(id: string, parent: string | null, startS: number, agent: string | null = null): SpanEventRecord {
  return {
    id,
    type: agent ? "action" : "llm",
    parent_id: parent,
    own_agent_id: agent,
    init_timestamp: iso(US0 + startS * 1_000_000),
    init_us: US0 + startS * 1_000_000,
    end_timestamp: iso(US0 + (startS + 1) * 1_000_000),
    agent_id: agent,
    model: agent ? null : "gpt-4o-mini",
    prompt_tokens: agent ? null : 10,
    completion_tokens: agent ? null : 5,
    cost: null,
    cost_source: "unknown",
    fields: { name: id },
    aliases: [],
    extra: { otel: { name: id } },
  };
}

const root = (rank: string, state: "Success" | "Fail"): RootCandidate => ({
  rank,
  fields: {
    end_timestamp: iso(US0 + 100_000_000),
    end_state: state,
    end_state_reason: state === "Fail" ? "boom" : null,
    tags: ["otel", rank],
    host_env: { "host.name": "host-1" },
    conversation_id: "conv-1",
    extra: { root_name: rank },
  },
});

/** A trace: root r (session kind), agent a under it, llm calls under a, a second agent b under a. */
const SPANS = [
  span("r", null, 0, "agent-root"),
  span("a", "r", 1, "agent-a"),
  span("c1", "a", 2),
  span("b", "a", 3, "agent-b"),
  span("c2", "b", 4),
  span("c3", "c2", 5),
  span("c4", "a", 6),
];
const ROOTS: Record<string, RootCandidate> = { r: root("0:r", "Success") };

/** The write a request carrying these spans makes (agent ids resolved within it, as the mapping does). */
function writeOf(spans: SpanEventRecord[], conversation: string | null = null): TraceWrite {
  const byId = new Map(spans.map((s) => [s.id, s]));
  const agentOf = (s: SpanEventRecord): string | null =>
    s.own_agent_id ?? (s.parent_id && byId.has(s.parent_id) ? agentOf(byId.get(s.parent_id) as SpanEventRecord) : null);
  const first = Math.min(...spans.map((s) => s.init_us));
  const roots = spans.flatMap((s) => ROOTS[s.id] ?? []).sort((x, y) => (x.rank < y.rank ? -1 : 1));
  return {
    session_id: TRACE,
    init_timestamp: iso(first),
    init_us: first,
    conversation_id: conversation,
    root: roots[0] ?? null,
    events: spans.map((s) => ({ ...s, agent_id: agentOf(s) })),
    agents: spans.flatMap((s) => (s.own_agent_id ? [{ id: s.own_agent_id, name: s.id, extra: {} }] : [])),
  };
}

export function traceContract(t: Test, { fresh }: Fixtures) {
  t.test("ingestTraces: a trace is a session; the root sets its fields; agents are inherited", async (t) => {
    const { store, p } = await fresh(t);
    t.strictSame(
      await store.ingestTraces(p, [writeOf(SPANS.slice(2))]),
      ["created"],
      "its first span makes the session",
    );
    const early = await store.readSession(p, TRACE, WHOLE);
    t.equal(early?.session.end_state, null, "without its root the session is running");
    t.equal(early?.session.init_us, US0 + 2_000_000, "init is the earliest span so far");
    t.equal(early?.events.find((e) => e.id === "c1")?.agent_id, null, "no agent known yet");

    t.strictSame(await store.ingestTraces(p, [writeOf(SPANS.slice(0, 2), "conv-0")]), ["stored"], "then it exists");
    const found = await store.readSession(p, TRACE, WHOLE);
    t.equal(found?.session.init_us, US0, "init moved to the root's start");
    t.equal(found?.session.end_state, "Success");
    t.strictSame(found?.session.tags, ["otel", "0:r"]);
    t.equal(found?.session.conversation_id, "conv-1", "the root's conversation id wins");
    t.strictSame(found?.session.extra, { root_name: "0:r" });
    const agents = Object.fromEntries(found?.events.map((e) => [e.id, e.agent_id]) ?? []);
    t.strictSame(
      agents,
      { r: "agent-root", a: "agent-a", c1: "agent-a", b: "agent-b", c2: "agent-b", c3: "agent-b", c4: "agent-a" },
      "every event has its nearest agent ancestor, also those stored before it",
    );
    t.strictSame(found?.events.find((e) => e.id === "c3")?.parent_id, "c2", "parent ids are kept");
    t.strictSame(found?.agents.map((a) => a.id).sort(), ["agent-a", "agent-b", "agent-root"]);
    t.equal(found?.totals.events, 7);
    t.equal(found?.totals.prompt_tokens, 40);

    const listed = await store.listSessions(p, { conversation_id: "conv-1" }, undefined, 10);
    t.strictSame(
      listed.items.map((i) => i.session.id),
      [TRACE],
      "conversation_id is a filter",
    );
    t.equal((await store.listSessions(p, { conversation_id: "conv-0" }, undefined, 10)).items.length, 0);
  });

  t.test("ingestTraces: another project's trace is refused alone; a revoked key stores nothing", async (t) => {
    const { store, p, other, otherKey, snapshot } = await fresh(t);
    await store.ingestTraces(p, [writeOf(SPANS)]);
    const before = await snapshot(p, TRACE);
    const mine = { ...writeOf([span("x", null, 0)]), session_id: "11111111-2222-4333-8444-555555555555" };
    t.strictSame(await store.ingestTraces(other, [writeOf([span("z", "r", 9)]), mine]), ["foreign", "created"]);
    t.strictSame(await snapshot(p, TRACE), before, "the owner's session did not change");
    t.equal((await store.readSession(other, mine.session_id, WHOLE))?.events.length, 1, "the other trace is stored");

    await store.revokeApiKey(otherKey.id, "2026-11-22T01:00:00Z");
    const later = { ...writeOf([span("y", null, 0)]), session_id: "21111111-2222-4333-8444-555555555555" };
    t.ok((await failure(store.ingestTraces(other, [later], otherKey.id))) instanceof KeyRevoked, "KeyRevoked");
    t.equal(await store.getSession(other, later.session_id), undefined, "nothing stored");
  });

  t.test("T17: any order, any split, spans twice: the same as one clean send", async (t) => {
    const { store, p } = await fresh(t);
    await store.ingestTraces(p, [writeOf(SPANS)]);
    const clean = await store.readSession(p, TRACE, WHOLE);
    await store.deleteSession(p, TRACE);
    const order = fc.shuffledSubarray(SPANS, { minLength: SPANS.length, maxLength: SPANS.length });
    const sends = fc.tuple(
      order,
      fc.array(fc.integer({ min: 1, max: SPANS.length }), { maxLength: 4 }),
      fc.subarray(SPANS),
    );
    await fc.assert(
      fc.asyncProperty(sends, async ([spans, cuts, again]) => {
        const requests: SpanEventRecord[][] = [];
        let at = 0;
        for (const cut of [...cuts, SPANS.length]) {
          if (cut > at) requests.push(spans.slice(at, cut));
          at = Math.max(at, cut);
        }
        if (again.length > 0) requests.push(again);
        for (const request of requests) await store.ingestTraces(p, [writeOf(request)]);
        const result = await store.readSession(p, TRACE, WHOLE);
        await store.deleteSession(p, TRACE);
        return JSON.stringify(result) === JSON.stringify(clean);
      }),
      { numRuns: 60 },
    );
    t.pass("60 random orders and splits gave the clean result");
  });

  t.test("ingestTraces: the best root wins whatever arrives first", async (t) => {
    const { store, p } = await fresh(t);
    const late = { ...writeOf([span("q", null, 5)]), root: root("1:late", "Fail") };
    const best = { ...writeOf([span("r2", null, 1)]), root: root("0:best", "Success") };
    await store.ingestTraces(p, [best]);
    await store.ingestTraces(p, [late]);
    const session = await store.getSession(p, TRACE);
    t.equal(session?.end_state, "Success", "a worse root later changes nothing");
    t.strictSame(session?.tags, ["otel", "0:best"]);
  });

  t.test("attachSpanRecords (T3): GenAI log records join their span's event, before or after it", async (t) => {
    const { store, p, other } = await fresh(t);
    const record = (n: number, name: string, content: string): SpanRecordWrite => ({
      session_id: TRACE,
      span_id: "c1",
      init_timestamp: iso(US0 + n),
      init_us: US0 + n,
      record: { time_us: US0 + n, digest: `d${n}`, event: { name, attributes: {}, body: { content } } },
    });
    const records = [record(2, "gen_ai.choice", "4"), record(1, "gen_ai.user.message", "2 + 2?")];
    const bare = { ...SPANS[2], fields: {} } as SpanEventRecord;

    t.strictSame(await store.attachSpanRecords(p, records), ["created", "stored"], "before the span");
    await store.ingestTraces(p, [writeOf([bare])]);
    const logsFirst = (await store.readSession(p, TRACE, WHOLE))?.events.find((e) => e.id === "c1");
    t.strictSame(
      logsFirst?.fields.prompt,
      [{ role: "user", content: "2 + 2?" }],
      "the records' messages, in time order",
    );
    t.strictSame(logsFirst?.fields.completion, { role: "assistant", content: "4" });
    await store.deleteSession(p, TRACE);

    await store.ingestTraces(p, [writeOf([bare])]);
    await store.attachSpanRecords(p, [records[0] as SpanRecordWrite]);
    await store.attachSpanRecords(p, [records[1] as SpanRecordWrite, records[0] as SpanRecordWrite]);
    const spanFirst = (await store.readSession(p, TRACE, WHOLE))?.events.find((e) => e.id === "c1");
    t.strictSame(spanFirst, logsFirst, "after the span, in another order, one sent twice: the same event");
    t.strictSame(await store.attachSpanRecords(other, records), ["foreign", "foreign"], "another project's trace");
  });

  t.test("session logs (T6): appended in order, sessions created, scoped, deleted with the session", async (t) => {
    const { store, p, other } = await fresh(t);
    t.equal(await store.appendSessionLog(p, TRACE, "one\n", "2026-11-22T05:00:00Z"), 4);
    t.equal(await store.appendSessionLog(p, TRACE, "twö\n", "2026-11-22T05:00:01Z"), 9, "the size is in bytes");
    t.equal(await store.readSessionLog(p, TRACE), "one\ntwö\n");
    t.equal((await store.getSession(p, TRACE))?.end_state, null, "a session made by logs is running");
    t.equal(await store.appendSessionLog(other, TRACE, "x", "2026-11-22T05:00:02Z"), undefined, "another project's");
    t.equal(await store.readSessionLog(other, TRACE), undefined);
    t.ok(await store.deleteSession(p, TRACE));
    t.equal(await store.readSessionLog(p, TRACE), undefined);
    t.equal(await store.appendSessionLog(p, TRACE, "again", "2026-11-22T05:00:03Z"), 5, "nothing left of the old logs");
  });
}
