/**
 * OTLP/JSON requests (otlp.md T11) into the canonical form of types.ts, the same values as the
 * protobuf decoder gives for the same message: lowerCamelCase keys and the proto field names in
 * snake_case (the proto3 JSON mapping accepts both), unknown fields ignored, 64-bit integers as
 * strings or numbers, enums as numbers or names. A value of the wrong type is an OtlpDecodeError
 * naming where it is (T10), as the OpenTelemetry Collector's reader refuses it too.
 */
import {
  attributes,
  element,
  enumValue,
  fail,
  id,
  int64,
  type Json,
  list,
  message,
  anyValue as readAnyValue,
  text,
  uint32,
} from "./json-values.ts";
import type {
  InstrumentationScope,
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
  Status,
  TraceRequest,
} from "./types.ts";

const SPAN_KINDS = new Map(
  ["UNSPECIFIED", "INTERNAL", "SERVER", "CLIENT", "PRODUCER", "CONSUMER"].map((name, i) => [`SPAN_KIND_${name}`, i]),
);
const STATUS_CODES = new Map([
  ["STATUS_CODE_UNSET", 0],
  ["STATUS_CODE_OK", 1],
  ["STATUS_CODE_ERROR", 2],
]);
const SEVERITIES = new Map([["SEVERITY_NUMBER_UNSPECIFIED", 0]]);
for (const [i, level] of ["TRACE", "DEBUG", "INFO", "WARN", "ERROR", "FATAL"].entries()) {
  for (let n = 1; n <= 4; n++) SEVERITIES.set(`SEVERITY_NUMBER_${level}${n === 1 ? "" : n}`, i * 4 + n);
}

export function readTracesJson(body: unknown): TraceRequest {
  const o = requestObject(body);
  const items = list(o.resourceSpans ?? o.resource_spans, "resourceSpans");
  const resourceSpans: ResourceSpans[] = [];
  for (let i = 0; i < items.length; i++) resourceSpans.push(readResourceSpans(items[i], `resourceSpans[${i}]`));
  return { resourceSpans };
}

export function readLogsJson(body: unknown): LogsRequest {
  const o = requestObject(body);
  const items = list(o.resourceLogs ?? o.resource_logs, "resourceLogs");
  const resourceLogs: ResourceLogs[] = [];
  for (let i = 0; i < items.length; i++) resourceLogs.push(readResourceLogs(items[i], `resourceLogs[${i}]`));
  return { resourceLogs };
}

function requestObject(body: unknown): Json {
  if (typeof body !== "object" || body === null || Array.isArray(body)) {
    fail("body", "must be a JSON object");
  }
  return body as Json;
}

function readResource(v: unknown, path: string): Resource {
  const o = message(v, path);
  if (o === undefined) return { attributes: [] };
  const resource: Resource = { attributes: attributes(o.attributes, `${path}.attributes`) };
  const dropped = uint32(o.droppedAttributesCount ?? o.dropped_attributes_count, `${path}.droppedAttributesCount`);
  if (dropped) resource.droppedAttributesCount = dropped;
  return resource;
}

function readScope(v: unknown, path: string): InstrumentationScope {
  const o = message(v, path);
  if (o === undefined) return { name: "" };
  const scope: InstrumentationScope = { name: text(o.name, `${path}.name`) };
  const version = text(o.version, `${path}.version`);
  if (version) scope.version = version;
  const attrs = attributes(o.attributes, `${path}.attributes`);
  if (attrs.length) scope.attributes = attrs;
  const dropped = uint32(o.droppedAttributesCount ?? o.dropped_attributes_count, `${path}.droppedAttributesCount`);
  if (dropped) scope.droppedAttributesCount = dropped;
  return scope;
}

function readResourceSpans(v: unknown, path: string): ResourceSpans {
  const o = element(v, path);
  const items = list(o.scopeSpans ?? o.scope_spans, `${path}.scopeSpans`);
  const scopeSpans: ScopeSpans[] = [];
  for (let i = 0; i < items.length; i++) scopeSpans.push(readScopeSpans(items[i], `${path}.scopeSpans[${i}]`));
  const out: ResourceSpans = { resource: readResource(o.resource, `${path}.resource`), scopeSpans };
  const schemaUrl = text(o.schemaUrl ?? o.schema_url, `${path}.schemaUrl`);
  if (schemaUrl) out.schemaUrl = schemaUrl;
  return out;
}

