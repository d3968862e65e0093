/**
 * otlp.md T12-T16 on real requests (test/fixtures/otlp): AgentOps SDK 0.4.21 (its OpenAI
 * instrumentation and its decorators), Traceloop and OpenInference on Node.js (protobuf bodies in
 * their OTLP/JSON twin, and the OTLP/JSON bodies as sent).
 */
import t from "tap";
import type { TraceWrite } from "../../domain/types.ts";
import { mapTraces } from "../../ingest/otlp/map.ts";
import { eventById, eventNamed, eventsNamed, FIXTURES, loadFixture } from "./otlp.helpers.ts";

function only(path: string): TraceWrite {
  const writes = mapTraces(loadFixture(path));
  if (writes.length !== 1) throw new Error(`${path}: ${writes.length} traces`);
  return writes[0] as TraceWrite;
}

const kinds = (trace: TraceWrite) =>
  Object.fromEntries(
    trace.events.filter((e) => e.type !== "error").map((e) => [(e.extra.otel as { name: string }).name, e.type]),
  );

t.test("AgentOps 0.4.21 with its OpenAI instrumentation", async (t) => {
  const trace = only(FIXTURES.agentopsOpenai);
  t.equal(trace.session_id, "f6cb039e-e150-3242-4782-8e7aeacfac7e", "the trace id as a UUID");
  t.equal(trace.init_timestamp, "2026-11-24T12:23:07.199604Z", "the earliest start, to the microsecond");
  t.equal(trace.init_us, 1795522987199604);
  t.same(kinds(trace), {
    "plan.task": "action",
    "calculator.tool": "tool",
    "flaky_lookup.tool": "tool",
    "summarize.task": "action",
    "realclient-agent.agent": "action",
    "openai.chat.completion": "llm",
  });
  t.notOk(eventById(trace, "ba5c21a3533d47fd"), "the session root is no event");
  t.equal(trace.events.length, 9, "6 spans and 3 error events");

  const agent = eventNamed(trace, "realclient-agent.agent");
  t.equal(agent.parent_id, "ba5c21a3533d47fd");
  t.equal(agent.own_agent_id, "649b1b9fbb635f35");
  t.same(trace.agents, [{ id: "649b1b9fbb635f35", name: "realclient-agent", extra: {} }]);
  for (const event of trace.events) {
    t.equal(event.agent_id, "649b1b9fbb635f35", `${event.id} is the agent's`);
    if (event !== agent) t.equal(event.parent_id, event.type === "error" ? "8c68d1a82580bb29" : "649b1b9fbb635f35");
  }
  t.equal(eventNamed(trace, "plan.task").fields.action_type, "plan.task");
  t.equal(eventNamed(trace, "plan.task").fields.params, '{"args": ["What is 2 + 2?"], "kwargs": {}}');

  const llm = eventNamed(trace, "openai.chat.completion");
  t.equal(llm.model, "gpt-4o-mini-2024-07-18", "the response model wins");
  t.equal(llm.prompt_tokens, 21);
  t.equal(llm.completion_tokens, 7);
  t.equal(llm.cost, null, "no client cost: the service prices it");
  t.notOk("cost_source" in llm);
  t.same(llm.fields.prompt, [
    { role: "system", content: "You are terse." },
    { role: "user", content: "What is 2 + 2?" },
  ]);
  t.same(llm.fields.completion, { finish_reason: "stop", role: "assistant", content: "2 + 2 = 4" });
  t.equal(llm.init_timestamp, "2026-11-24T12:23:07.200380Z");
  t.equal(llm.end_timestamp, "2026-11-24T12:23:07.213428Z");

  const calculator = eventNamed(trace, "calculator.tool");
  t.match(calculator, { cost: 0.0125, cost_source: "client" });
  t.same(calculator.fields, { name: "calculator", input: '{"args": [2, 2], "kwargs": {}}', output: "4" });
  const flaky = eventNamed(trace, "flaky_lookup.tool");
  t.match(flaky, { cost: 0.002, cost_source: "client", fields: { name: "flaky_lookup" } });

  const message = "agentops-v4-driver-synthetic-b4c9a26d: lookup backend unavailable for 'weather'";
  const errors = trace.events.filter((e) => e.type === "error");
  t.same(
    errors.map((e) => e.id),
    ["8c68d1a82580bb29:exception:0", "8c68d1a82580bb29:exception:1", "8c68d1a82580bb29:status"],
    "both exception events and the status",
  );
  for (const error of errors) {
    t.match(error.fields, { error_type: "RuntimeError", trigger_event_id: "8c68d1a82580bb29" });
    t.equal(error.own_agent_id, null);
  }
  t.equal(errors[0]?.fields.details, message);
  t.match(errors[0]?.fields.logs, /^Traceback/);
  t.equal(errors[2]?.fields.details, `RuntimeError: ${message}`, "the status message");
  t.equal(errors[0]?.init_timestamp, "2026-11-24T12:23:07.214364Z", "at the exception event's time");

  const root = trace.root;
  t.ok(root);
  t.equal(root?.rank, "0:01795522987199604842:ba5c21a3533d47fd");
  t.match(root?.fields, {
    end_timestamp: "2026-11-24T12:23:07.216189Z",
    end_state: "Success",
    end_state_reason: null,
    tags: ["realclient", "driver-v4"],
    conversation_id: null,
    host_env: { "host.name": "host-1", "host.system": "Linux", "cpu.count": 4, "memory.total": 17179869184 },
    extra: { root_span_id: "ba5c21a3533d47fd", root_name: "session.session", service_name: "agentops" },
  });
  t.match(root?.fields.extra.otel_root, { name: "session.session", scope: { name: "agentops" } });
  t.match(root?.fields.extra.resource, { "agentops.project.id": "temporary" });
  t.equal(trace.conversation_id, null);
});

