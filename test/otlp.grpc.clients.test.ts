/**
 * OTLP/gRPC with real clients (docs/decisions/028-otlp-grpc.md): the OpenTelemetry JS SDK's gRPC
 * trace and logs exporters (@opentelemetry/exporter-*-otlp-grpc, plain and gzip) send an agent
 * trace and its GenAI log records to agentmon's gRPC port, and the same spans and records go to
 * another agentmon through the SDK's OTLP/HTTP exporters; and every recorded request of
 * test/fixtures/otlp is sent again over gRPC with a grpc-js client and over OTLP/HTTP. Each
 * session reads back the same through the read API, whichever way it came.
 */
import { readdirSync, readFileSync } from "node:fs";
import * as grpc from "@grpc/grpc-js";
import { context, SpanStatusCode, trace } from "@opentelemetry/api";
import { OTLPLogExporter as GrpcLogExporter } from "@opentelemetry/exporter-logs-otlp-grpc";
import { OTLPLogExporter as HttpLogExporter } from "@opentelemetry/exporter-logs-otlp-http";
import { OTLPTraceExporter as GrpcTraceExporter } from "@opentelemetry/exporter-trace-otlp-grpc";
import { OTLPTraceExporter as ProtoTraceExporter } from "@opentelemetry/exporter-trace-otlp-proto";
import { CompressionAlgorithm } from "@opentelemetry/otlp-exporter-base";
import { resourceFromAttributes } from "@opentelemetry/resources";
import {
  InMemoryLogRecordExporter,
  LoggerProvider,
  type ReadableLogRecord,
  SimpleLogRecordProcessor,
} from "@opentelemetry/sdk-logs";
import {
  BasicTracerProvider,
  InMemorySpanExporter,
  type ReadableSpan,
  SimpleSpanProcessor,
} from "@opentelemetry/sdk-trace-base";
import t from "tap";
import { decodeTraces, quoteBigIntegers, readTracesJson } from "../ingest/otlp/decode.ts";
import { API_KEY, build } from "./helper.ts";
import { encodeTraces } from "./otlp.encode.ts";
import { BEARER, exported, grpcAgentmon, sessionOf } from "./otlp.grpc.helpers.ts";

