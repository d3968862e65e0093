/**
 * What the OTLP decoding tests share: the fixture requests (test/fixtures/otlp/), an encoder from
 * the canonical form back to protobuf (test-only: agentmon never sends OTLP), and fast-check
 * arbitraries of canonical requests.
 */
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import fc from "fast-check";
import { opentelemetry } from "../../generated/otlp.js";
import type {
  AnyValue,
  InstrumentationScope,
  KeyValue,
  LogRecord,
  LogsRequest,
  Resource,
  Span,
  TraceRequest,
} from "../../ingest/otlp/types.ts";

export const FIXTURES = new URL("../fixtures/otlp/", import.meta.url).pathname;

export interface Fixture {
  /** Relative to test/fixtures/otlp, without the suffix: "agentops-sdk-0.4.21/openai/03-post-v1-traces". */
  name: string;
  /** The request file: `spans` is how many spans the body carries. */
  request: { spans?: number };
  path: (suffix: string) => string;
}

/** Every /v1/traces request of the fixtures. */
export function traceFixtures(): Fixture[] {
  const found: Fixture[] = [];
  const walk = (dir: string) => {
    for (const entry of readdirSync(join(FIXTURES, dir), { withFileTypes: true })) {
      const rel = dir ? `${dir}/${entry.name}` : entry.name;
      if (entry.isDirectory()) walk(rel);
      else if (/-post-v1-traces\.json$/.test(entry.name)) {
        const name = rel.slice(0, -".json".length);
        const path = (suffix: string) => join(FIXTURES, name + suffix);
        found.push({ name, request: JSON.parse(readFileSync(path(".json"), "utf8")), path });
      }
    }
  };
  walk("");
  return found.sort((a, b) => a.name.localeCompare(b.name));
}

export function spanCount(request: TraceRequest): number {
  let n = 0;
  for (const rs of request.resourceSpans) for (const ss of rs.scopeSpans) n += ss.spans.length;
  return n;
}

// The encoder. protobufjs writes a 64-bit field given as a decimal string exactly (through Long),
// so the canonical strings go in as they are; the generated types only say number|Long.
type Pb = Record<string, unknown>;
const int64 = (digits: string) => digits as unknown as number;
const bytes = (hex: string) => Buffer.from(hex, "hex");

function pbAnyValue(v: AnyValue): Pb {
  if ("stringValue" in v) return { stringValue: v.stringValue };
  if ("boolValue" in v) return { boolValue: v.boolValue };
  if ("intValue" in v) return { intValue: int64(v.intValue) };
  if ("doubleValue" in v) return { doubleValue: Number(v.doubleValue) };
  if ("bytesValue" in v) return { bytesValue: Buffer.from(v.bytesValue, "base64") };
  if ("arrayValue" in v) return { arrayValue: { values: v.arrayValue.values.map(pbAnyValue) } };
  if ("kvlistValue" in v) return { kvlistValue: { values: pbAttributes(v.kvlistValue.values) } };
  return {};
}

const pbAttributes = (list: KeyValue[] | undefined) =>
  (list ?? []).map((kv) => ({ ...kv, value: pbAnyValue(kv.value) }));
const pbResource = (r: Resource) => ({ ...r, attributes: pbAttributes(r.attributes) });
const pbScope = (s: InstrumentationScope) => ({ ...s, attributes: pbAttributes(s.attributes) });

function pbSpan(s: Span): Pb {
  return {
    ...s,
    traceId: bytes(s.traceId),
    spanId: bytes(s.spanId),
    parentSpanId: bytes(s.parentSpanId ?? ""),
    startTimeUnixNano: int64(s.startTimeUnixNano),
    endTimeUnixNano: int64(s.endTimeUnixNano),
    attributes: pbAttributes(s.attributes),
    events: s.events.map((e) => ({
      ...e,
      timeUnixNano: int64(e.timeUnixNano),
      attributes: pbAttributes(e.attributes),
    })),
    links: s.links.map((l) => ({
      ...l,
      traceId: bytes(l.traceId),
      spanId: bytes(l.spanId),
      attributes: pbAttributes(l.attributes),
    })),
  };
}

