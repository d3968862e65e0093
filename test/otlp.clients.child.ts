/**
 * The child of test/otlp.clients.test.ts: one GenAI instrumentation of the real `openai` client,
 * in a process of its own so that its patching cannot leak into another's. Argument: JSON
 * `{ instrumentation, agentmon, openai, key }`. It registers a NodeTracerProvider exporting
 * protobuf to `<agentmon>/v1/traces` and a LoggerProvider exporting OTLP/JSON to
 * `<agentmon>/v1/logs`, then the instrumentation, loads `openai` through require (the hook
 * require-in-the-middle patches), makes one plain and one streamed chat call under a root span
 * of its own, flushes, shuts down, and prints its report (ChildReport) as the last line.
 */
import { createRequire } from "node:module";
import { OpenAIInstrumentation as OpenInference } from "@arizeai/openinference-instrumentation-openai";
import { DiagLogLevel, diag, trace } from "@opentelemetry/api";
import { logs } from "@opentelemetry/api-logs";
import type { ExportResult } from "@opentelemetry/core";
import { OTLPLogExporter } from "@opentelemetry/exporter-logs-otlp-http";
import { OTLPTraceExporter } from "@opentelemetry/exporter-trace-otlp-proto";
import { type Instrumentation, registerInstrumentations } from "@opentelemetry/instrumentation";
import { OpenAIInstrumentation as OTelOpenAI } from "@opentelemetry/instrumentation-openai";
import { resourceFromAttributes } from "@opentelemetry/resources";
import { BatchLogRecordProcessor, LoggerProvider, type ReadableLogRecord } from "@opentelemetry/sdk-logs";
import { BatchSpanProcessor, NodeTracerProvider, type ReadableSpan } from "@opentelemetry/sdk-trace-node";
import { OpenAIInstrumentation as Traceloop } from "@traceloop/instrumentation-openai";
import type OpenAIModule from "openai";
import {
  type ChildReport,
  collectingLogger,
  type Instrumentation as Name,
  QUESTION,
  SYSTEM,
} from "./otlp.clients.helpers.ts";

const args = JSON.parse(process.argv[2] ?? "{}") as {
  instrumentation: Name;
  agentmon: string;
  openai: string;
  key: string;
};
const headers = { authorization: `Bearer ${args.key}` };

const { logger, errors } = collectingLogger();
diag.setLogger(logger, DiagLogLevel.ERROR);

const traceResults: number[] = [];
const logResults: number[] = [];

/** The exporters, recording each export's result code (0 success, 1 failed). */
class TraceExporter extends OTLPTraceExporter {
  override export(spans: ReadableSpan[], done: (result: ExportResult) => void) {
    super.export(spans, (result) => {
      traceResults.push(result.code);
      done(result);
    });
  }
}
class LogExporter extends OTLPLogExporter {
  override export(records: ReadableLogRecord[], done: (result: ExportResult) => void) {
    super.export(records, (result) => {
      logResults.push(result.code);
      done(result);
    });
  }
}

const resource = resourceFromAttributes({ "service.name": `clients-${args.instrumentation}` });
const tracerProvider = new NodeTracerProvider({
  resource,
  spanProcessors: [new BatchSpanProcessor(new TraceExporter({ url: `${args.agentmon}/v1/traces`, headers }))],
});
tracerProvider.register();
const loggerProvider = new LoggerProvider({
  resource,
  processors: [
    new BatchLogRecordProcessor({ exporter: new LogExporter({ url: `${args.agentmon}/v1/logs`, headers }) }),
  ],
});
logs.setGlobalLoggerProvider(loggerProvider);

const instrumentation = {
  traceloop: () => new Traceloop({ traceContent: true }),
  openinference: () => new OpenInference(),
  opentelemetry: () => new OTelOpenAI({ captureMessageContent: true }),
}[args.instrumentation]?.();
if (instrumentation === undefined) throw new Error(`unknown instrumentation ${args.instrumentation}`);
// Each package builds on its own @opentelemetry/instrumentation (0.203, 0.46, 0.223): one shape.
const unregister = registerInstrumentations({
  tracerProvider,
  loggerProvider,
  instrumentations: [instrumentation as unknown as Instrumentation],
});

// After the registration, so that require-in-the-middle hands the CJS build to the patch.
const { OpenAI } = createRequire(import.meta.url)("openai") as typeof OpenAIModule;
const client = new OpenAI({ apiKey: "sk-clients-test", baseURL: args.openai, maxRetries: 0 });
const messages = [
  { role: "system" as const, content: SYSTEM },
  { role: "user" as const, content: QUESTION },
];

const tracer = trace.getTracer("agentmon-clients-test");
const report = await tracer.startActiveSpan(
  "invoke_agent weather-agent",
  { attributes: { "gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "weather-agent" } },
  async (root) => {
    const plain = await client.chat.completions.create({ model: "gpt-4o-mini", messages });
    const stream = await client.chat.completions.create({ model: "gpt-4o-mini", messages, stream: true });
    let streamedText = "";
    for await (const part of stream) streamedText += part.choices[0]?.delta?.content ?? "";
    root.end();
    const { traceId, spanId } = root.spanContext();
    return { traceId, rootSpanId: spanId, plainText: plain.choices[0]?.message.content ?? "", streamedText };
  },
);

await tracerProvider.forceFlush();
await loggerProvider.forceFlush();
unregister();
await tracerProvider.shutdown();
await loggerProvider.shutdown();

const out: ChildReport = { ...report, diagErrors: errors, traceResults, logResults };
process.stdout.write(`${JSON.stringify(out)}\n`);
