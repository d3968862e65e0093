/**
 * domain/genai.ts: GenAI messages and events as E4 messages (otlp.md T15), the helpers the storage
 * adapter also applies to GenAI log records that arrive after their span (T3).
 */
import t from "tap";
import {
  completionOf,
  fromGenAiMessages,
  genAiEventMessages,
  messagesFromGenAiEvents,
  toE4Message,
  unflatten,
  withLogRecords,
} from "../../domain/genai.ts";
import { mapLogRecords } from "../../ingest/otlp/logs.ts";
import { mapTraces } from "../../ingest/otlp/map.ts";
import type { LogRecord } from "../../ingest/otlp/types.ts";
import { anyValue, kv, request, span, TRACE } from "./otlp.helpers.ts";

t.test("parts: text becomes content, the others are kept", async (t) => {
  t.same(
    toE4Message({
      role: "assistant",
      parts: [
        { type: "text", content: "Look: " },
        { type: "tool_call", id: "c1", name: "f" },
        { type: "text", content: "done" },
      ],
      finish_reason: "stop",
    }),
    {
      role: "assistant",
      finish_reason: "stop",
      content: "Look: done",
      parts: [{ type: "tool_call", id: "c1", name: "f" }],
    },
  );
  t.same(toE4Message({ role: "user", content: "plain" }), { role: "user", content: "plain" }, "no parts: as it is");
  t.same(fromGenAiMessages('{"role":"user","parts":[{"type":"text","content":"one"}]}'), [
    { role: "user", content: "one" },
  ]);
  t.equal(fromGenAiMessages("not json"), undefined);
  t.equal(fromGenAiMessages("[]"), undefined);
  t.same(completionOf([{ role: "assistant", content: "a" }]), { role: "assistant", content: "a" });
  t.same(completionOf([{ content: "a" }, { content: "b" }]), [{ content: "a" }, { content: "b" }]);
});

t.test("GenAI log records: the body holds the message", async (t) => {
  t.same(
    genAiEventMessages({
      name: "gen_ai.user.message",
      attributes: { "gen_ai.system": "openai" },
      body: { content: "Hi" },
    }),
    {
      prompt: [{ role: "user", content: "Hi" }],
    },
  );
  t.same(
    genAiEventMessages({
      name: "gen_ai.choice",
      attributes: {},
      body: { index: 0, finish_reason: "tool_calls", message: { tool_calls: [{ id: "c", type: "function" }] } },
    }),
    {
      completion: [
        { role: "assistant", tool_calls: [{ id: "c", type: "function" }], index: 0, finish_reason: "tool_calls" },
      ],
    },
  );
  t.same(
    genAiEventMessages({
      name: "gen_ai.client.inference.operation.details",
      attributes: {
        "gen_ai.input.messages": [{ role: "user", parts: [{ type: "text", content: "q" }] }],
        "gen_ai.output.messages": '[{"role":"assistant","parts":[{"type":"text","content":"a"}]}]',
      },
    }),
    { prompt: [{ role: "user", content: "q" }], completion: [{ role: "assistant", content: "a" }] },
  );
  t.same(genAiEventMessages({ name: "gen_ai.content.prompt", attributes: { "gen_ai.prompt": "just text" } }), {
    prompt: [{ content: "just text" }],
  });
  t.same(genAiEventMessages({ name: "gen_ai.unknown", attributes: {} }), {});
  t.same(
    messagesFromGenAiEvents([
      { name: "gen_ai.tool.message", attributes: {}, body: { content: "21", id: "c" } },
      { name: "fallback", attributes: { reason: "x" } },
      { name: "gen_ai.content.completion", attributes: { "gen_ai.completion": "ok" } },
    ]),
    { prompt: [{ role: "tool", content: "21", id: "c" }], completion: [{ content: "ok" }] },
  );
});

