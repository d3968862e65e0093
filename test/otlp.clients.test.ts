/**
 * otlp.md with real clients, over a real socket: the OpenTelemetry JS SDK's OTLP/HTTP trace
 * exporters (protobuf and OTLP/JSON, plain and gzip) sending a hand-made agent trace, and three
 * GenAI instrumentations of the real `openai` client (Traceloop, OpenInference, OpenTelemetry's
 * own, whose message content goes through the logs SDK to /v1/logs) talking to a fake
 * OpenAI-compatible server. Each trace is read back through the export and checked: the tree,
 * kinds, model, tokens, cost from the price table, messages, the errors, the agent, the scope.
 */
import type { IncomingMessage } from "node:http";
import { context, DiagLogLevel, diag, SpanKind, SpanStatusCode, trace } from "@opentelemetry/api";
import { OTLPTraceExporter as JsonExporter } from "@opentelemetry/exporter-trace-otlp-http";
import { OTLPTraceExporter as ProtoExporter } from "@opentelemetry/exporter-trace-otlp-proto";
import { CompressionAlgorithm } from "@opentelemetry/otlp-exporter-base";
import { resourceFromAttributes } from "@opentelemetry/resources";
import { BatchSpanProcessor, NodeTracerProvider, type SpanExporter } from "@opentelemetry/sdk-trace-node";
import t from "tap";
import { API_KEY, build } from "./helper.ts";
import {
  agentmon,
  collectingLogger,
  type Export,
  fakeOpenAI,
  INSTRUMENTATIONS,
  QUESTION,
  REPLY,
  RESPONSE_MODEL,
  runChild,
  SYSTEM,
  sessionOf,
} from "./otlp.clients.helpers.ts";

/** gpt-4o-mini in prices/models.json: $0.15 and $0.60 per million prompt and completion tokens. */
const PRICE_57_17 = (57 * 0.15 + 17 * 0.6) / 1e6;

const byName = (doc: Export, name: string) => doc.events.filter((e) => e.otel?.name === name);

const EXPORTERS = [
  { media: "protobuf", gzip: false },
  { media: "protobuf", gzip: true },
  { media: "json", gzip: false },
  { media: "json", gzip: true },
] as const;

