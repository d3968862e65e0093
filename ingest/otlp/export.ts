/**
 * The way back (otlp.md T15, `GET /v2/sessions/{id}/export?format=otlp`): stored events to an
 * OTLP/JSON TraceRequest a client could send again. Every event made from a span carries the span
 * under `extra.otel` (span.ts otelOf); a root marked as the session is no event, and its span is
 * under the session's `extra.otel_root` (root.ts). Events without `extra.otel` (error events, v2
 * events) are no spans and are left out. Spans are grouped by resource and by scope, in the order
 * they first appear.
 */
import type { EventRecord, JsonObject } from "../../domain/types.ts";
import { sessionIdToTraceId } from "./ids.ts";
import type {
  AnyValue,
  InstrumentationScope,
  KeyValue,
  Resource,
  ResourceSpans,
  ScopeSpans,
  Span,
  SpanEvent,
  TraceRequest,
} from "./types.ts";

const isObject = (value: unknown): value is JsonObject =>
  typeof value === "object" && value !== null && !Array.isArray(value);

/** A plain JSON value as an OTLP AnyValue (integers as intValue). */
function anyValue(value: unknown): AnyValue {
  if (typeof value === "string") return { stringValue: value };
  if (typeof value === "boolean") return { boolValue: value };
  if (typeof value === "number") return Number.isInteger(value) ? { intValue: String(value) } : { doubleValue: value };
  if (Array.isArray(value)) return { arrayValue: { values: value.map(anyValue) } };
  if (isObject(value)) return { kvlistValue: { values: keyValues(value) } };
  return {};
}
const keyValues = (object: JsonObject): KeyValue[] =>
  Object.entries(object).map(([key, value]) => ({ key, value: anyValue(value) }));

/**
 * The GenAI log records kept with a span (T3) as span events of the same names, their bodies
 * under `gen_ai.event.content`: the form in which a span carries GenAI events itself, so that the
 * export sent again gives the same messages.
 */
function recordEvents(records: unknown, start: string): SpanEvent[] {
  if (!Array.isArray(records)) return [];
  return records.filter(isObject).map((record) => {
    const attributes = keyValues(isObject(record.attributes) ? record.attributes : {});
    if (record.body !== undefined) {
      attributes.push({ key: "gen_ai.event.content", value: { stringValue: JSON.stringify(record.body) } });
    }
    const kept = isObject(record.record) ? record.record : {};
    const time = typeof kept.timeUnixNano === "string" ? kept.timeUnixNano : kept.observedTimeUnixNano;
    return { timeUnixNano: typeof time === "string" ? time : start, name: String(record.name), attributes };
  });
}

/** A span rebuilt from what otelOf kept, and the ids the record gives back. */
function spanOf(otel: JsonObject, traceId: string, spanId: string, parentId: string | null | undefined): Span {
  const { scope: _scope, resource: _resource, schemaUrl: _s, resourceSchemaUrl: _r, log_records, ...rest } = otel;
  const span = { traceId, spanId, ...rest } as unknown as Span;
  if (parentId) span.parentSpanId = parentId;
  if (log_records !== undefined)
    span.events = [...(span.events ?? []), ...recordEvents(log_records, span.startTimeUnixNano)];
  return span;
}

/**
 * Rebuilds a session's spans: `events` are its stored events, `sessionExtra` its extra (for the
 * root marked as the session), `sessionId` its id (the trace id as a UUID; another id gives
 * traceId "", it is no trace).
 */
export function toOtlp(events: readonly EventRecord[], sessionId: string, sessionExtra?: JsonObject): TraceRequest {
  const traceId = sessionIdToTraceId(sessionId) ?? "";
  const resources = new Map<string, ResourceSpans>();
  const scopes = new Map<string, ScopeSpans>();

  const add = (otel: JsonObject, span: Span) => {
    const resource = (isObject(otel.resource) ? otel.resource : { attributes: [] }) as unknown as Resource;
    const resourceSchemaUrl = typeof otel.resourceSchemaUrl === "string" ? otel.resourceSchemaUrl : undefined;
    const resourceKey = JSON.stringify([resource, resourceSchemaUrl ?? null]);
    let resourceSpans = resources.get(resourceKey);
    if (!resourceSpans) {
      resourceSpans = { resource, scopeSpans: [] };
      if (resourceSchemaUrl !== undefined) resourceSpans.schemaUrl = resourceSchemaUrl;
      resources.set(resourceKey, resourceSpans);
    }
    const scope = (isObject(otel.scope) ? otel.scope : { name: "" }) as unknown as InstrumentationScope;
    const schemaUrl = typeof otel.schemaUrl === "string" ? otel.schemaUrl : undefined;
    const scopeKey = `${resourceKey}\n${JSON.stringify([scope, schemaUrl ?? null])}`;
    let scopeSpans = scopes.get(scopeKey);
    if (!scopeSpans) {
      scopeSpans = { scope, spans: [] };
      if (schemaUrl !== undefined) scopeSpans.schemaUrl = schemaUrl;
      scopes.set(scopeKey, scopeSpans);
      resourceSpans.scopeSpans.push(scopeSpans);
    }
    scopeSpans.spans.push(span);
  };

  const root = sessionExtra?.otel_root;
  const rootId = sessionExtra?.root_span_id;
  if (isObject(root) && typeof rootId === "string") add(root, spanOf(root, traceId, rootId, null));
  for (const event of events) {
    const otel = event.extra.otel;
    if (isObject(otel)) add(otel, spanOf(otel, traceId, event.id, event.parent_id));
  }
  return { resourceSpans: [...resources.values()] };
}
