/**
 * Decoding OTLP traces and logs into the canonical form (ingest/otlp/types.ts): the real clients'
 * requests (test/fixtures/otlp/) decode the same from protobuf and from OTLP/JSON, the canonical
 * form survives a trip through protobuf and through JSON, and OTLP/JSON is read as otlp.md T11 says.
 */
import { deepStrictEqual } from "node:assert/strict";
import { readFileSync } from "node:fs";
import fc from "fast-check";
import t from "tap";
import { decodeLogs, decodeTraces, quoteBigIntegers, readLogsJson, readTracesJson } from "../../ingest/otlp/decode.ts";
import type { Span, TraceRequest } from "../../ingest/otlp/types.ts";
import { encodeLogs, encodeTraces, logsRequest, spanCount, traceFixtures, traceRequest } from "./decode.helpers.ts";

const readJson = (path: string) => JSON.parse(quoteBigIntegers(readFileSync(path, "utf8")));

t.test("every protobuf fixture decodes to what its OTLP/JSON twin reads as", async (t) => {
  const fixtures = traceFixtures().filter((f) => f.request.spans !== undefined);
  t.ok(fixtures.length >= 6, "the fixtures are found");
  for (const fixture of fixtures) {
    const json = fixture.name.includes("otlp-json") ? ".body.json" : ".body.otlp.json";
    const fromJson = readTracesJson(readJson(fixture.path(json)));
    t.equal(spanCount(fromJson), fixture.request.spans, `${fixture.name}: the request's span count`);
    if (json === ".body.json") continue;
    const fromProtobuf = decodeTraces(readFileSync(fixture.path(".body.bin")));
    t.strictSame(fromProtobuf, fromJson, `${fixture.name}: .body.bin and .body.otlp.json agree`);
  }
});

t.test("a fixture span, in canonical form", async (t) => {
  const fixture = traceFixtures().find((f) => f.name === "agentops-sdk-0.4.21/openai/03-post-v1-traces");
  const request = decodeTraces(readFileSync(fixture?.path(".body.bin") ?? ""));
  const spans = request.resourceSpans.flatMap((rs) => rs.scopeSpans.flatMap((ss) => ss.spans));
  const plan = spans.find((s) => s.name === "plan.task") as Span;
  t.match(plan, {
    traceId: "f6cb039ee150324247828e7aeacfac7e",
    spanId: "f7f43defbaeadfd2",
    parentSpanId: "649b1b9fbb635f35",
    kind: 1,
    startTimeUnixNano: "1795522987200113044",
    endTimeUnixNano: "1795522987200172552",
    flags: 256,
  });
  t.notOk("status" in plan, "an empty (UNSET) status is left out");
  const root = spans.find((s) => s.name === "session.session") as Span;
  t.notOk("parentSpanId" in root, "a root has no parentSpanId");
});

t.test("the fixtures survive a trip back through protobuf", async (t) => {
  for (const fixture of traceFixtures().filter((f) => !f.name.includes("otlp-json"))) {
    const request = decodeTraces(readFileSync(fixture.path(".body.bin")));
    t.strictSame(decodeTraces(encodeTraces(request)), request, fixture.name);
  }
});

t.test("any canonical request survives protobuf and OTLP/JSON", async (t) => {
  const traces = fc.property(traceRequest, (request) => {
    deepStrictEqual(decodeTraces(encodeTraces(request)), request);
    deepStrictEqual(readTracesJson(JSON.parse(JSON.stringify(request))), request);
  });
  t.doesNotThrow(() => fc.assert(traces, { numRuns: 300 }), "traces");
  const logs = fc.property(logsRequest, (request) => {
    deepStrictEqual(decodeLogs(encodeLogs(request)), request);
    deepStrictEqual(readLogsJson(JSON.parse(JSON.stringify(request))), request);
  });
  t.doesNotThrow(() => fc.assert(logs, { numRuns: 300 }), "logs");
});

t.test("an empty body is an empty request", async (t) => {
  t.strictSame(decodeTraces(new Uint8Array(0)), { resourceSpans: [] });
  t.strictSame(decodeLogs(new Uint8Array(0)), { resourceLogs: [] });
  t.strictSame(readTracesJson({}), { resourceSpans: [] });
  t.strictSame(readLogsJson({}), { resourceLogs: [] });
});

