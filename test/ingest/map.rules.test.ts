/**
 * otlp.md T12-T16 rule by rule, on small made-up spans: precedence across conventions, kinds,
 * agents, roots and their end states, error events, times and ids.
 */
import t from "tap";
import type { TraceWrite } from "../../domain/types.ts";
import { mapTraces, sessionIdToTraceId, traceIdToSessionId } from "../../ingest/otlp/map.ts";
import { normaliseEndState, tagsOf } from "../../ingest/otlp/root.ts";
import { nanosToTimestamp } from "../../ingest/otlp/values.ts";
import { eventById, request, type SpanSpec, span, TRACE } from "./otlp.helpers.ts";

const one = (...specs: SpanSpec[]): TraceWrite => mapTraces(request(specs.map(span)))[0] as TraceWrite;
const event = (spec: SpanSpec) => one(spec).events[0];

t.test("precedence: two conventions on one span, the first key of otlp.md's list wins", async (t) => {
  const e = event({
    id: "0000000000000001",
    attrs: {
      "llm.model_name": "oi-model",
      "gen_ai.request.model": "requested",
      "gen_ai.response.model": "answered",
      "llm.token_count.prompt": 1,
      "gen_ai.usage.prompt_tokens": 2,
      "gen_ai.usage.input_tokens": 3,
      "llm.token_count.completion": 4,
      "gen_ai.usage.output_tokens": 5,
      "gen_ai.usage.total_cost": 0.5,
      "llm.cost.total": 0.25,
      "gen_ai.prompt.0.role": "user",
      "gen_ai.prompt.0.content": "from gen_ai.prompt",
      "llm.input_messages.0.message.role": "user",
      "llm.input_messages.0.message.content": "from llm.input_messages",
      "output.value": "from output.value",
    },
  });
  t.match(e, {
    type: "llm",
    model: "answered",
    prompt_tokens: 3,
    completion_tokens: 5,
    cost: 0.25,
    cost_source: "client",
  });
  t.same(e?.fields.prompt, [{ role: "user", content: "from llm.input_messages" }]);
  t.equal(e?.fields.completion, "from output.value", "a text completion stays text");

  const fallback = event({
    id: "0000000000000002",
    attrs: { "llm.model_name": "oi-model", "llm.token_count.prompt": 1, "gen_ai.usage.prompt_tokens": 2 },
  });
  t.match(fallback, { type: "llm", model: "oi-model", prompt_tokens: 2, completion_tokens: null, cost: null });
  t.notOk(fallback && "cost_source" in fallback, "no client cost: left to the service");

  const messages = event({
    id: "0000000000000003",
    attrs: {
      "gen_ai.operation.name": "chat",
      "gen_ai.prompt.0.content": "old",
      "gen_ai.input.messages": [{ role: "user", parts: [{ type: "text", content: "new" }] }],
    },
  });
  t.same(messages?.fields.prompt, [{ role: "user", content: "new" }], "a structured gen_ai.input.messages counts");
});

