/**
 * Helpers of the OTLP mapping tests: the fixtures of test/fixtures/otlp in the canonical form of
 * ingest/otlp/types.ts (what decode.ts gives), and lookups in a mapped trace.
 */
import { readFileSync } from "node:fs";
import type { SpanEventRecord, TraceWrite } from "../../domain/types.ts";
import type { TraceRequest } from "../../ingest/otlp/types.ts";
import { fromRoot } from "../../lib/paths.ts";

export const FIXTURES = {
  agentopsOpenai: "agentops-sdk-0.4.21/openai/03-post-v1-traces.body.otlp.json",
  agentopsDecorator: "agentops-sdk-0.4.21/decorator/03-post-v1-traces.body.otlp.json",
  traceloopProto: "traceloop-instrumentation-openai-0.27.0/otlp-proto/01-post-v1-traces.body.otlp.json",
  traceloopJson: "traceloop-instrumentation-openai-0.27.0/otlp-json/01-post-v1-traces.body.json",
  openinferenceProto: "openinference-instrumentation-openai-4.2.7/otlp-proto/01-post-v1-traces.body.otlp.json",
  openinferenceJson: "openinference-instrumentation-openai-4.2.7/otlp-json/01-post-v1-traces.body.json",
} as const;

/**
 * The canonical form, as the decoder makes it: `intValue` as a decimal string (the Node.js JSON
 * exporter writes numbers), and the repeated fields that OTLP/JSON may leave out present.
 */
function canonical(value: unknown, key = ""): unknown {
  if (Array.isArray(value)) return value.map((item) => canonical(item));
  if (typeof value !== "object" || value === null) {
    return key === "intValue" && typeof value === "number" ? String(value) : value;
  }
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(value)) out[k] = canonical(v, k);
  if ("spanId" in out && "startTimeUnixNano" in out) {
    out.attributes ??= [];
    out.events ??= [];
    out.links ??= [];
  }
  if ("timeUnixNano" in out) out.attributes ??= [];
  return out;
}

export function loadFixture(path: string): TraceRequest {
  const text = readFileSync(fromRoot(`test/fixtures/otlp/${path}`), "utf8");
  return canonical(JSON.parse(text)) as TraceRequest;
}

/** The event of the span with this name (the first), or of this id. */
export function eventNamed(trace: TraceWrite, name: string): SpanEventRecord {
  const found = trace.events.find((event) => (event.extra.otel as { name?: string } | undefined)?.name === name);
  if (!found) throw new Error(`no event for the span ${name}`);
  return found;
}

export function eventsNamed(trace: TraceWrite, name: string): SpanEventRecord[] {
  return trace.events.filter((event) => (event.extra.otel as { name?: string } | undefined)?.name === name);
}

export const eventById = (trace: TraceWrite, id: string) => trace.events.find((event) => event.id === id);
