/**
 * OTLP as agentmon holds it after decoding: the OTLP/JSON encoding of the specification
 * (opentelemetry-proto `docs/specification.md`, "JSON Protobuf Encoding"), made canonical, so that
 * a protobuf body and a JSON body of the same message decode to equal values (decode.ts):
 * - trace and span ids are lowercase hex strings ("" when absent), never base64;
 * - 64-bit integers (times, `intValue`) are decimal strings;
 * - enums are integers;
 * - `doubleValue` is a number, or "NaN", "Infinity", "-Infinity";
 * - `bytesValue` is base64;
 * - optional fields that were absent or zero are left out.
 * This is also the form in which spans are kept (G5) and exported again (`format=otlp`).
 */

export type AnyValue =
  | { stringValue: string }
  | { boolValue: boolean }
  | { intValue: string }
  | { doubleValue: number | "NaN" | "Infinity" | "-Infinity" }
  | { bytesValue: string }
  | { arrayValue: { values: AnyValue[] } }
  | { kvlistValue: { values: KeyValue[] } }
  | Record<string, never>;

export interface KeyValue {
  key: string;
  value: AnyValue;
}

export interface Resource {
  attributes: KeyValue[];
  droppedAttributesCount?: number;
}

export interface InstrumentationScope {
  name: string;
  version?: string;
  attributes?: KeyValue[];
  droppedAttributesCount?: number;
}

export interface SpanEvent {
  timeUnixNano: string;
  name: string;
  attributes: KeyValue[];
  droppedAttributesCount?: number;
}

export interface SpanLink {
  traceId: string;
  spanId: string;
  traceState?: string;
  attributes: KeyValue[];
  droppedAttributesCount?: number;
  flags?: number;
}

export interface Status {
  /** 0 UNSET, 1 OK, 2 ERROR. */
  code?: number;
  message?: string;
}

export interface Span {
  traceId: string;
  spanId: string;
  /** Absent (or "") for a root. */
  parentSpanId?: string;
  traceState?: string;
  flags?: number;
  name: string;
  /** 0 UNSPECIFIED, 1 INTERNAL, 2 SERVER, 3 CLIENT, 4 PRODUCER, 5 CONSUMER. */
  kind: number;
  startTimeUnixNano: string;
  endTimeUnixNano: string;
  attributes: KeyValue[];
  droppedAttributesCount?: number;
  events: SpanEvent[];
  droppedEventsCount?: number;
  links: SpanLink[];
  droppedLinksCount?: number;
  status?: Status;
}

export interface ScopeSpans {
  scope: InstrumentationScope;
  spans: Span[];
  schemaUrl?: string;
}

export interface ResourceSpans {
  resource: Resource;
  scopeSpans: ScopeSpans[];
  schemaUrl?: string;
}

export interface TraceRequest {
  resourceSpans: ResourceSpans[];
}

export interface LogRecord {
  timeUnixNano?: string;
  observedTimeUnixNano?: string;
  severityNumber?: number;
  severityText?: string;
  body?: AnyValue;
  attributes: KeyValue[];
  droppedAttributesCount?: number;
  flags?: number;
  traceId: string;
  spanId: string;
  eventName?: string;
}

export interface ScopeLogs {
  scope: InstrumentationScope;
  logRecords: LogRecord[];
  schemaUrl?: string;
}

export interface ResourceLogs {
  resource: Resource;
  scopeLogs: ScopeLogs[];
  schemaUrl?: string;
}

export interface LogsRequest {
  resourceLogs: ResourceLogs[];
}
