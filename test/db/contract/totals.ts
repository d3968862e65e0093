/**
 * The Store contract: the per-session totals kept at write time (docs/decisions/022-session-totals.md)
 * always equal a fresh count of the session's events, after every kind of write: insert, a
 * duplicate insert, update_events changing tokens, type and times, update_session's end, OTLP
 * spans and log records, deletes.
 */
import type { Test } from "tap";
import type { SessionTotals, SpanEventRecord, TraceWrite } from "../../../domain/types.ts";
import { iso, patch, US0 } from "../records.ts";
import type { Fixtures } from "./fixture.ts";
import { event, eventAt, newSession, WHOLE } from "./values.ts";

/** The totals counted from the events themselves, as the read-time totals of version 6 were. */
function counted(
  events: NonNullable<Awaited<ReturnType<import("../../../db/store.ts").Store["readSession"]>>>["events"],
) {
  const totals: SessionTotals = {
    events: events.length,
    event_counts: { llm: 0, tool: 0, action: 0, error: 0 },
    prompt_tokens: 0,
    completion_tokens: 0,
    cache_read_tokens: 0,
    cache_creation_tokens: 0,
    reasoning_tokens: 0,
    cost: 0,
    first_us: null,
    last_us: null,
  };
  for (const e of events) {
    totals.event_counts[e.type]++;
    const end = e.end_timestamp === null ? e.init_us : Date.parse(e.end_timestamp) * 1000 + micros(e.end_timestamp);
    totals.first_us = Math.min(totals.first_us ?? e.init_us, e.init_us);
    totals.last_us = Math.max(totals.last_us ?? e.init_us, e.init_us, end);
    if (e.type !== "llm") continue;
    totals.prompt_tokens += e.prompt_tokens ?? 0;
    totals.completion_tokens += e.completion_tokens ?? 0;
    totals.cache_read_tokens += e.cache_read_tokens ?? 0;
    totals.cache_creation_tokens += e.cache_creation_tokens ?? 0;
    totals.reasoning_tokens += e.reasoning_tokens ?? 0;
    totals.cost += e.cost ?? 0;
  }
  return totals;
}

/** The microseconds past the millisecond of a stored timestamp (YYYY-MM-DDTHH:MM:SS[.f{1,6}]Z). */
const micros = (text: string) => {
  const fraction = /\.(\d+)Z$/.exec(text)?.[1] ?? "";
  return Number(fraction.padEnd(6, "0").slice(3, 6));
};

/** The models of a session's llm events, with their counts, tokens and cost. */
function models(events: Parameters<typeof counted>[0]) {
  const byModel = new Map<string, { llm: number; prompt: number; completion: number; cost: number }>();
  for (const e of events) {
    if (e.type !== "llm" || e.model === null) continue;
    const m = byModel.get(e.model) ?? { llm: 0, prompt: 0, completion: 0, cost: 0 };
    m.llm++;
    m.prompt += e.prompt_tokens ?? 0;
    m.completion += e.completion_tokens ?? 0;
    m.cost += e.cost ?? 0;
    byModel.set(e.model, m);
  }
  return byModel;
}

