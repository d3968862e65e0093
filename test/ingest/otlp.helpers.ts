/**
 * Helpers of the OTLP mapping tests: the fixtures of test/fixtures/otlp in the canonical form of
 * ingest/otlp/types.ts (what decode.ts gives), and lookups in a mapped trace.
 */
import { readFileSync } from "node:fs";
import type { JsonObject, SpanEventRecord, TraceWrite } from "../../domain/types.ts";
import type { AnyValue, KeyValue, Span, TraceRequest } from "../../ingest/otlp/types.ts";
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

/** A plain value as an OTLP AnyValue: integers as intValue, other numbers as doubleValue. */
export function anyValue(value: unknown): AnyValue {
  if (typeof value === "string") return { stringValue: value };
  if (typeof value === "boolean") return { boolValue: value };
  if (typeof value === "number") return Number.isInteger(value) ? { intValue: String(value) } : { doubleValue: value };
  if (Array.isArray(value)) return { arrayValue: { values: value.map(anyValue) } };
  if (typeof value === "object" && value !== null) return { kvlistValue: { values: kv(value as JsonObject) } };
  return {};
}

export const kv = (attrs: JsonObject): KeyValue[] =>
  Object.entries(attrs).map(([key, value]) => ({ key, value: anyValue(value) }));

export const TRACE = "0af7651916cd43dd8448eb211c80319c";
export const T0 = 1_700_000_000_000_000_000n;

export interface SpanSpec {
  id: string;
  name?: string;
  parent?: string;
  attrs?: JsonObject;
  /** Nanoseconds after T0. */
  start?: number;
  end?: number;
  status?: Span["status"];
  events?: { name: string; attrs?: JsonObject; at?: number }[];
  trace?: string;
}

/** A canonical span, made short. */
export function span(spec: SpanSpec): Span {
  const out: Span = {
    traceId: spec.trace ?? TRACE,
    spanId: spec.id,
    name: spec.name ?? `span ${spec.id}`,
    kind: 1,
    startTimeUnixNano: String(T0 + BigInt(spec.start ?? 0)),
    endTimeUnixNano: String(T0 + BigInt(spec.end ?? 1000)),
    attributes: kv(spec.attrs ?? {}),
    events: (spec.events ?? []).map((event) => ({
      name: event.name,
      timeUnixNano: String(T0 + BigInt(event.at ?? 500)),
      attributes: kv(event.attrs ?? {}),
    })),
    links: [],
  };
  if (spec.parent !== undefined) out.parentSpanId = spec.parent;
  if (spec.status !== undefined) out.status = spec.status;
  return out;
}

/** A request of these spans, in one resource and one scope. */
export const request = (spans: Span[], resource: JsonObject = { "service.name": "test" }): TraceRequest => ({
  resourceSpans: [{ resource: { attributes: kv(resource) }, scopeSpans: [{ scope: { name: "test" }, spans }] }],
});