function pbLogRecord(l: LogRecord): Pb {
  const out: Pb = { ...l, traceId: bytes(l.traceId), spanId: bytes(l.spanId), attributes: pbAttributes(l.attributes) };
  if (l.timeUnixNano) out.timeUnixNano = int64(l.timeUnixNano);
  if (l.observedTimeUnixNano) out.observedTimeUnixNano = int64(l.observedTimeUnixNano);
  if (l.body) out.body = pbAnyValue(l.body);
  return out;
}

export function encodeTraces(request: TraceRequest): Uint8Array {
  const resourceSpans = request.resourceSpans.map((rs) => ({
    ...rs,
    resource: pbResource(rs.resource),
    scopeSpans: rs.scopeSpans.map((ss) => ({ ...ss, scope: pbScope(ss.scope), spans: ss.spans.map(pbSpan) })),
  }));
  const { ExportTraceServiceRequest } = opentelemetry.proto.collector.trace.v1;
  return ExportTraceServiceRequest.encode({ resourceSpans } as never).finish();
}

export function encodeLogs(request: LogsRequest): Uint8Array {
  const resourceLogs = request.resourceLogs.map((rl) => ({
    ...rl,
    resource: pbResource(rl.resource),
    scopeLogs: rl.scopeLogs.map((sl) => ({
      ...sl,
      scope: pbScope(sl.scope),
      logRecords: sl.logRecords.map(pbLogRecord),
    })),
  }));
  const { ExportLogsServiceRequest } = opentelemetry.proto.collector.logs.v1;
  return ExportLogsServiceRequest.encode({ resourceLogs } as never).finish();
}

// Arbitraries of the canonical form: every optional field either left out or not zero.
const hex = (n: number) => fc.uint8Array({ minLength: n, maxLength: n }).map((b) => Buffer.from(b).toString("hex"));
const text = fc.string({ unit: "grapheme", maxLength: 12 });
const nonEmpty = fc.string({ unit: "grapheme", minLength: 1, maxLength: 12 });
const count = fc.integer({ min: 1, max: 0xffffffff });
const uint64 = fc.bigInt({ min: 1n, max: 2n ** 64n - 1n }).map(String);
const time = fc.oneof(uint64, fc.constant("0"));

const { anyValue } = fc.letrec<{ anyValue: AnyValue; keyValue: KeyValue }>((tie) => ({
  anyValue: fc.oneof(
    { depthSize: "small", withCrossShrink: true },
    fc.constant({}),
    text.map((stringValue) => ({ stringValue })),
    fc.boolean().map((boolValue) => ({ boolValue })),
    fc.bigInt({ min: -(2n ** 63n), max: 2n ** 63n - 1n }).map((n) => ({ intValue: String(n) })),
    fc.double({ noNaN: true, noDefaultInfinity: true }).map((d) => ({ doubleValue: Object.is(d, -0) ? 0 : d })),
    fc.constantFrom("NaN" as const, "Infinity" as const, "-Infinity" as const).map((doubleValue) => ({ doubleValue })),
    fc.uint8Array({ maxLength: 8 }).map((b) => ({ bytesValue: Buffer.from(b).toString("base64") })),
    fc.array(tie("anyValue"), { maxLength: 3 }).map((values) => ({ arrayValue: { values } })),
    fc.array(tie("keyValue"), { maxLength: 3 }).map((values) => ({ kvlistValue: { values } })),
  ) as fc.Arbitrary<AnyValue>,
  keyValue: fc.record({ key: text, value: tie("anyValue") }, { noNullPrototype: true }),
}));
const attributes = fc.array(fc.record({ key: text, value: anyValue }, { noNullPrototype: true }), { maxLength: 4 });
const some = <T>(arb: fc.Arbitrary<T[]>) => arb.filter((list) => list.length > 0);

