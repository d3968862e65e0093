/**
 * Binary OTLP (application/x-protobuf) into the canonical form of types.ts: generated/otlp.js
 * (pbjs, from proto/) reads the wire format, and these loops turn its messages into the same
 * values that json.ts gives for the same message in OTLP/JSON (bytes ids as lowercase hex, 64-bit
 * integers as decimal strings, zero and absent fields left out).
 */
import protobuf from "protobufjs/minimal.js";
import { opentelemetry } from "../../generated/otlp.js";
import { OtlpDecodeError } from "./errors.ts";
import { canonicalDouble } from "./json-values.ts";
import type {
  AnyValue,
  InstrumentationScope,
  KeyValue,
  LogRecord,
  LogsRequest,
  Resource,
  ResourceLogs,
  ResourceSpans,
  ScopeLogs,
  ScopeSpans,
  Span,
  SpanEvent,
  SpanLink,
  TraceRequest,
} from "./types.ts";

const { ExportTraceServiceRequest } = opentelemetry.proto.collector.trace.v1;
const { ExportLogsServiceRequest } = opentelemetry.proto.collector.logs.v1;

// Without the `long` package protobufjs reads 64-bit fields as doubles, losing digits of every
// nanosecond time: refuse to run like that rather than store wrong times.
if (!protobuf.util.Long) throw new Error("protobufjs found no Long class: 64-bit OTLP fields would lose digits");

/** A 64-bit field as protobufjs gives it: a Long (two signed 32-bit halves). */
type Int64 = number | { low: number; high: number } | null | undefined;

const TWO_32 = 4294967296;

/** A fixed64 (the times) as its exact decimal digits. */
function uint64(v: Int64): string {
  if (v == null) return "0";
  if (typeof v === "number") return String(v);
  const high = v.high >>> 0;
  const low = v.low >>> 0;
  // Below 2^53 a double holds it exactly; above (every time after 1970-04), BigInt does.
  if (high < 0x200000) return String(high * TWO_32 + low);
  return ((BigInt(high) << 32n) | BigInt(low)).toString();
}

/** An int64 (intValue) as its exact decimal digits, negative ones included. */
function int64(v: Int64): string {
  if (v == null) return "0";
  if (typeof v === "number") return String(v);
  const high = v.high | 0;
  const low = v.low >>> 0;
  if (high >= -0x200000 && high < 0x200000) return String(high * TWO_32 + low);
  return BigInt.asIntN(64, (BigInt(high >>> 0) << 32n) | BigInt(low)).toString();
}

const HEX: string[] = [];
for (let i = 0; i < 256; i++) HEX.push(i.toString(16).padStart(2, "0"));

/** Lowercase hex, by table: ids are 8 or 16 bytes, too short for Buffer's hex to pay off. */
function hex(bytes: Uint8Array | null | undefined): string {
  if (!bytes) return "";
  let s = "";
  for (let i = 0; i < bytes.length; i++) s += HEX[bytes[i] as number];
  return s;
}

function base64(bytes: Uint8Array): string {
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString("base64");
}

type PbAnyValue = opentelemetry.proto.common.v1.AnyValue.$Properties;
type PbKeyValue = opentelemetry.proto.common.v1.KeyValue.$Properties;

function anyValue(v: PbAnyValue | null | undefined): AnyValue {
  if (!v) return {};
  switch (v.value) {
    case "stringValue":
      return { stringValue: v.stringValue ?? "" };
    case "boolValue":
      return { boolValue: v.boolValue ?? false };
    case "intValue":
      return { intValue: int64(v.intValue) };
    case "doubleValue":
      return { doubleValue: canonicalDouble(v.doubleValue ?? 0) };
    case "bytesValue":
      return { bytesValue: v.bytesValue ? base64(v.bytesValue) : "" };
    case "arrayValue": {
      const values: AnyValue[] = [];
      const items = v.arrayValue?.values;
      if (items) for (const item of items) values.push(anyValue(item));
      return { arrayValue: { values } };
    }
    case "kvlistValue":
      return { kvlistValue: { values: attributes(v.kvlistValue?.values) } };
    default:
      return {};
  }
}

function attributes(list: PbKeyValue[] | null | undefined): KeyValue[] {
  const out: KeyValue[] = [];
  if (list) for (const kv of list) out.push({ key: kv.key ?? "", value: anyValue(kv.value) });
  return out;
}

function resource(r: opentelemetry.proto.resource.v1.Resource.$Properties | null | undefined): Resource {
  const out: Resource = { attributes: attributes(r?.attributes) };
  if (r?.droppedAttributesCount) out.droppedAttributesCount = r.droppedAttributesCount;
  return out;
}

function scope(s: opentelemetry.proto.common.v1.InstrumentationScope.$Properties | null | undefined) {
  const out: InstrumentationScope = { name: s?.name ?? "" };
  if (!s) return out;
  if (s.version) out.version = s.version;
  if (s.attributes?.length) out.attributes = attributes(s.attributes);
  if (s.droppedAttributesCount) out.droppedAttributesCount = s.droppedAttributesCount;
  return out;
}

function event(e: opentelemetry.proto.trace.v1.Span.Event.$Properties): SpanEvent {
  const out: SpanEvent = {
    timeUnixNano: uint64(e.timeUnixNano),
    name: e.name ?? "",
    attributes: attributes(e.attributes),
  };
  if (e.droppedAttributesCount) out.droppedAttributesCount = e.droppedAttributesCount;
  return out;
}