t.test("AgentOps 0.4.21 with its decorators: an llm span of its own", async (t) => {
  const trace = only(FIXTURES.agentopsDecorator);
  const llm = eventNamed(trace, "fake-llm-call.llm");
  t.match(llm, { type: "llm", model: "gpt-4o-mini-2024-07-18", prompt_tokens: 21, completion_tokens: 7, cost: null });
  t.same(llm.fields.prompt, [{ role: "user", content: "What is 2 + 2?" }], "gen_ai.prompt.N before agentops.llm.input");
  t.same(llm.fields.completion, { role: "assistant", content: "2 + 2 = 4" });
  t.equal(llm.agent_id, "04fad08b8276f84c");
  t.same(
    trace.agents.map((a) => a.name),
    ["realclient-agent"],
  );
  t.match(eventNamed(trace, "calculator.tool"), { cost: 0.0125, cost_source: "client" });
  t.equal(trace.root?.fields.end_state, "Success");
});

for (const [label, path] of [
  ["Traceloop, protobuf", FIXTURES.traceloopProto],
  ["Traceloop, OTLP/JSON", FIXTURES.traceloopJson],
  ["OpenInference, protobuf", FIXTURES.openinferenceProto],
  ["OpenInference, OTLP/JSON", FIXTURES.openinferenceJson],
] as const) {
  t.test(`Node.js: ${label}`, async (t) => {
    const trace = only(path);
    const openinference = label.startsWith("OpenInference");
    const chat = openinference ? "OpenAI Chat Completions" : "chat gpt-4o-mini";
    const root = eventNamed(trace, "invoke_agent weather-agent");
    t.match(root, { type: "action", parent_id: null, fields: { action_type: "invoke_agent weather-agent" } });
    t.equal(root.own_agent_id, root.id, "the agent's id is its span id (no gen_ai.agent.id)");
    t.same(trace.agents, [{ id: root.id, name: "weather-agent", extra: {} }]);
    for (const event of trace.events) {
      t.equal(event.agent_id, root.id);
      if (event !== root && event.type !== "error") t.equal(event.parent_id, root.id);
    }
    t.same(kinds(trace), {
      [chat]: "llm",
      "execute_tool get_weather": "tool",
      "execute_tool get_forecast": "tool",
      "invoke_agent weather-agent": "action",
    });

    const [first, second, streamed] = eventsNamed(trace, chat);
    t.match(first, { model: "gpt-4o-mini-2024-07-18", prompt_tokens: 57, completion_tokens: 17, cost: null });
    t.match(second, { prompt_tokens: 57, completion_tokens: 17 });
    t.match(streamed, { prompt_tokens: null, completion_tokens: null }, "a streamed call has no counts");
    t.same(first?.fields.prompt, [
      { role: "system", content: "You answer weather questions." },
      { role: "user", content: "What is the weather in Paris?" },
    ]);
    t.match(second?.fields.completion, { role: "assistant", content: "It is sunny in Paris, 21 °C." });
    t.match(streamed?.fields.completion, { role: "assistant", content: "Paris is sunny, 21 °C." });
    if (openinference) {
      t.match(first?.fields.completion, {
        role: "assistant",
        tool_calls: [{ id: "call_fake_1", function: { name: "get_weather", arguments: '{"city":"Paris"}' } }],
      });
      t.match(second?.fields.prompt, [{}, {}, { role: "assistant" }, { role: "tool", tool_call_id: "call_fake_1" }]);
    } else {
      t.match(first?.fields.completion, {
        role: "assistant",
        content: null,
        finish_reason: "tool_call",
        parts: [{ type: "tool_call", id: "call_fake_1", name: "get_weather", arguments: { city: "Paris" } }],
      });
    }

    const weather = eventNamed(trace, "execute_tool get_weather");
    t.same(weather.fields, {
      name: "get_weather",
      input: '{"city":"Paris"}',
      output: '{"city":"Paris","sky":"sunny","celsius":21}',
    });
    const forecast = eventNamed(trace, "execute_tool get_forecast");
    const errors = trace.events.filter((e) => e.type === "error");
    t.same(
      errors.map((e) => e.id),
      [`${forecast.id}:exception:0`, `${forecast.id}:status`],
    );
    for (const error of errors) {
      t.match(error, {
        parent_id: forecast.id,
        fields: { error_type: "Error", details: "forecast service unavailable (503)", trigger_event_id: forecast.id },
      });
    }
    t.match(errors[0]?.fields.logs, /^Error: forecast service unavailable/);

    t.equal(trace.conversation_id, "conv-0001", "session.id");
    t.match(trace.root, {
      rank: /^1:/,
      fields: {
        end_state: "Success",
        conversation_id: "conv-0001",
        tags: null,
        host_env: { "host.name": "host-1", "os.type": "linux", "process.runtime.name": "nodejs" },
        extra: {
          root_span_id: root.id,
          root_name: "invoke_agent weather-agent",
          service_name: "weather-agent",
          otel_root: null,
        },
      },
    });
    t.equal(trace.root?.fields.end_timestamp, root.end_timestamp);
    t.equal(trace.init_timestamp, root.init_timestamp);
    t.notOk("process.pid" in (trace.root?.fields.host_env ?? {}), "host_env keeps host, os and runtime only");
  });
}