t.test("cache and reasoning counts: each convention's key, OTel's first, set only when given", async (t) => {
  const all = event({
    id: "0000000000000011",
    attrs: {
      "gen_ai.request.model": "m",
      "llm.token_count.prompt_details.cache_read": 1,
      "gen_ai.usage.cache_read_input_tokens": 2,
      "gen_ai.usage.cache_read.input_tokens": 3,
      "llm.token_count.prompt_details.cache_write": 4,
      "gen_ai.usage.cache_creation_input_tokens": 5,
      "gen_ai.usage.cache_creation.input_tokens": 6,
      "llm.token_count.completion_details.reasoning": 7,
      "gen_ai.usage.reasoning_tokens": 8,
      "gen_ai.usage.reasoning.output_tokens": 9,
    },
  });
  t.match(all, { cache_read_tokens: 3, cache_creation_tokens: 6, reasoning_tokens: 9 }, "OpenTelemetry GenAI first");
  const openllmetry = event({
    id: "0000000000000012",
    attrs: {
      "gen_ai.request.model": "m",
      "llm.token_count.prompt_details.cache_read": 1,
      "gen_ai.usage.cache_read_input_tokens": 2,
      "llm.token_count.prompt_details.cache_write": 4,
      "gen_ai.usage.cache_creation_input_tokens": 5,
      "llm.token_count.completion_details.reasoning": 7,
      "gen_ai.usage.reasoning_tokens": "8",
    },
  });
  t.match(openllmetry, { cache_read_tokens: 2, cache_creation_tokens: 5, reasoning_tokens: 8 }, "then OpenLLMetry's");
  const openinference = event({
    id: "0000000000000013",
    attrs: {
      "openinference.span.kind": "LLM",
      "llm.token_count.prompt_details.cache_read": 1,
      "llm.token_count.prompt_details.cache_write": 4,
      "llm.token_count.completion_details.reasoning": 7,
    },
  });
  t.match(
    openinference,
    { cache_read_tokens: 1, cache_creation_tokens: 4, reasoning_tokens: 7 },
    "then OpenInference's",
  );
  const none = event({
    id: "0000000000000014",
    attrs: { "gen_ai.request.model": "m", "gen_ai.usage.cache_read.input_tokens": -1 },
  });
  t.notOk(
    none && ("cache_read_tokens" in none || "cache_creation_tokens" in none || "reasoning_tokens" in none),
    "absent, or not a count: not set",
  );
});

t.test("GenAI span events give the messages when no attribute does", async (t) => {
  const e = event({
    id: "0000000000000004",
    attrs: { "gen_ai.operation.name": "chat", "input.value": "the raw request" },
    events: [
      { name: "gen_ai.system.message", attrs: { content: "Be brief." } },
      { name: "gen_ai.user.message", attrs: { "gen_ai.event.content": '{"content":"Hi"}' } },
      { name: "gen_ai.choice", attrs: { index: 0, finish_reason: "stop", message: { content: "Hello" } } },
    ],
  });
  t.same(e?.fields.prompt, [
    { role: "system", content: "Be brief." },
    { role: "user", content: "Hi" },
  ]);
  t.same(e?.fields.completion, { role: "assistant", content: "Hello", index: 0, finish_reason: "stop" });
});

t.test("kinds: the first rule that matches (T14)", async (t) => {
  const kind = (attrs: Record<string, unknown>) => event({ id: "0000000000000005", name: "work", attrs })?.type;
  t.equal(kind({ "agentops.span.kind": "tool", "openinference.span.kind": "LLM" }), "tool");
  t.equal(kind({ "agentops.span.kind": "workflow", "gen_ai.operation.name": "chat" }), "action");
  t.equal(kind({ "openinference.span.kind": "EMBEDDING" }), "llm");
  t.equal(kind({ "openinference.span.kind": "CHAIN", "gen_ai.request.model": "m" }), "action");
  t.equal(kind({ "traceloop.span.kind": "tool" }), "tool");
  t.equal(kind({ "traceloop.span.kind": "task", "gen_ai.operation.name": "chat" }), "action");
  t.equal(kind({ "gen_ai.operation.name": "embeddings" }), "llm");
  t.equal(kind({ "gen_ai.operation.name": "execute_tool" }), "tool");
  t.equal(kind({ "gen_ai.operation.name": "retrieve" }), "action");
  t.equal(kind({ "llm.request.model_name": "m" }), "llm");
  t.equal(kind({ "tool.name": "search", "tool.parameters": "{}" }), "tool");
  t.equal(kind({}), "action");
  t.same(event({ id: "0000000000000005", name: "work" })?.fields, { action_type: "work" });
  t.same(event({ id: "0000000000000005", name: "t", attrs: { "tool.name": "s", "tool.parameters": "p" } })?.fields, {
    name: "s",
    input: "p",
  });
  t.same(event({ id: "0000000000000005", name: "run", attrs: { "gen_ai.operation.name": "execute_tool" } })?.fields, {
    name: "run",
  });
});