/** A request of one span with the given fields (and attributes), in OTLP/JSON. */
function oneSpan(fields: Record<string, unknown>, attributes: unknown[] = []): unknown {
  const span = { traceId: "5b8efff798038103d269b633813fc60c", spanId: "eee19b7ec3c1b174", name: "s", attributes };
  return { resourceSpans: [{ scopeSpans: [{ spans: [{ ...span, ...fields }] }] }] };
}

function theSpan(request: TraceRequest): Span {
  return request.resourceSpans[0]?.scopeSpans[0]?.spans[0] as Span;
}

const attribute = (value: unknown) => theSpan(readTracesJson(oneSpan({}, [{ key: "k", value }]))).attributes[0]?.value;

t.test("T11: enums as numbers or names", async (t) => {
  t.equal(theSpan(readTracesJson(oneSpan({ kind: "SPAN_KIND_CLIENT" }))).kind, 3);
  t.equal(theSpan(readTracesJson(oneSpan({ kind: 5 }))).kind, 5);
  t.equal(theSpan(readTracesJson(oneSpan({ kind: "2" }))).kind, 2, "a number in a string");
  t.strictSame(theSpan(readTracesJson(oneSpan({ status: { code: "STATUS_CODE_ERROR", message: "x" } }))).status, {
    code: 2,
    message: "x",
  });
  t.strictSame(theSpan(readTracesJson(oneSpan({ status: { code: "STATUS_CODE_OK" } }))).status, { code: 1 });
  t.notOk("status" in theSpan(readTracesJson(oneSpan({ status: { code: "STATUS_CODE_UNSET" } }))));
  const logs = (severityNumber: unknown) =>
    readLogsJson({ resourceLogs: [{ scopeLogs: [{ logRecords: [{ severityNumber }] }] }] }).resourceLogs[0]
      ?.scopeLogs[0]?.logRecords[0]?.severityNumber;
  t.equal(logs("SEVERITY_NUMBER_INFO"), 9);
  t.equal(logs("SEVERITY_NUMBER_WARN3"), 15);
  t.equal(logs("SEVERITY_NUMBER_FATAL4"), 24);
  t.equal(logs(17), 17);
});

t.test("T11: 64-bit integers as strings or numbers", async (t) => {
  t.strictSame(attribute({ intValue: 4242 }), { intValue: "4242" }, "a number");
  t.strictSame(attribute({ intValue: "-17" }), { intValue: "-17" }, "a string");
  t.strictSame(attribute({ intValue: "007" }), { intValue: "7" }, "leading zeros made canonical");
  t.strictSame(attribute({ intValue: "9223372036854775807" }), { intValue: "9223372036854775807" });
  t.strictSame(attribute({ intValue: 2 ** 60 }), { intValue: "1152921504606847000" }, "unsafe: the shortest digits");
  t.strictSame(attribute({ intValue: 1e21 }), { intValue: "1000000000000000000000" }, "never an exponent");
  t.equal((attribute({ intValue: -1e300 }) as { intValue: string }).intValue.length, 302, "nor refused");
  const span = theSpan(readTracesJson(oneSpan({ startTimeUnixNano: 1795523426365000000, endTimeUnixNano: "17" })));
  t.equal(span.startTimeUnixNano, "1795523426365000000");
  t.equal(span.endTimeUnixNano, "17");
  t.equal(theSpan(readTracesJson(oneSpan({}))).startTimeUnixNano, "0", "an absent time is 0");
});

t.test("T11: intValue beyond 2^53 keeps its digits through quoteBigIntegers and JSON.parse", async (t) => {
  const text = JSON.stringify(oneSpan({ startTimeUnixNano: "X1" }, [{ key: "k", value: { intValue: "X2" } }]))
    .replace('"X1"', "1795523426365000123")
    .replace('"X2"', "-9223372036854775807");
  const span = theSpan(readTracesJson(JSON.parse(quoteBigIntegers(text))));
  t.equal(span.startTimeUnixNano, "1795523426365000123");
  t.strictSame(span.attributes[0]?.value, { intValue: "-9223372036854775807" });
  const plain = theSpan(readTracesJson(JSON.parse(text)));
  t.not(plain.startTimeUnixNano, "1795523426365000123", "without it, JSON.parse rounds");
});