t.test("T17: the same spans in two requests, children first, map to the same events but for agents", async (t) => {
  const whole = only(FIXTURES.agentopsOpenai);
  const request = loadFixture(FIXTURES.agentopsOpenai);
  const later = new Set(["649b1b9fbb635f35", "ba5c21a3533d47fd"]);
  const part = (keep: (id: string) => boolean) => ({
    resourceSpans: request.resourceSpans.map((rs) => ({
      ...rs,
      scopeSpans: rs.scopeSpans.map((ss) => ({ ...ss, spans: ss.spans.filter((s) => keep(s.spanId)) })),
    })),
  });
  const [first] = mapTraces(part((id) => !later.has(id)));
  const [second] = mapTraces(part((id) => later.has(id)));
  t.equal(first?.root, null, "no root yet");
  t.same(first?.agents, []);
  t.ok(
    first?.events.every((e) => e.agent_id === null),
    "the agent is not in this request: the store resolves it",
  );
  t.equal(second?.root?.rank, whole.root?.rank);
  t.same(second?.agents, whole.agents);
  const strip = (events: TraceWrite["events"]) =>
    events.map(({ agent_id: _, ...rest }) => rest).sort((a, b) => (a.id < b.id ? -1 : 1));
  t.same(strip([...(first?.events ?? []), ...(second?.events ?? [])]), strip(whole.events));
  t.equal(first?.session_id, whole.session_id);
  t.equal(second?.init_us, whole.init_us);
});