t.test("agents: the nearest agent ancestor, within the request", async (t) => {
  const trace = one(
    { id: "00000000000000a1", attrs: { "openinference.span.kind": "AGENT", "agent.name": "outer" } },
    { id: "00000000000000a2", parent: "00000000000000a1", attrs: { "gen_ai.operation.name": "chat" } },
    {
      id: "00000000000000a3",
      parent: "00000000000000a1",
      attrs: { "gen_ai.operation.name": "invoke_agent", "gen_ai.agent.id": "agent-7", "gen_ai.agent.name": "inner" },
    },
    { id: "00000000000000a4", parent: "00000000000000a3", status: { code: 2 } },
    { id: "00000000000000a5", parent: "00000000000000ff" },
    { id: "00000000000000a6", parent: "00000000000000a5", attrs: { "traceloop.span.kind": "agent" } },
    { id: "00000000000000a7", parent: "00000000000000a6" },
  );
  const agentOf = (id: string) => eventById(trace, id)?.agent_id;
  t.equal(agentOf("00000000000000a1"), "00000000000000a1", "an agent span is its own agent's");
  t.equal(agentOf("00000000000000a2"), "00000000000000a1");
  t.equal(agentOf("00000000000000a3"), "agent-7", "gen_ai.agent.id names the agent");
  t.equal(eventById(trace, "00000000000000a3")?.own_agent_id, "agent-7");
  t.equal(agentOf("00000000000000a4"), "agent-7");
  t.equal(agentOf("00000000000000a4:status"), "agent-7", "an error event has its span's agent");
  t.equal(agentOf("00000000000000a5"), null, "the parent is not in the request: the store decides");
  t.equal(agentOf("00000000000000a7"), "00000000000000a6");
  t.same(
    trace.agents.map((a) => [a.id, a.name]),
    [
      ["00000000000000a1", "outer"],
      ["agent-7", "inner"],
      ["00000000000000a6", null],
    ],
  );
});

t.test("end states (T13, S5)", async (t) => {
  for (const [given, expected] of [
    ["Success", "Success"],
    ["completed", "Success"],
    ["SUCCESS", "Success"],
    ["OK", "Success"],
    ["StatusCode.OK", "Success"],
    ["failed", "Fail"],
    ["ERROR", "Fail"],
    ["StatusCode.ERROR", "Fail"],
    ["Indeterminate", "Indeterminate"],
    ["", "Indeterminate"],
    ["StatusCode.UNSET", "Indeterminate"],
    ["whatever", "Indeterminate"],
    [true, "Indeterminate"],
  ] as const) {
    t.equal(normaliseEndState(given), expected, JSON.stringify(given));
  }
  const root = (spec: Partial<SpanSpec>) => one({ id: "00000000000000e1", ...spec }).root?.fields;
  t.match(root({ status: { code: 2, message: "it broke" } }), { end_state: "Fail", end_state_reason: "it broke" });
  t.match(root({ status: { code: 1 } }), { end_state: "Success", end_state_reason: null });
  t.match(root({ attrs: { "agentops.session.end_state": "Fail", "agentops.legacy.end_state_reason": "why" } }), {
    end_state: "Fail",
    end_state_reason: "why",
  });
});

t.test("the root: ranks, tags, conversation, init", async (t) => {
  const trace = one(
    { id: "00000000000000f3", start: 50, attrs: { "session.id": "from-child" }, parent: "00000000000000f1" },
    { id: "00000000000000f2", start: 10, attrs: { "langfuse.trace.tags": '["a","b"]' } },
    { id: "00000000000000f1", start: 20, attrs: { "agentops.span.kind": "session", "tag.tags": ["x"] } },
  );
  t.equal(trace.root?.rank, "0:01700000000000000020:00000000000000f1", "a session-marked root first");
  t.same(trace.root?.fields.tags, ["x"]);
  t.equal(trace.init_us, 1_700_000_000_000_000, "the earliest start");
  t.equal(trace.conversation_id, "from-child", "no conversation on the root: the first span naming one");
  t.notOk(eventById(trace, "00000000000000f1"), "the session root is no event");
  t.ok(eventById(trace, "00000000000000f2"), "another root is an event");

  const earliest = one({ id: "00000000000000f5", start: 10 }, { id: "00000000000000f4", start: 10 });
  t.equal(earliest.root?.rank, "1:01700000000000000010:00000000000000f4", "same start: the smallest id");
  t.same(one({ id: "00000000000000f6", parent: "00000000000000f7" }).root, null, "no root in the request");
  t.same(tagsOf('["a", 2]'), ["a", "2"]);
  t.same(tagsOf("solo"), ["solo"]);
  t.same(tagsOf(7), null);
});

