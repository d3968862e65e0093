/**
 * otlp.md T10: a body that cannot be read is an OtlpDecodeError (a 400), never another error; and
 * the answers' encoders (T8, T10) give what the generated decoder reads back.
 */
import { readFileSync } from "node:fs";
import fc from "fast-check";
import t from "tap";
import { google, opentelemetry } from "../../generated/otlp.js";
import {
  decodeLogs,
  decodeTraces,
  encodeLogsResponse,
  encodeMetricsResponse,
  encodeStatus,
  encodeTraceResponse,
  OtlpDecodeError,
  quoteBigIntegers,
  readLogsJson,
  readTracesJson,
} from "../../ingest/otlp/decode.ts";
import { traceFixtures } from "./decode.helpers.ts";

/** Runs fn: true when it returned, false when it threw an OtlpDecodeError; anything else is rethrown. */
function decodesOrRefuses(fn: () => unknown): boolean {
  try {
    fn();
    return true;
  } catch (error) {
    if (error instanceof OtlpDecodeError) return false;
    throw error;
  }
}

const fixtureBytes = readFileSync(
  traceFixtures()
    .find((f) => f.name.startsWith("agentops-sdk-0.4.21/openai"))
    ?.path(".body.bin") ?? "",
);

t.test("bad protobuf is an OtlpDecodeError", async (t) => {
  const bad: [string, number[]][] = [
    ["a length past the end", [0x0a, 0x05, 0x0a]],
    ["wire type 7", [0x0f]],
    ["wire type 6", [0x0e, 0x00]],
    ["a varint that never ends", [0x08, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff]],
    ["a span with a short fixed64", [0x0a, 0x08, 0x12, 0x06, 0x12, 0x04, 0x39, 0x01, 0x02, 0x03]],
    ["text", [...Buffer.from('{"resourceSpans": []}')]],
  ];
  for (const [name, bytes] of bad) {
    t.throws(() => decodeTraces(Uint8Array.from(bytes)), OtlpDecodeError, name);
    t.throws(() => decodeLogs(Uint8Array.from(bytes)), OtlpDecodeError, `${name} (logs)`);
  }
  t.throws(() => decodeTraces(Uint8Array.from([0x0f])), { message: /^the body is not a valid protobuf message: / });
});

t.test("every truncation of a real request decodes or is an OtlpDecodeError", async (t) => {
  let refused = 0;
  for (let n = 0; n < fixtureBytes.length; n++) {
    if (!decodesOrRefuses(() => decodeTraces(fixtureBytes.subarray(0, n)))) refused++;
  }
  t.ok(refused > fixtureBytes.length / 2, `${refused} of ${fixtureBytes.length} prefixes refused`);
});

/** A length-delimited protobuf field: its tag byte, the varint length, the bytes. */
function field(tag: number, inner: Buffer): Buffer {
  const length: number[] = [];
  let n = inner.length;
  for (; n > 127; n >>>= 7) length.push((n & 127) | 128);
  return Buffer.concat([Buffer.from([tag, ...length, n]), inner]);
}

t.test("protobuf nested past the recursion limit is an OtlpDecodeError", async (t) => {
  // Written by hand: the generated encoder refuses to nest this deep too.
  let value = field(0x0a, Buffer.from("x")); // AnyValue.string_value
  for (let i = 0; i < 200; i++) value = field(0x2a, field(0x0a, value)); // AnyValue.array_value.values
  const resource = field(0x0a, field(0x12, value)); // Resource.attributes[0].value
  const body = field(0x0a, field(0x0a, resource)); // request.resource_spans[0].resource
  t.throws(() => decodeTraces(body), { name: "OtlpDecodeError", message: /max depth exceeded/ });
});