function readScopeSpans(v: unknown, path: string): ScopeSpans {
  const o = element(v, path);
  const items = list(o.spans, `${path}.spans`);
  const spans: Span[] = [];
  for (let i = 0; i < items.length; i++) spans.push(readSpan(items[i], `${path}.spans[${i}]`));
  const out: ScopeSpans = { scope: readScope(o.scope, `${path}.scope`), spans };
  const schemaUrl = text(o.schemaUrl ?? o.schema_url, `${path}.schemaUrl`);
  if (schemaUrl) out.schemaUrl = schemaUrl;
  return out;
}

function readSpan(v: unknown, path: string): Span {
  const o = element(v, path);
  const span: Span = {
    traceId: id(o.traceId ?? o.trace_id, `${path}.traceId`),
    spanId: id(o.spanId ?? o.span_id, `${path}.spanId`),
    name: text(o.name, `${path}.name`),
    kind: enumValue(o.kind, SPAN_KINDS, `${path}.kind`),
    startTimeUnixNano: int64(o.startTimeUnixNano ?? o.start_time_unix_nano, `${path}.startTimeUnixNano`),
    endTimeUnixNano: int64(o.endTimeUnixNano ?? o.end_time_unix_nano, `${path}.endTimeUnixNano`),
    attributes: attributes(o.attributes, `${path}.attributes`),
    events: readEvents(o.events, `${path}.events`),
    links: readLinks(o.links, `${path}.links`),
  };
  const parentSpanId = id(o.parentSpanId ?? o.parent_span_id, `${path}.parentSpanId`);
  if (parentSpanId) span.parentSpanId = parentSpanId;
  const traceState = text(o.traceState ?? o.trace_state, `${path}.traceState`);
  if (traceState) span.traceState = traceState;
  const flags = uint32(o.flags, `${path}.flags`);
  if (flags) span.flags = flags;
  const dropped = uint32(o.droppedAttributesCount ?? o.dropped_attributes_count, `${path}.droppedAttributesCount`);
  if (dropped) span.droppedAttributesCount = dropped;
  const droppedEvents = uint32(o.droppedEventsCount ?? o.dropped_events_count, `${path}.droppedEventsCount`);
  if (droppedEvents) span.droppedEventsCount = droppedEvents;
  const droppedLinks = uint32(o.droppedLinksCount ?? o.dropped_links_count, `${path}.droppedLinksCount`);
  if (droppedLinks) span.droppedLinksCount = droppedLinks;
  const status = readStatus(o.status, `${path}.status`);
  if (status) span.status = status;
  return span;
}

function readEvents(v: unknown, path: string): SpanEvent[] {
  const items = list(v, path);
  const events: SpanEvent[] = [];
  for (let i = 0; i < items.length; i++) {
    const at = `${path}[${i}]`;
    const o = element(items[i], at);
    const event: SpanEvent = {
      timeUnixNano: int64(o.timeUnixNano ?? o.time_unix_nano, `${at}.timeUnixNano`),
      name: text(o.name, `${at}.name`),
      attributes: attributes(o.attributes, `${at}.attributes`),
    };
    const dropped = uint32(o.droppedAttributesCount ?? o.dropped_attributes_count, `${at}.droppedAttributesCount`);
    if (dropped) event.droppedAttributesCount = dropped;
    events.push(event);
  }
  return events;
}