function link(l: opentelemetry.proto.trace.v1.Span.Link.$Properties): SpanLink {
  const out: SpanLink = { traceId: hex(l.traceId), spanId: hex(l.spanId), attributes: attributes(l.attributes) };
  if (l.traceState) out.traceState = l.traceState;
  if (l.droppedAttributesCount) out.droppedAttributesCount = l.droppedAttributesCount;
  if (l.flags) out.flags = l.flags;
  return out;
}

function span(s: opentelemetry.proto.trace.v1.Span.$Properties): Span {
  const events: SpanEvent[] = [];
  if (s.events) for (const e of s.events) events.push(event(e));
  const links: SpanLink[] = [];
  if (s.links) for (const l of s.links) links.push(link(l));
  const out: Span = {
    traceId: hex(s.traceId),
    spanId: hex(s.spanId),
    name: s.name ?? "",
    kind: s.kind ?? 0,
    startTimeUnixNano: uint64(s.startTimeUnixNano),
    endTimeUnixNano: uint64(s.endTimeUnixNano),
    attributes: attributes(s.attributes),
    events,
    links,
  };
  if (s.parentSpanId?.length) out.parentSpanId = hex(s.parentSpanId);
  if (s.traceState) out.traceState = s.traceState;
  if (s.flags) out.flags = s.flags;
  if (s.droppedAttributesCount) out.droppedAttributesCount = s.droppedAttributesCount;
  if (s.droppedEventsCount) out.droppedEventsCount = s.droppedEventsCount;
  if (s.droppedLinksCount) out.droppedLinksCount = s.droppedLinksCount;
  // UNSET without a message means what an absent status means (trace.proto): left out, as json.ts does.
  const status = s.status;
  if (status && (status.code || status.message)) {
    out.status = {};
    if (status.code) out.status.code = status.code;
    if (status.message) out.status.message = status.message;
  }
  return out;
}

function resourceSpans(r: opentelemetry.proto.trace.v1.ResourceSpans.$Properties): ResourceSpans {
  const scopeSpans: ScopeSpans[] = [];
  for (const ss of r.scopeSpans ?? []) {
    const spans: Span[] = [];
    if (ss.spans) for (const s of ss.spans) spans.push(span(s));
    const out: ScopeSpans = { scope: scope(ss.scope), spans };
    if (ss.schemaUrl) out.schemaUrl = ss.schemaUrl;
    scopeSpans.push(out);
  }
  const out: ResourceSpans = { resource: resource(r.resource), scopeSpans };
  if (r.schemaUrl) out.schemaUrl = r.schemaUrl;
  return out;
}

function logRecord(l: opentelemetry.proto.logs.v1.LogRecord.$Properties): LogRecord {
  const out: LogRecord = { attributes: attributes(l.attributes), traceId: hex(l.traceId), spanId: hex(l.spanId) };
  const time = uint64(l.timeUnixNano);
  if (time !== "0") out.timeUnixNano = time;
  const observed = uint64(l.observedTimeUnixNano);
  if (observed !== "0") out.observedTimeUnixNano = observed;
  if (l.severityNumber) out.severityNumber = l.severityNumber;
  if (l.severityText) out.severityText = l.severityText;
  if (l.body?.value) out.body = anyValue(l.body);
  if (l.droppedAttributesCount) out.droppedAttributesCount = l.droppedAttributesCount;
  if (l.flags) out.flags = l.flags;
  if (l.eventName) out.eventName = l.eventName;
  return out;
}

function resourceLogs(r: opentelemetry.proto.logs.v1.ResourceLogs.$Properties): ResourceLogs {
  const scopeLogs: ScopeLogs[] = [];
  for (const sl of r.scopeLogs ?? []) {
    const logRecords: LogRecord[] = [];
    for (const l of sl.logRecords ?? []) logRecords.push(logRecord(l));
    const out: ScopeLogs = { scope: scope(sl.scope), logRecords };
    if (sl.schemaUrl) out.schemaUrl = sl.schemaUrl;
    scopeLogs.push(out);
  }
  const out: ResourceLogs = { resource: resource(r.resource), scopeLogs };
  if (r.schemaUrl) out.schemaUrl = r.schemaUrl;
  return out;
}

/** protobufjs throws RangeError ("index out of range") or Error ("invalid wire type …"): a 400 either way (T10). */
function invalid(error: unknown): OtlpDecodeError {
  const why = error instanceof Error ? error.message : String(error);
  return new OtlpDecodeError(`the body is not a valid protobuf message: ${why}`);
}

/** An ExportTraceServiceRequest, binary. A zero-length body is the empty request. */
export function decodeTraces(body: Uint8Array): TraceRequest {
  let request: opentelemetry.proto.collector.trace.v1.ExportTraceServiceRequest;
  try {
    request = ExportTraceServiceRequest.decode(body);
  } catch (error) {
    throw invalid(error);
  }
  const out: ResourceSpans[] = [];
  for (const r of request.resourceSpans) out.push(resourceSpans(r));
  return { resourceSpans: out };
}

/** An ExportLogsServiceRequest, binary. A zero-length body is the empty request. */
export function decodeLogs(body: Uint8Array): LogsRequest {
  let request: opentelemetry.proto.collector.logs.v1.ExportLogsServiceRequest;
  try {
    request = ExportLogsServiceRequest.decode(body);
  } catch (error) {
    throw invalid(error);
  }
  const out: ResourceLogs[] = [];
  for (const r of request.resourceLogs) out.push(resourceLogs(r));
  return { resourceLogs: out };
}