t.test("JSON of the wrong shape is an OtlpDecodeError naming where", async (t) => {
  const span = { traceId: "5b8efff798038103d269b633813fc60c", spanId: "eee19b7ec3c1b174", startTimeUnixNano: "1" };
  const withSpan = (fields: Record<string, unknown>) => ({
    resourceSpans: [{ scopeSpans: [{ spans: [{ ...span, ...fields }] }] }],
  });
  const at = "resourceSpans[0].scopeSpans[0].spans[0]";
  const bad: [unknown, RegExp][] = [
    [null, /^body: must be a JSON object/],
    [[], /^body: must be a JSON object/],
    ["text", /^body: must be a JSON object/],
    [42, /^body: must be a JSON object/],
    [{ resourceSpans: "x" }, /^resourceSpans: must be an array/],
    [{ resourceSpans: [1] }, /^resourceSpans\[0\]: must be an object/],
    [
      { resourceSpans: [{ scopeSpans: [{ spans: [7] }] }] },
      /^resourceSpans\[0\]\.scopeSpans\[0\]\.spans\[0\]: must be/,
    ],
    [{ resourceSpans: [{ resource: [] }] }, /^resourceSpans\[0\]\.resource: must be an object/],
    [withSpan({ attributes: {} }), new RegExp(`^${escapeRegExp(at)}\\.attributes: must be an array`)],
    [withSpan({ attributes: [null] }), /\.attributes\[0\]: must be an object/],
    [withSpan({ attributes: [{ key: 1 }] }), /\.attributes\[0\]\.key: must be a string/],
    [withSpan({ attributes: [{ key: "k", value: { intValue: "1.5" } }] }), /\.value\.intValue: must be an integer/],
    [withSpan({ attributes: [{ key: "k", value: { intValue: 1.5 } }] }), /\.value\.intValue: must be an integer/],
    [withSpan({ attributes: [{ key: "k", value: { intValue: true } }] }), /\.value\.intValue: must be an integer/],
    [withSpan({ attributes: [{ key: "k", value: { doubleValue: "nan" } }] }), /\.value\.doubleValue: must be/],
    [withSpan({ attributes: [{ key: "k", value: { boolValue: "true" } }] }), /\.value\.boolValue: must be true/],
    [withSpan({ attributes: [{ key: "k", value: { arrayValue: { values: 3 } } }] }), /arrayValue\.values: must be/],
    [withSpan({ traceId: 5 }), /\.traceId: must be a string/],
    [withSpan({ kind: "SPAN_KIND_NOPE" }), /\.kind: must be an enum number or one of SPAN_KIND_UNSPECIFIED/],
    [withSpan({ kind: 1.5 }), /\.kind: must be an enum/],
    [withSpan({ startTimeUnixNano: "12abc" }), /\.startTimeUnixNano: must be an integer/],
    [withSpan({ flags: -1 }), /\.flags: must be an unsigned 32-bit integer/],
    [withSpan({ events: [{ timeUnixNano: {} }] }), /\.events\[0\]\.timeUnixNano: must be an integer/],
    [withSpan({ links: "none" }), /\.links: must be an array/],
    [withSpan({ status: 2 }), /\.status: must be an object/],
  ];
  for (const [body, message] of bad) {
    t.throws(() => readTracesJson(body), { name: "OtlpDecodeError", message }, JSON.stringify(body).slice(0, 120));
  }
  t.throws(() => readLogsJson({ resourceLogs: [{ scopeLogs: [{ logRecords: [{ body: [] }] }] }] }), {
    message: /^resourceLogs\[0\]\.scopeLogs\[0\]\.logRecords\[0\]\.body: must be an object/,
  });
});

function escapeRegExp(text: string): string {
  return text.replace(/[.[\]]/g, "\\$&");
}

t.test("JSON nested past 100 levels is an OtlpDecodeError, not a stack overflow", async (t) => {
  let value: unknown = { stringValue: "x" };
  for (let i = 0; i < 5000; i++) value = { arrayValue: { values: [value] } };
  const body = { resourceSpans: [{ resource: { attributes: [{ key: "k", value }] } }] };
  t.throws(() => readTracesJson(body), { name: "OtlpDecodeError", message: /deeper than 100/ });
});

/** JSON values shaped somewhat like OTLP: its field names, with any JSON values under them. */
const FIELDS = [
  ...["resourceSpans", "scopeSpans", "spans", "resource", "scope", "attributes", "key", "value", "values"],
  ...["stringValue", "boolValue", "intValue", "doubleValue", "bytesValue", "arrayValue", "kvlistValue"],
  ...["traceId", "spanId", "parentSpanId", "name", "kind", "startTimeUnixNano", "endTimeUnixNano", "flags"],
  ...["events", "links", "status", "code", "message", "droppedAttributesCount", "timeUnixNano", "schemaUrl"],
  ...["resourceLogs", "scopeLogs", "logRecords", "body", "severityNumber", "eventName", "resource_spans"],
];
const { otlpish } = fc.letrec<{ otlpish: unknown }>((tie) => ({
  otlpish: fc.oneof(
    { depthSize: "small" },
    fc.jsonValue({ maxDepth: 1 }),
    fc.constantFrom("NaN", "SPAN_KIND_CLIENT", "12345678901234567890", "0".repeat(16), -1, 2 ** 64, 0.5),
    fc.array(tie("otlpish"), { maxLength: 3 }),
    fc.dictionary(fc.constantFrom(...FIELDS), tie("otlpish"), { maxKeys: 4 }),
  ),
}));