t.test("error events (T16)", async (t) => {
  const trace = one({
    id: "00000000000000d1",
    name: "call",
    attrs: { "error.type": "Timeout" },
    status: { code: 2, message: "took too long" },
    events: [
      { name: "exception", attrs: { "exception.message": "first" }, at: 100 },
      { name: "retry" },
      { name: "exception", attrs: { "exception.type": "IOError", "exception.stacktrace": "at x" }, at: 300 },
    ],
  });
  t.same(
    trace.events.map((e) => [e.id, e.type]),
    [
      ["00000000000000d1", "action"],
      ["00000000000000d1:exception:0", "error"],
      ["00000000000000d1:exception:1", "error"],
      ["00000000000000d1:status", "error"],
    ],
  );
  const [, first, second, status] = trace.events;
  t.same(first?.fields, { error_type: "Timeout", details: "first", trigger_event_id: "00000000000000d1" });
  t.same(second?.fields, {
    error_type: "IOError",
    details: "took too long",
    logs: "at x",
    trigger_event_id: "00000000000000d1",
  });
  t.same(status?.fields, { error_type: "Timeout", details: "took too long", trigger_event_id: "00000000000000d1" });
  t.equal(first?.init_us, 1_700_000_000_000_000);
  t.equal(status?.init_timestamp, "2023-11-14T22:13:20.000001Z", "at the span's end");
});

t.test("times, ids, values", async (t) => {
  t.same(nanosToTimestamp("1700000000123456789"), { iso: "2023-11-14T22:13:20.123456Z", us: 1700000000123456 });
  t.same(nanosToTimestamp("999"), { iso: "1970-01-01T00:00:00.000000Z", us: 0 });
  t.equal(nanosToTimestamp("0"), undefined);
  t.equal(nanosToTimestamp(undefined), undefined);
  t.equal(traceIdToSessionId(TRACE), "0af76519-16cd-43dd-8448-eb211c80319c");
  t.equal(sessionIdToTraceId("0AF76519-16CD-43DD-8448-EB211C80319C"), TRACE);
  t.equal(sessionIdToTraceId("not a uuid"), undefined);

  const [write] = mapTraces(request([span({ id: "0000000000000011", end: 0 })]));
  t.equal(write?.events[0]?.end_timestamp, "2023-11-14T22:13:20.000000Z");
  const big = request([span({ id: "0000000000000012" })]);
  const s = big.resourceSpans[0]?.scopeSpans[0]?.spans[0];
  s?.attributes.push({ key: "gen_ai.usage.input_tokens", value: { intValue: "9007199254740993" } });
  s?.attributes.push({ key: "gen_ai.operation.name", value: { stringValue: "chat" } });
  t.equal(mapTraces(big)[0]?.events[0]?.prompt_tokens, null, "beyond 2^53: no count (kept in extra.otel)");
});

t.test("traces and repeats in one request", async (t) => {
  const writes = mapTraces(
    request([
      span({ id: "0000000000000021" }),
      span({ id: "0000000000000022", trace: "1".repeat(32) }),
      span({ id: "0000000000000021", name: "again" }),
    ]),
  );
  t.same(
    writes.map((w) => w.session_id),
    [traceIdToSessionId(TRACE), "11111111-1111-1111-1111-111111111111"],
  );
  t.same(
    writes[0]?.events.map((e) => e.fields.action_type),
    ["span 0000000000000021"],
    "a span id seen twice: the first copy",
  );
  t.same(mapTraces({ resourceSpans: [] }), []);
});