t.test("flattened messages", async (t) => {
  const attrs = new Map<string, unknown>([
    ["llm.input_messages.10.message.role", "user"],
    ["llm.input_messages.2.message.role", "assistant"],
    ["llm.input_messages.2.message.tool_calls.0.tool_call.function.name", "f"],
    ["llm.input_messages.2.message.__proto__", "data"],
    ["llm.input_messages.x.message.role", "ignored"],
    ["llm.other", "ignored"],
  ]);
  const list = unflatten(attrs, "llm.input_messages.");
  t.same(list, [
    { role: "assistant", tool_calls: [{ function: { name: "f" } }], ["__proto__"]: "data" },
    { role: "user" },
  ]);
  t.equal(Object.getPrototypeOf(list?.[0]), Object.prototype, "__proto__ stays data");
  t.equal(unflatten(attrs, "gen_ai.prompt."), undefined);
});

t.test("T3: GenAI log records become their span's messages", async (t) => {
  const record = (spanId: string, name: string | undefined, body: unknown, attrs: Record<string, unknown> = {}) => {
    const out: LogRecord = {
      traceId: TRACE,
      spanId,
      attributes: kv(attrs),
      body: anyValue(body),
    };
    if (name !== undefined) out.eventName = name;
    return out;
  };
  const NOW = { iso: "2026-11-22T05:00:00.000000Z", us: 1_795_323_600_000_000 };
  const found = mapLogRecords(
    {
      resourceLogs: [
        {
          resource: { attributes: [] },
          scopeLogs: [
            {
              scope: { name: "genai" },
              logRecords: [
                record("00000000000000a1", "gen_ai.user.message", { content: "Hi" }),
                record(
                  "00000000000000a1",
                  undefined,
                  { index: 0, message: { content: "Hello" } },
                  { "event.name": "gen_ai.choice" },
                ),
                record("00000000000000a1", "app.log", "not GenAI"),
                record("", "gen_ai.user.message", { content: "no span" }),
                record("00000000000000a2", "gen_ai.system.message", { content: "Be brief." }),
              ],
            },
          ],
        },
      ],
    },
    NOW,
  );
  t.same(
    found.map((f) => [f.session_id, f.span_id, f.record.event.name]),
    [
      ["0af76519-16cd-43dd-8448-eb211c80319c", "00000000000000a1", "gen_ai.user.message"],
      ["0af76519-16cd-43dd-8448-eb211c80319c", "00000000000000a1", "gen_ai.choice"],
      ["0af76519-16cd-43dd-8448-eb211c80319c", "00000000000000a2", "gen_ai.system.message"],
    ],
    "only GenAI events that name a span are kept",
  );
  t.equal(found[0]?.record.time_us, NOW.us, "a record without a time is dated now");
  t.not(found[0]?.record.digest, found[1]?.record.digest, "records are told apart by their digest");
  const a1Records = found.filter((f) => f.span_id === "00000000000000a1").map((f) => f.record);
  const a2Records = found.filter((f) => f.span_id === "00000000000000a2").map((f) => f.record);

  const [write] = mapTraces(
    request([
      span({ id: "00000000000000a1", attrs: { "gen_ai.operation.name": "chat", "input.value": "raw" } }),
      span({
        id: "00000000000000a2",
        attrs: { "gen_ai.operation.name": "chat", "gen_ai.input.messages": '[{"role":"user","content":"kept"}]' },
      }),
      span({ id: "00000000000000a3" }),
    ]),
  );
  const [a1, a2, a3] = write?.events ?? [];
  const merged = a1 && withLogRecords(a1, a1Records);
  t.same(merged?.fields, {
    prompt: [{ role: "user", content: "Hi" }],
    completion: { role: "assistant", content: "Hello", index: 0 },
  });
  t.equal(
    (merged?.extra.otel as { log_records: unknown[] } | undefined)?.log_records.length,
    2,
    "the records are kept",
  );
  t.same(a1?.fields, { prompt: "raw" }, "the stored event is not changed in place");
  t.same(a1 && withLogRecords(a1, [...a1Records].reverse()), merged, "the records' order does not matter");
  t.same(a2 && withLogRecords(a2, a2Records)?.fields, a2?.fields, "gen_ai.input.messages outranks GenAI events");
  t.same(a3 && withLogRecords(a3, a1Records)?.fields, a3?.fields, "not an llm event");
});