t.test("random JSON values: read, or an OtlpDecodeError", async (t) => {
  const property = fc.property(fc.oneof(otlpish, fc.jsonValue()), (body) => {
    decodesOrRefuses(() => readTracesJson(body));
    decodesOrRefuses(() => readLogsJson(body));
  });
  t.doesNotThrow(() => fc.assert(property, { numRuns: 2000 }));
});

t.test("big integers anywhere in the text, through quoteBigIntegers and JSON.parse: read, or refused", async (t) => {
  const MARK = 7777777;
  const marked = fc.letrec<{ value: unknown }>((tie) => ({
    value: fc.oneof(
      { depthSize: "small" },
      fc.constant(MARK),
      fc.constant(`a ${MARK}, "intValue": ${MARK}`),
      fc.jsonValue({ maxDepth: 1 }),
      fc.array(tie("value"), { maxLength: 3 }),
      fc.dictionary(fc.constantFrom(...FIELDS, "int_value", "time_unix_nano"), tie("value"), { maxKeys: 4 }),
    ),
  })).value;
  const property = fc.property(marked, fc.bigInt({ min: -(10n ** 25n), max: 10n ** 25n }), (value, n) => {
    const text = JSON.stringify(value).replaceAll(String(MARK), String(n));
    const body = JSON.parse(quoteBigIntegers(text)); // quoting a number never breaks the JSON
    decodesOrRefuses(() => readTracesJson(body));
    decodesOrRefuses(() => readLogsJson(body));
  });
  t.doesNotThrow(() => fc.assert(property, { numRuns: 2000 }));
});

t.test("random bytes, and real bytes changed at random: decoded, or an OtlpDecodeError", async (t) => {
  const random = fc.property(fc.uint8Array({ maxLength: 300 }), (bytes) => {
    decodesOrRefuses(() => decodeTraces(bytes));
    decodesOrRefuses(() => decodeLogs(bytes));
  });
  t.doesNotThrow(() => fc.assert(random, { numRuns: 3000 }));
  const changed = fc.property(
    fc.array(fc.tuple(fc.nat(fixtureBytes.length - 1), fc.integer({ min: 0, max: 255 })), {
      minLength: 1,
      maxLength: 4,
    }),
    (changes) => {
      const bytes = Uint8Array.from(fixtureBytes);
      for (const [at, byte] of changes) bytes[at] = byte;
      decodesOrRefuses(() => decodeTraces(bytes));
    },
  );
  t.doesNotThrow(() => fc.assert(changed, { numRuns: 1000 }));
});

t.test("the answers decode as what they say", async (t) => {
  const { collector } = opentelemetry.proto;
  t.equal(encodeTraceResponse().length, 0, "a full success is zero bytes");
  t.equal(encodeLogsResponse().length, 0);
  t.equal(encodeMetricsResponse().length, 0);
  const traces = collector.trace.v1.ExportTraceServiceResponse.decode(
    encodeTraceResponse({ rejected: 3, message: 'span "x" was refused' }),
  );
  t.equal(String(traces.partialSuccess?.rejectedSpans), "3");
  t.equal(traces.partialSuccess?.errorMessage, 'span "x" was refused');
  const logs = collector.logs.v1.ExportLogsServiceResponse.decode(encodeLogsResponse({ rejected: 2, message: "m" }));
  t.equal(String(logs.partialSuccess?.rejectedLogRecords), "2");
  t.equal(logs.partialSuccess?.errorMessage, "m");
  const status = google.rpc.Status.decode(encodeStatus(400, "resourceSpans: must be an array"));
  t.equal(status.code, 400);
  t.equal(status.message, "resourceSpans: must be an array");
  t.strictSame(status.details, []);
});