export function totalsContract(t: Test, { fresh }: Fixtures) {
  t.test("session totals: the same as a fresh count of the events after every kind of write", async (t) => {
    const { store, p } = await fresh(t);

    /** The stored totals (read, list, update answers) against a count of the stored events. */
    const check = async (id: string, what: string) => {
      const found = await store.readSession(p, id, WHOLE);
      if (!found) throw new Error(`${id}: not found`);
      const expected = counted(found.events);
      const { cost, ...rest } = found.totals;
      const { cost: expectedCost, ...expectedRest } = expected;
      t.strictSame(rest, expectedRest, `${what}: readSession's totals are the events' count`);
      // Sums of doubles in another order may differ in the last bit; never more.
      t.ok(Math.abs(cost - expectedCost) <= 1e-9 * Math.max(1, Math.abs(expectedCost)), `${what}: cost ${cost}`);
      const page = await store.listSessions(p, {}, undefined, 100);
      const listed = page.items.find((item) => item.session.id === id);
      t.strictSame(listed?.totals, found.totals, `${what}: a list row has the same totals`);
      // duration_us, as statsView computes duration_ms: the end, else the last event, else the start.
      const { session } = found;
      const end =
        session.end_timestamp === null
          ? undefined
          : Date.parse(session.end_timestamp) * 1000 + micros(session.end_timestamp);
      const duration = Math.max(0, (end ?? expected.last_us ?? session.init_us) - session.init_us);
      const exact = await store.listSessions(
        p,
        { min_duration_us: duration, max_duration_us: duration },
        undefined,
        100,
      );
      t.ok(
        exact.items.some((item) => item.session.id === id),
        `${what}: duration ${duration} µs`,
      );
      // session_models: every model, and only those, finds the session.
      for (const model of models(found.events).keys()) {
        const hits = await store.listSessions(p, { model }, undefined, 100);
        t.ok(
          hits.items.some((item) => item.session.id === id),
          `${what}: model ${model} finds it`,
        );
      }
      return found;
    };

    await store.createSession(p, newSession("s"));
    await check("s", "no events");
    await store.insertEvents(p, "s", [
      event("a", { model: "m1", prompt_tokens: 10, completion_tokens: 5, cost: 0.1, cost_source: "client" }),
      event("b", { model: "m2", prompt_tokens: 7, completion_tokens: 3, cost: 0.2, cost_source: "client" }),
      eventAt("t1", US0 + 5_000_000, { type: "tool", model: null, prompt_tokens: 99, cost: 9 }, US0 + 9_000_000),
      eventAt("x1", US0 + 2_000_000, { type: "error", model: null }),
      event("c", {
        model: "m1",
        prompt_tokens: 1,
        completion_tokens: 1,
        cache_read_tokens: 4,
        cache_creation_tokens: 2,
        reasoning_tokens: 3,
        cost: 0.3,
        cost_source: "client",
      }),
    ]);
    await check("s", "insert");
    await store.insertEvents(p, "s", [
      event("a", { model: "m3", prompt_tokens: 1000, cost: 50, cost_source: "client" }),
      eventAt("d", US0 - 1_000_000, { type: "action", model: null }),
    ]);
    await check("s", "a duplicate insert (the first copy kept) with a new, earlier event");

    await store.updateEvents(p, "s", [
      patch({ event_id: "a", prompt_tokens: 40, completion_tokens: 2 }),
      patch({ event_id: "b", type: "tool" }),
      patch({ event_id: "t1", end_timestamp: iso(US0 + 60_000_000) }),
    ]);
    const updated = await check("s", "update_events changing tokens, a type and an end");
    t.notOk(
      (await store.listSessions(p, { model: "m2" }, undefined, 10)).items.some((i) => i.session.id === "s"),
      "a model no llm event uses any more is gone",
    );
    t.equal(updated?.totals.event_counts.tool, 2);

    const ended = await store.updateSession(p, "s", {
      end_timestamp: iso(US0 + 120_000_000),
      end_state: "Success",
      extra: {},
    });
    t.strictSame(ended?.totals, updated?.totals, "update_session answers the same totals");
    await check("s", "update_session");

    // OTLP: spans in two requests, one of them twice, then log records.
    const span = (id: string, parent: string | null, s: number, model: string | null): SpanEventRecord => ({
      id,
      type: model ? "llm" : "action",
      parent_id: parent,
      own_agent_id: null,
      init_timestamp: iso(US0 + s * 1_000_000),
      init_us: US0 + s * 1_000_000,
      end_timestamp: iso(US0 + (s + 2) * 1_000_000),
      agent_id: null,
      model,
      prompt_tokens: model ? 11 : null,
      completion_tokens: model ? 4 : null,
      cost: model ? 0.05 : null,
      cost_source: model ? "client" : "unknown",
      fields: {},
      aliases: [],
      extra: {},
    });
    const trace = (spans: SpanEventRecord[]): TraceWrite => ({
      session_id: "trace-1",
      init_timestamp: iso(Math.min(...spans.map((s) => s.init_us))),
      init_us: Math.min(...spans.map((s) => s.init_us)),
      conversation_id: null,
      root: null,
      events: spans,
      agents: [],
    });
    await store.ingestTraces(p, [trace([span("c1", "r", 3, "gpt"), span("c2", "r", 4, "claude")])]);
    await check("trace-1", "OTLP spans");
    await store.ingestTraces(p, [trace([span("r", null, 1, null), span("c1", "r", 3, "gpt")])]);
    await check("trace-1", "OTLP spans again, the parent later and earlier");
    await store.attachSpanRecords(p, [
      {
        session_id: "trace-1",
        span_id: "c1",
        init_timestamp: iso(US0 + 3_000_000),
        init_us: US0 + 3_000_000,
        record: {
          time_us: US0 + 3_000_000,
          digest: "d1",
          event: { name: "gen_ai.user.message", attributes: {}, body: {} },
        },
      },
    ]);
    await check("trace-1", "OTLP log records");

    t.equal(await store.deleteSession(p, "s"), true);
    await store.createSession(p, newSession("s"));
    const again = await check("s", "deleted and made again");
    t.equal(again?.totals.events, 0);
    t.equal((await store.listSessions(p, { model: "m1" }, undefined, 10)).items.length, 0, "no model left behind");
  });
}