function readLinks(v: unknown, path: string): SpanLink[] {
  const items = list(v, path);
  const links: SpanLink[] = [];
  for (let i = 0; i < items.length; i++) {
    const at = `${path}[${i}]`;
    const o = element(items[i], at);
    const link: SpanLink = {
      traceId: id(o.traceId ?? o.trace_id, `${at}.traceId`),
      spanId: id(o.spanId ?? o.span_id, `${at}.spanId`),
      attributes: attributes(o.attributes, `${at}.attributes`),
    };
    const traceState = text(o.traceState ?? o.trace_state, `${at}.traceState`);
    if (traceState) link.traceState = traceState;
    const dropped = uint32(o.droppedAttributesCount ?? o.dropped_attributes_count, `${at}.droppedAttributesCount`);
    if (dropped) link.droppedAttributesCount = dropped;
    const flags = uint32(o.flags, `${at}.flags`);
    if (flags) link.flags = flags;
    links.push(link);
  }
  return links;
}

/** Left out when UNSET without a message, as when absent: the two mean the same (trace.proto). */
function readStatus(v: unknown, path: string): Status | undefined {
  const o = message(v, path);
  if (o === undefined) return undefined;
  const code = enumValue(o.code, STATUS_CODES, `${path}.code`);
  const msg = text(o.message, `${path}.message`);
  if (!code && !msg) return undefined;
  const status: Status = {};
  if (code) status.code = code;
  if (msg) status.message = msg;
  return status;
}

function readResourceLogs(v: unknown, path: string): ResourceLogs {
  const o = element(v, path);
  const items = list(o.scopeLogs ?? o.scope_logs, `${path}.scopeLogs`);
  const scopeLogs: ScopeLogs[] = [];
  for (let i = 0; i < items.length; i++) scopeLogs.push(readScopeLogs(items[i], `${path}.scopeLogs[${i}]`));
  const out: ResourceLogs = { resource: readResource(o.resource, `${path}.resource`), scopeLogs };
  const schemaUrl = text(o.schemaUrl ?? o.schema_url, `${path}.schemaUrl`);
  if (schemaUrl) out.schemaUrl = schemaUrl;
  return out;
}

function readScopeLogs(v: unknown, path: string): ScopeLogs {
  const o = element(v, path);
  const items = list(o.logRecords ?? o.log_records, `${path}.logRecords`);
  const logRecords: LogRecord[] = [];
  for (let i = 0; i < items.length; i++) logRecords.push(readLogRecord(items[i], `${path}.logRecords[${i}]`));
  const out: ScopeLogs = { scope: readScope(o.scope, `${path}.scope`), logRecords };
  const schemaUrl = text(o.schemaUrl ?? o.schema_url, `${path}.schemaUrl`);
  if (schemaUrl) out.schemaUrl = schemaUrl;
  return out;
}

function readLogRecord(v: unknown, path: string): LogRecord {
  const o = element(v, path);
  const record: LogRecord = {
    attributes: attributes(o.attributes, `${path}.attributes`),
    traceId: id(o.traceId ?? o.trace_id, `${path}.traceId`),
    spanId: id(o.spanId ?? o.span_id, `${path}.spanId`),
  };
  const time = int64(o.timeUnixNano ?? o.time_unix_nano, `${path}.timeUnixNano`);
  if (time !== "0") record.timeUnixNano = time;
  const observed = int64(o.observedTimeUnixNano ?? o.observed_time_unix_nano, `${path}.observedTimeUnixNano`);
  if (observed !== "0") record.observedTimeUnixNano = observed;
  const severity = enumValue(o.severityNumber ?? o.severity_number, SEVERITIES, `${path}.severityNumber`);
  if (severity) record.severityNumber = severity;
  const severityText = text(o.severityText ?? o.severity_text, `${path}.severityText`);
  if (severityText) record.severityText = severityText;
  // A body without a value is left out, as an absent one is: both mean "no body".
  const body = readAnyValue(o.body, `${path}.body`, 0);
  if (Object.keys(body).length) record.body = body;
  const dropped = uint32(o.droppedAttributesCount ?? o.dropped_attributes_count, `${path}.droppedAttributesCount`);
  if (dropped) record.droppedAttributesCount = dropped;
  const flags = uint32(o.flags, `${path}.flags`);
  if (flags) record.flags = flags;
  const eventName = text(o.eventName ?? o.event_name, `${path}.eventName`);
  if (eventName) record.eventName = eventName;
  return record;
}