/** An agent that chats and calls a failing tool, with the chat's messages as GenAI log records. */
async function recordAgent() {
  const spans = new InMemorySpanExporter();
  const records = new InMemoryLogRecordExporter();
  const resource = resourceFromAttributes({ "service.name": "grpc-agent" });
  const tracer = new BasicTracerProvider({ resource, spanProcessors: [new SimpleSpanProcessor(spans)] }).getTracer(
    "grpc-test",
    "1.0.0",
  );
  const logger = new LoggerProvider({
    resource,
    processors: [new SimpleLogRecordProcessor({ exporter: records })],
  }).getLogger("grpc-test");
  const agent = tracer.startSpan("invoke_agent weather", {
    attributes: { "gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "weather-agent" },
  });
  const inAgent = trace.setSpan(context.active(), agent);
  const chat = tracer.startSpan(
    "chat gpt-4o-mini",
    {
      attributes: {
        "gen_ai.operation.name": "chat",
        "gen_ai.request.model": "gpt-4o-mini",
        "gen_ai.usage.input_tokens": 57,
        "gen_ai.usage.output_tokens": 17,
      },
    },
    inAgent,
  );
  const inChat = trace.setSpan(context.active(), chat);
  logger.emit({
    eventName: "gen_ai.user.message",
    body: { content: "What is the weather in Paris?" },
    attributes: { "gen_ai.system": "openai" },
    context: inChat,
  });
  logger.emit({
    eventName: "gen_ai.choice",
    body: { index: 0, finish_reason: "stop", message: { content: "It is sunny in Paris." } },
    attributes: { "gen_ai.system": "openai" },
    context: inChat,
  });
  chat.end();
  const tool = tracer.startSpan(
    "execute_tool get_weather",
    { attributes: { "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "get_weather" } },
    inAgent,
  );
  tool.recordException(new TypeError("the weather service is down"));
  tool.setStatus({ code: SpanStatusCode.ERROR, message: "the tool failed" });
  tool.end();
  agent.end();
  return {
    spans: spans.getFinishedSpans(),
    records: records.getFinishedLogRecords(),
    traceId: agent.spanContext().traceId,
  };
}

interface Exporter<T> {
  export(items: T[], done: (result: { code: number; error?: Error }) => void): void;
  shutdown(): Promise<void>;
}

/** Exports the items; answers the SDK's result code (0: SUCCESS) and its error, if any. */
function exportWith<T>(exporter: Exporter<T>, items: T[]) {
  return new Promise<{ code: number; error?: string }>((resolve) => {
    exporter.export(items, (result) =>
      resolve({ code: result.code, ...(result.error ? { error: String(result.error) } : {}) }),
    );
  });
}

for (const gzip of [false, true]) {
  t.test(`the SDK's gRPC trace and logs exporters${gzip ? ", gzip" : ""}: stored as over OTLP/HTTP`, async (t) => {
    const { spans, records, traceId } = await recordAgent();
    const grpcSide = await grpcAgentmon(t);
    const httpSide = await build(t);
    const httpBase = await httpSide.app.listen({ port: 0, host: "127.0.0.1" });

    const metadata = new grpc.Metadata();
    metadata.set("authorization", `Bearer ${API_KEY}`);
    const grpcOptions = {
      url: grpcSide.listener.url,
      metadata,
      ...(gzip ? { compression: CompressionAlgorithm.GZIP } : {}),
    };
    const traces = new GrpcTraceExporter(grpcOptions);
    const logs = new GrpcLogExporter(grpcOptions);
    t.teardown(async () => {
      await traces.shutdown();
      await logs.shutdown();
    });
    t.strictSame(await exportWith<ReadableSpan>(traces, spans), { code: 0 }, "the spans are exported over gRPC");
    t.strictSame(await exportWith<ReadableLogRecord>(logs, records), { code: 0 }, "the log records too");

    const headers = { authorization: `Bearer ${API_KEY}` };
    const httpTraces = new ProtoTraceExporter({ url: `${httpBase}/v1/traces`, headers });
    const httpLogs = new HttpLogExporter({ url: `${httpBase}/v1/logs`, headers });
    t.teardown(async () => {
      await httpTraces.shutdown();
      await httpLogs.shutdown();
    });
    t.strictSame(await exportWith<ReadableSpan>(httpTraces, spans), { code: 0 }, "the same spans over OTLP/HTTP");
    t.strictSame(await exportWith<ReadableLogRecord>(httpLogs, records), { code: 0 }, "the same records");

    const viaGrpc = await exported(grpcSide.env, sessionOf(traceId));
    const viaHttp = await exported(httpSide, sessionOf(traceId));
    t.equal(viaGrpc.status, 200);
    t.strictSame(viaGrpc.body, viaHttp.body, "the read API gives the same session, agent and events");
    const doc = viaGrpc.body as { agents: { name?: string }[]; events: Record<string, any>[] };
    t.equal(doc.agents[0]?.name, "weather-agent", "the agent");
    const llm = doc.events.find((e) => e.type === "llm");
    t.match(llm, { model: "gpt-4o-mini", prompt_tokens: 57, completion_tokens: 17 }, "the chat");
    t.match(JSON.stringify(llm?.prompt), /What is the weather in Paris\?/, "its prompt, from the log record");
    t.match(JSON.stringify(llm?.completion), /It is sunny in Paris\./, "its completion, from the log record");
    t.ok(
      doc.events.some((e) => e.type === "error" && e.error_type === "TypeError"),
      "the tool's exception is an error event",
    );
  });
}

const FIXTURES = new URL("./fixtures/otlp/", import.meta.url);

/** Every recorded /v1/traces body of test/fixtures/otlp, as protobuf bytes (OTLP/JSON ones encoded). */
function recordedTraces(): { name: string; body: Uint8Array }[] {
  const found: { name: string; body: Uint8Array }[] = [];
  for (const client of readdirSync(FIXTURES, { withFileTypes: true }).filter((d) => d.isDirectory())) {
    for (const leaf of readdirSync(new URL(`${client.name}/`, FIXTURES))) {
      const dir = new URL(`${client.name}/${leaf}/`, FIXTURES);
      for (const file of readdirSync(dir).filter((name) => /^\d\d-post-v1-traces\.body\./.test(name))) {
        if (file.endsWith(".otlp.json")) continue; // the twin of a .bin
        const bytes = readFileSync(new URL(file, dir));
        const body = file.endsWith(".bin")
          ? new Uint8Array(bytes)
          : encodeTraces(readTracesJson(JSON.parse(quoteBigIntegers(bytes.toString("utf8")))));
        found.push({ name: `${client.name}/${leaf}/${file}`, body });
      }
    }
  }
  return found;
}

t.test("the recorded requests of real clients, sent again over gRPC, read back as over OTLP/HTTP", async (t) => {
  const fixtures = recordedTraces();
  t.ok(fixtures.length >= 5, `${fixtures.length} recorded requests`);
  const grpcSide = await grpcAgentmon(t);
  const httpSide = await build(t);
  for (const { name, body } of fixtures) {
    const outcome = await grpcSide.client.call("traces", body, BEARER);
    t.equal(outcome.code, grpc.status.OK, `${name}: ${outcome.details}`);
    t.equal(outcome.response?.length, 0, `${name}: every span stored`);
    const res = await httpSide.inject({
      method: "POST",
      url: "/v1/traces",
      headers: { "content-type": "application/x-protobuf", ...BEARER },
      payload: Buffer.from(body),
    });
    t.equal(res.statusCode, 200, name);
    const traceIds = new Set(
      decodeTraces(body).resourceSpans.flatMap((r) => r.scopeSpans.flatMap((s) => s.spans.map((span) => span.traceId))),
    );
    for (const traceId of traceIds) {
      const viaGrpc = await exported(grpcSide.env, sessionOf(traceId));
      t.equal(viaGrpc.status, 200, `${name}: trace ${traceId} is a session`);
      t.strictSame(viaGrpc.body, (await exported(httpSide, sessionOf(traceId))).body, `${name}: the same session`);
    }
  }
});
