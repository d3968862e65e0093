/**
 * Where a decoded OTLP request holds U+0000 (decision 017), which agentmon refuses: the request
 * is a 400 and nothing of it is stored (otlp.md T10). Every string of the canonical form
 * (types.ts) is looked at, whichever encoding it came in, so that a protobuf body and a JSON body
 * of the same message are answered alike: ids, names, trace states, schema URLs, status messages,
 * scopes, log records' bodies, severity texts and event names, and every attribute's key and
 * value at any depth (resource, scope, span, span event, link, log record).
 *
 * One walk over the decoded request, with no allocation until a NUL is found: a place is written
 * only then, from the inside out, in the OTLP/JSON field names, attributes by key:
 * `resourceSpans[0].scopeSpans[0].spans[3].attributes["gen_ai.prompt"]`, or
 * `….attributes[2].key` when the key itself holds the NUL. Pure.
 */
import { hasNul } from "../../domain/nul.ts";
import type {
  AnyValue,
  InstrumentationScope,
  KeyValue,
  LogRecord,
  LogsRequest,
  Resource,
  Span,
  TraceRequest,
} from "./types.ts";

type Place = string | undefined;

/** A field: its place when its text holds a NUL. */
const inText = (text: string | undefined, place: string): Place =>
  text !== undefined && hasNul(text) ? place : undefined;

/** In an AnyValue: "" for the value itself, or the place below it. */
function inValue(value: AnyValue): Place {
  const v = value as {
    stringValue?: string;
    bytesValue?: string;
    arrayValue?: { values?: AnyValue[] };
    kvlistValue?: { values?: KeyValue[] };
  };
  if (v.stringValue !== undefined) return hasNul(v.stringValue) ? "" : undefined;
  if (v.arrayValue !== undefined) {
    const values = v.arrayValue.values ?? [];
    for (let i = 0; i < values.length; i++) {
      const at = inValue(values[i] as AnyValue);
      if (at !== undefined) return `.arrayValue[${i}]${at}`;
    }
    return undefined;
  }
  if (v.kvlistValue !== undefined) {
    const at = inAttributes(v.kvlistValue.values);
    return at === undefined ? undefined : `.kvlistValue${at}`;
  }
  return inText(v.bytesValue, "");
}

/** In a KeyValue list: `["key"]` and the place in its value, or `[i].key` for a key itself. */
function inAttributes(list: readonly KeyValue[] | undefined): Place {
  if (list === undefined) return undefined;
  for (let i = 0; i < list.length; i++) {
    const kv = list[i] as KeyValue;
    if (hasNul(kv.key)) return `[${i}].key`;
    const at = inValue(kv.value);
    if (at !== undefined) return `[${JSON.stringify(kv.key)}]${at}`;
  }
  return undefined;
}

/** A field holding attributes: its place and the place within. */
function attributesAt(list: readonly KeyValue[] | undefined, field: string): Place {
  const at = inAttributes(list);
  return at === undefined ? undefined : `${field}${at}`;
}

const inResource = (resource: Resource): Place => attributesAt(resource.attributes, ".resource.attributes");

const inScope = (scope: InstrumentationScope): Place =>
  inText(scope.name, ".scope.name") ??
  inText(scope.version, ".scope.version") ??
  attributesAt(scope.attributes, ".scope.attributes");

function inSpan(span: Span): Place {
  let at =
    inText(span.name, ".name") ??
    attributesAt(span.attributes, ".attributes") ??
    inText(span.traceId, ".traceId") ??
    inText(span.spanId, ".spanId") ??
    inText(span.parentSpanId, ".parentSpanId") ??
    inText(span.traceState, ".traceState") ??
    inText(span.status?.message, ".status.message");
  if (at !== undefined) return at;
  for (let i = 0; i < span.events.length; i++) {
    const event = span.events[i] as Span["events"][number];
    at = inText(event.name, ".name") ?? attributesAt(event.attributes, ".attributes");
    if (at !== undefined) return `.events[${i}]${at}`;
  }
  for (let i = 0; i < span.links.length; i++) {
    const link = span.links[i] as Span["links"][number];
    at =
      inText(link.traceId, ".traceId") ??
      inText(link.spanId, ".spanId") ??
      inText(link.traceState, ".traceState") ??
      attributesAt(link.attributes, ".attributes");
    if (at !== undefined) return `.links[${i}]${at}`;
  }
  return undefined;
}

/** Where the request first holds U+0000, as a path of its OTLP/JSON form; undefined when nowhere. */
export function nulInTraces(request: TraceRequest): Place {
  const resources = request.resourceSpans;
  for (let r = 0; r < resources.length; r++) {
    const resourceSpans = resources[r] as TraceRequest["resourceSpans"][number];
    let at = inResource(resourceSpans.resource) ?? inText(resourceSpans.schemaUrl, ".schemaUrl");
    if (at !== undefined) return `resourceSpans[${r}]${at}`;
    const scopes = resourceSpans.scopeSpans;
    for (let s = 0; s < scopes.length; s++) {
      const scopeSpans = scopes[s] as (typeof scopes)[number];
      at = inScope(scopeSpans.scope) ?? inText(scopeSpans.schemaUrl, ".schemaUrl");
      if (at !== undefined) return `resourceSpans[${r}].scopeSpans[${s}]${at}`;
      const spans = scopeSpans.spans;
      for (let i = 0; i < spans.length; i++) {
        at = inSpan(spans[i] as Span);
        if (at !== undefined) return `resourceSpans[${r}].scopeSpans[${s}].spans[${i}]${at}`;
      }
    }
  }
  return undefined;
}

function inLogRecord(record: LogRecord): Place {
  const body = record.body === undefined ? undefined : inValue(record.body);
  return (
    (body === undefined ? undefined : `.body${body}`) ??
    attributesAt(record.attributes, ".attributes") ??
    inText(record.eventName, ".eventName") ??
    inText(record.severityText, ".severityText") ??
    inText(record.traceId, ".traceId") ??
    inText(record.spanId, ".spanId")
  );
}

/** Where the request first holds U+0000, as a path of its OTLP/JSON form; undefined when nowhere. */
export function nulInLogs(request: LogsRequest): Place {
  const resources = request.resourceLogs;
  for (let r = 0; r < resources.length; r++) {
    const resourceLogs = resources[r] as LogsRequest["resourceLogs"][number];
    let at = inResource(resourceLogs.resource) ?? inText(resourceLogs.schemaUrl, ".schemaUrl");
    if (at !== undefined) return `resourceLogs[${r}]${at}`;
    const scopes = resourceLogs.scopeLogs;
    for (let s = 0; s < scopes.length; s++) {
      const scopeLogs = scopes[s] as (typeof scopes)[number];
      at = inScope(scopeLogs.scope) ?? inText(scopeLogs.schemaUrl, ".schemaUrl");
      if (at !== undefined) return `resourceLogs[${r}].scopeLogs[${s}]${at}`;
      const records = scopeLogs.logRecords;
      for (let i = 0; i < records.length; i++) {
        at = inLogRecord(records[i] as LogRecord);
        if (at !== undefined) return `resourceLogs[${r}].scopeLogs[${s}].logRecords[${i}]${at}`;
      }
    }
  }
  return undefined;
}