const resource = fc.record(
  { attributes, droppedAttributesCount: count },
  { requiredKeys: ["attributes"], noNullPrototype: true },
);
const scope = fc.record(
  { name: text, version: nonEmpty, attributes: some(attributes), droppedAttributesCount: count },
  { requiredKeys: ["name"], noNullPrototype: true },
);
const status = fc
  .record({ code: fc.integer({ min: 1, max: 2 }), message: nonEmpty }, { requiredKeys: [], noNullPrototype: true })
  .filter((s) => s.code !== undefined || s.message !== undefined);
const event = fc.record(
  { timeUnixNano: time, name: text, attributes, droppedAttributesCount: count },
  { requiredKeys: ["timeUnixNano", "name", "attributes"], noNullPrototype: true },
);
const link = fc.record(
  { traceId: hex(16), spanId: hex(8), traceState: nonEmpty, attributes, droppedAttributesCount: count, flags: count },
  { requiredKeys: ["traceId", "spanId", "attributes"], noNullPrototype: true },
);

const span: fc.Arbitrary<Span> = fc.record(
  {
    traceId: hex(16),
    spanId: hex(8),
    parentSpanId: hex(8),
    traceState: nonEmpty,
    flags: count,
    name: text,
    kind: fc.integer({ min: 0, max: 5 }),
    startTimeUnixNano: time,
    endTimeUnixNano: time,
    attributes,
    droppedAttributesCount: count,
    events: fc.array(event, { maxLength: 2 }),
    droppedEventsCount: count,
    links: fc.array(link, { maxLength: 2 }),
    droppedLinksCount: count,
    status,
  },
  {
    requiredKeys: [
      "traceId",
      "spanId",
      "name",
      "kind",
      "startTimeUnixNano",
      "endTimeUnixNano",
      "attributes",
      "events",
      "links",
    ],
    noNullPrototype: true,
  },
);

const schemaUrl = { schemaUrl: nonEmpty };

export const traceRequest: fc.Arbitrary<TraceRequest> = fc.record(
  {
    resourceSpans: fc.array(
      fc.record(
        {
          resource,
          scopeSpans: fc.array(
            fc.record(
              { scope, spans: fc.array(span, { maxLength: 3 }), ...schemaUrl },
              { requiredKeys: ["scope", "spans"], noNullPrototype: true },
            ),
            { maxLength: 2 },
          ),
          ...schemaUrl,
        },
        { requiredKeys: ["resource", "scopeSpans"], noNullPrototype: true },
      ),
      { maxLength: 2 },
    ),
  },
  { noNullPrototype: true },
);

const logRecord: fc.Arbitrary<LogRecord> = fc.record(
  {
    timeUnixNano: uint64,
    observedTimeUnixNano: uint64,
    severityNumber: fc.integer({ min: 1, max: 24 }),
    severityText: nonEmpty,
    body: anyValue.filter((v) => Object.keys(v).length > 0),
    attributes,
    droppedAttributesCount: count,
    flags: count,
    traceId: fc.oneof(hex(16), fc.constant("")),
    spanId: fc.oneof(hex(8), fc.constant("")),
    eventName: nonEmpty,
  },
  { requiredKeys: ["attributes", "traceId", "spanId"], noNullPrototype: true },
);

export const logsRequest: fc.Arbitrary<LogsRequest> = fc.record(
  {
    resourceLogs: fc.array(
      fc.record(
        {
          resource,
          scopeLogs: fc.array(
            fc.record(
              { scope, logRecords: fc.array(logRecord, { maxLength: 3 }), ...schemaUrl },
              { requiredKeys: ["scope", "logRecords"], noNullPrototype: true },
            ),
            { maxLength: 2 },
          ),
          ...schemaUrl,
        },
        { requiredKeys: ["resource", "scopeLogs"], noNullPrototype: true },
      ),
      { maxLength: 2 },
    ),
  },
  { noNullPrototype: true },
);