t.test("quoteBigIntegers changes only big integers of those keys, never strings", async (t) => {
  const same = [
    '{"intValue": 123456789012345}',
    '{"other": 12345678901234567}',
    '{"s": "\\"intValue\\": 12345678901234567"}',
    '{"k\\"intValue": 12345678901234567}',
    '{"s": "a \\\\", "x": "\\"intValue\\":12345678901234567"}',
    '{"intValue": 12345678901234567.5}',
    '{"intValue": 1234567890123456789e3}',
  ];
  for (const text of same) t.equal(quoteBigIntegers(text), text, text);
  t.equal(quoteBigIntegers('{"intValue" : 12345678901234567}'), '{"intValue" : "12345678901234567"}');
  t.equal(
    quoteBigIntegers('{"a":"\\\\","timeUnixNano":-12345678901234567,"x":[{"int_value":12345678901234567890}]}'),
    '{"a":"\\\\","timeUnixNano":"-12345678901234567","x":[{"int_value":"12345678901234567890"}]}',
  );
  const text = '{"intValue": 1}';
  t.equal(quoteBigIntegers(text), text, "returned as is");
});

t.test("T11: doubleValue as numbers and as NaN, Infinity, -Infinity", async (t) => {
  t.strictSame(attribute({ doubleValue: 0.2 }), { doubleValue: 0.2 });
  t.strictSame(attribute({ doubleValue: 3 }), { doubleValue: 3 });
  t.strictSame(attribute({ doubleValue: "NaN" }), { doubleValue: "NaN" });
  t.strictSame(attribute({ doubleValue: "Infinity" }), { doubleValue: "Infinity" });
  t.strictSame(attribute({ doubleValue: "-Infinity" }), { doubleValue: "-Infinity" });
  t.strictSame(attribute({ doubleValue: "1.5" }), { doubleValue: 1.5 }, "a number in a string");
  t.strictSame(attribute({ doubleValue: JSON.parse("1e999") }), { doubleValue: "Infinity" }, "JSON.parse's Infinity");
});

t.test("T11: snake_case field names, and unknown fields ignored", async (t) => {
  const snake = {
    resource_spans: [
      {
        resource: { attributes: [{ key: "a", value: { string_value: "x" } }], dropped_attributes_count: 2 },
        scope_spans: [
          {
            scope: { name: "sc" },
            spans: [
              {
                trace_id: "5B8EFFF798038103D269B633813FC60C",
                span_id: "EEE19B7EC3C1B174",
                parent_span_id: "aaaaaaaaaaaaaaaa",
                name: "s",
                kind: "SPAN_KIND_SERVER",
                start_time_unix_nano: "1",
                end_time_unix_nano: "2",
                attributes: [{ key: "n", value: { int_value: 1 } }],
                dropped_events_count: 1,
                status: { code: 2 },
                novel: { anything: [1, 2] },
              },
            ],
            schema_url: "u",
          },
        ],
      },
    ],
    extra: true,
  };
  const camel = readTracesJson({
    resourceSpans: [
      {
        resource: { attributes: [{ key: "a", value: { stringValue: "x" } }], droppedAttributesCount: 2 },
        scopeSpans: [
          {
            scope: { name: "sc" },
            spans: [
              {
                traceId: "5b8efff798038103d269b633813fc60c",
                spanId: "eee19b7ec3c1b174",
                parentSpanId: "aaaaaaaaaaaaaaaa",
                name: "s",
                kind: 2,
                startTimeUnixNano: "1",
                endTimeUnixNano: "2",
                attributes: [{ key: "n", value: { intValue: "1" } }],
                droppedEventsCount: 1,
                status: { code: 2 },
              },
            ],
            schemaUrl: "u",
          },
        ],
      },
    ],
  });
  t.strictSame(readTracesJson(snake), camel);
});

t.test("ids: protobuf bytes as lowercase hex, JSON ids lowercased as given", async (t) => {
  t.equal(theSpan(readTracesJson(oneSpan({ spanId: "EEE19B7EC3C1B174" }))).spanId, "eee19b7ec3c1b174");
  t.equal(theSpan(readTracesJson(oneSpan({ spanId: "7uGbfsPBsXQ=" }))).spanId, "7ugbfspbsxq=", "base64 stays itself");
  t.notOk("parentSpanId" in theSpan(readTracesJson(oneSpan({ parentSpanId: "" }))), '"" is a root');
});