for (const { media, gzip } of EXPORTERS) {
  t.test(`the SDK's ${media} trace exporter${gzip ? ", gzip" : ""}: an agent, a chat, a failing tool`, async (t) => {
    const { base, env, exported } = await agentmon(t);
    // What reached the socket: the media type and the coding of every OTLP request.
    const seen: { url: string; type: string; encoding: string }[] = [];
    env.app.server.on("request", (req: IncomingMessage) => {
      if (req.url?.startsWith("/v1/")) {
        seen.push({
          url: req.url,
          type: String(req.headers["content-type"]),
          encoding: String(req.headers["content-encoding"] ?? "identity"),
        });
      }
    });
    const { logger, errors } = collectingLogger();
    diag.setLogger(logger, DiagLogLevel.ERROR);
    t.teardown(() => diag.disable());

    const options = {
      url: `${base}/v1/traces`,
      headers: { authorization: `Bearer ${API_KEY}` },
      ...(gzip ? { compression: CompressionAlgorithm.GZIP } : {}),
    };
    const exporter = media === "protobuf" ? new ProtoExporter(options) : new JsonExporter(options);
    const results: number[] = [];
    const recording: SpanExporter = {
      export: (spans, done) =>
        exporter.export(spans, (result) => {
          results.push(result.code);
          done(result);
        }),
      shutdown: () => exporter.shutdown(),
      forceFlush: () => exporter.forceFlush(),
    };
    const provider = new NodeTracerProvider({
      resource: resourceFromAttributes({ "service.name": "clients-sdk", "deployment.environment.name": "test" }),
      spanProcessors: [new BatchSpanProcessor(recording)],
    });
    t.teardown(() => provider.shutdown());
    const tracer = provider.getTracer("agentmon-clients-sdk", "1.2.3");

    // Not registered globally: the parents are passed as contexts, so no test shares a global.
    const root = tracer.startSpan("invoke_agent weather-agent", {
      attributes: { "gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "weather-agent" },
    });
    const under = trace.setSpan(context.active(), root);
    const chat = tracer.startSpan(
      "chat gpt-4o-mini",
      {
        kind: SpanKind.CLIENT,
        attributes: {
          "gen_ai.operation.name": "chat",
          "gen_ai.request.model": "gpt-4o-mini",
          "gen_ai.usage.input_tokens": 57,
          "gen_ai.usage.output_tokens": 17,
          "gen_ai.input.messages": JSON.stringify([{ role: "user", parts: [{ type: "text", content: QUESTION }] }]),
          "gen_ai.output.messages": JSON.stringify([
            { role: "assistant", parts: [{ type: "text", content: REPLY }], finish_reason: "stop" },
          ]),
        },
      },
      under,
    );
    chat.end();
    const tool = tracer.startSpan(
      "execute_tool get_weather",
      {
        attributes: {
          "gen_ai.operation.name": "execute_tool",
          "gen_ai.tool.name": "get_weather",
          "gen_ai.tool.call.arguments": '{"city":"Paris"}',
        },
      },
      under,
    );
    tool.recordException(new TypeError("weather service unreachable"));
    tool.setStatus({ code: SpanStatusCode.ERROR, message: "the tool failed" });
    tool.end();
    root.end();
    await provider.forceFlush();

    const traceId = root.spanContext().traceId;
    const [rootId, chatId, toolId] = [root, chat, tool].map((s) => s.spanContext().spanId);
    const doc = await exported(traceId, (d) => d.events.length >= 5);

    t.ok(results.length > 0 && results.every((code) => code === 0), `every export succeeded: ${results}`);
    t.strictSame(errors, [], "the diag logger got no error");
    t.ok(seen.length > 0, "the exporter reached the server");
    for (const request of seen) {
      t.match(request, {
        url: "/v1/traces",
        type: media === "protobuf" ? /^application\/x-protobuf/ : /^application\/json/,
        encoding: gzip ? "gzip" : "identity",
      });
    }

    t.match(doc.session, { root_span_id: rootId, service_name: "clients-sdk", end_state: "Success" });
    t.strictSame(doc.agents, [{ id: rootId, name: "weather-agent" }], "the invoke_agent span registers the agent");
    t.strictSame(
      doc.events.map((e) => [e.id, e.type, e.parent_id ?? null]).sort(),
      [
        [rootId, "action", null],
        [chatId, "llm", rootId],
        [toolId, "tool", rootId],
        [`${toolId}:exception:0`, "error", toolId],
        [`${toolId}:status`, "error", toolId],
      ].sort(),
      "the tree: ids, kinds and parents (a span's errors under it)",
    );
    t.ok(
      doc.events.every((e) => e.agent_id === rootId),
      "every event is the agent's",
    );
    const llm = doc.events.find((e) => e.id === chatId);
    t.match(llm, {
      model: "gpt-4o-mini",
      prompt_tokens: 57,
      completion_tokens: 17,
      cost_source: "table",
      prompt: [{ role: "user", content: QUESTION }],
      completion: { role: "assistant", content: REPLY },
      otel: { kind: SpanKind.CLIENT + 1, scope: { name: "agentmon-clients-sdk", version: "1.2.3" } },
    });
    t.ok(Math.abs(llm?.cost - PRICE_57_17) < 1e-12, `priced from the price table: ${llm?.cost}`);
    t.match(
      doc.events.find((e) => e.id === toolId),
      {
        name: "get_weather",
        input: '{"city":"Paris"}',
        otel: { status: { code: 2 } },
      },
    );
    const [exception, status] = [`${toolId}:exception:0`, `${toolId}:status`].map((id) =>
      doc.events.find((e) => e.id === id),
    );
    t.match(exception, {
      error_type: "TypeError",
      details: "weather service unreachable",
      logs: /TypeError: weather service unreachable/,
      trigger_event_id: toolId,
    });
    t.match(status, { error_type: "TypeError", details: "the tool failed", trigger_event_id: toolId });
    t.equal(doc.stats.error_count, 2);
    t.match(byName(doc, "invoke_agent weather-agent")[0], { action_type: "invoke_agent weather-agent" });
  });
}

const SCOPES = {
  traceloop: "@traceloop/instrumentation-openai",
  openinference: "@arizeai/openinference-instrumentation-openai",
  opentelemetry: "@opentelemetry/instrumentation-openai",
} as const;

for (const instrumentation of INSTRUMENTATIONS) {
  t.test(`${SCOPES[instrumentation]} on the openai client: a plain and a streamed chat call`, async (t) => {
    const { base, env, exported } = await agentmon(t);
    const openai = await fakeOpenAI(t);
    const { report } = await runChild(t, instrumentation, base, openai.url);
    t.equal(report.plainText, REPLY, "the client got the fake server's answer");
    t.equal(report.streamedText, REPLY, "and its stream");
    t.strictSame(
      openai.requests.map((r) => r.stream ?? false),
      [false, true],
    );
    t.strictSame(report.diagErrors, [], "the diag logger got no error");
    t.ok(report.traceResults.length > 0 && report.traceResults.every((code) => code === 0), "trace exports succeeded");
    if (instrumentation === "opentelemetry") {
      t.ok(report.logResults.length > 0 && report.logResults.every((code) => code === 0), "log exports succeeded");
    }

    const logs = instrumentation === "opentelemetry";
    const doc = await exported(report.traceId, (d) => {
      const llms = d.events.filter((e) => e.type === "llm");
      return llms.length >= 2 && (!logs || llms.every((e) => e.otel?.log_records?.length >= 3));
    });
    const root = report.rootSpanId;
    t.strictSame(doc.agents, [{ id: root, name: "weather-agent" }]);
    t.match(
      doc.events.find((e) => e.id === root),
      { type: "action", agent_id: root },
    );
    t.equal(doc.events.find((e) => e.id === root)?.parent_id, undefined, "the root has no parent");
    const llms = doc.events
      .filter((e) => e.type === "llm")
      .sort((a, b) => (a.init_timestamp < b.init_timestamp ? -1 : 1));
    t.equal(llms.length, 2, "an llm event per call");
    t.equal(doc.events.length, 3, "and nothing else: the root and the two calls");
    const [plain, streamed] = llms;
    for (const [which, event] of [
      ["plain", plain],
      ["streamed", streamed],
    ] as const) {
      t.match(event, { parent_id: root, agent_id: root, otel: { scope: { name: SCOPES[instrumentation] } } }, which);
      t.match(event?.model, /^gpt-4o-mini/, `${which}: the model`);
      const prompt = (event?.prompt ?? []) as { role: string; content: string }[];
      t.strictSame(
        [...prompt].map((m) => [m.role, m.content]).sort(),
        [
          ["system", SYSTEM],
          ["user", QUESTION],
        ],
        `${which}: the prompt's messages`,
      );
      t.strictSame(
        prompt.map((m) => m.role),
        ["system", "user"],
        `${which}: the prompt in the order sent`,
      );
      t.match(event?.completion, { content: REPLY }, `${which}: the completion`);
    }
    t.match(plain, {
      model: RESPONSE_MODEL,
      prompt_tokens: 57,
      completion_tokens: 17,
      cost_source: "table",
    });
    t.ok(Math.abs(plain?.cost - PRICE_57_17) < 1e-12, `priced from the price table: ${plain?.cost}`);
    if (logs) {
      t.strictSame(
        plain?.otel.log_records.map((r: { name: string }) => r.name).sort(),
        ["gen_ai.choice", "gen_ai.system.message", "gen_ai.user.message"],
        "the GenAI log records are kept with their span",
      );
    }

    // T15: export?format=otlp is OTLP/JSON a client could send again, and it stores the same.
    const read = { "x-agentmon-api-key": API_KEY };
    const otlp = await env.inject({
      method: "GET",
      url: `/v2/sessions/${sessionOf(report.traceId)}/export?format=otlp`,
      headers: read,
    });
    const twin = await build(t);
    const sent = await twin.inject({
      method: "POST",
      url: "/v1/traces",
      headers: { "content-type": "application/json", authorization: `Bearer ${API_KEY}` },
      payload: otlp.body,
    });
    t.equal(sent.statusCode, 200, sent.body);
    const copy = await twin.inject({
      method: "GET",
      url: `/v2/sessions/${sessionOf(report.traceId)}/export`,
      headers: read,
    });
    if (!logs) {
      t.strictSame(copy.json().events, doc.events, "the OTLP export sent again stores the same events");
    } else {
      // The log records come back as GenAI span events of their span (ingest/otlp/export.ts): the
      // same events with the same messages, the records now under otel.events.
      const fields = (e: Record<string, unknown>) => [e.id, e.type, e.parent_id, e.model, e.prompt, e.completion];
      t.strictSame(
        copy.json().events.map(fields),
        doc.events.map(fields),
        "the OTLP export sent again: the same messages",
      );
    }
  });
}
