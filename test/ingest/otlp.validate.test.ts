/**
 * otlp.md T9: which spans acceptSpans refuses, one by one, and the reasons it gives (at most 5).
 */
import t from "tap";
import { readTracesJson } from "../../ingest/otlp/decode.ts";
import type { Span, TraceRequest } from "../../ingest/otlp/types.ts";
import { acceptSpans } from "../../ingest/otlp/validate.ts";

const TRACE = "5b8efff798038103d269b633813fc60c";
const SPAN = "eee19b7ec3c1b174";

function span(fields: Partial<Span> = {}): Span {
  return {
    traceId: TRACE,
    spanId: SPAN,
    name: "work",
    kind: 1,
    startTimeUnixNano: "1795523426365000000",
    endTimeUnixNano: "1795523426397097000",
    attributes: [{ key: "k", value: { stringValue: "v" } }],
    events: [],
    links: [],
    ...fields,
  };
}

function request(...spans: Span[]): TraceRequest {
  return { resourceSpans: [{ resource: { attributes: [] }, scopeSpans: [{ scope: { name: "sc" }, spans }] }] };
}

const kept = (r: TraceRequest) => r.resourceSpans.flatMap((rs) => rs.scopeSpans.flatMap((ss) => ss.spans));

t.test("a valid span is kept untouched", async (t) => {
  const child = span({ parentSpanId: "aaaaaaaaaaaaaaaa", status: { code: 2 }, flags: 257 });
  const result = acceptSpans(request(child, span({ spanId: "1111111111111111" })));
  t.equal(result.rejected, 0);
  t.strictSame(result.reasons, []);
  t.equal(kept(result.request)[0], child, "the same object");
  t.equal(kept(result.request).length, 2);
});

t.test("each bad id shape and a missing start is refused, alone", async (t) => {
  const bad: [string, Partial<Span>, RegExp][] = [
    ["short traceId", { traceId: TRACE.slice(2) }, /traceId is not 32 hex digits/],
    ["long traceId", { traceId: `${TRACE}00` }, /traceId is not 32 hex digits/],
    ["empty traceId", { traceId: "" }, /traceId is not 32 hex digits/],
    ["non-hex traceId", { traceId: `${TRACE.slice(1)}g` }, /traceId is not 32 hex digits/],
    ["zero traceId", { traceId: "0".repeat(32) }, /traceId is all zeros/],
    ["short spanId", { spanId: "eee19b7e" }, /spanId is not 16 hex digits/],
    ["empty spanId", { spanId: "" }, /spanId is not 16 hex digits/],
    ["zero spanId", { spanId: "0".repeat(16) }, /spanId is all zeros/],
    ["short parentSpanId", { parentSpanId: "abc" }, /parentSpanId is not 16 hex digits/],
    ["non-hex parentSpanId", { parentSpanId: "zzzzzzzzzzzzzzzz" }, /parentSpanId is not 16 hex digits/],
    ["zero start", { startTimeUnixNano: "0" }, /startTimeUnixNano is missing or zero/],
    ["missing start", { startTimeUnixNano: "" }, /startTimeUnixNano is missing or zero/],
  ];
  for (const [name, fields, why] of bad) {
    const result = acceptSpans(request(span({ name, ...fields }), span({ spanId: "2222222222222222" })));
    t.equal(result.rejected, 1, `${name}: refused`);
    t.strictSame(
      kept(result.request).map((s) => s.spanId),
      ["2222222222222222"],
      `${name}: its neighbour is kept`,
    );
    t.match(result.reasons, [why], `${name}: the reason says why`);
    t.match(result.reasons[0], new RegExp(`^span "${name}" \\(traceId `), `${name}: the reason names the span`);
  }
});

t.test("a base64 id from JSON is refused, deterministically", async (t) => {
  const json = {
    resourceSpans: [
      {
        scopeSpans: [
          {
            spans: [
              { traceId: "W47/95gDgQPSabYzgT/GDA==", spanId: SPAN, name: "b64", startTimeUnixNano: "1" },
              { traceId: TRACE, spanId: "7uGbfsPBsXQ=", name: "b64 span", startTimeUnixNano: "1" },
            ],
          },
        ],
      },
    ],
  };
  for (let i = 0; i < 2; i++) {
    const result = acceptSpans(readTracesJson(json));
    t.equal(result.rejected, 2);
    t.match(result.reasons, [/traceId is not 32 hex/, /spanId is not 16 hex/]);
  }
});

t.test("case does not matter in hex ids; they are kept in lowercase", async (t) => {
  const upper = span({ traceId: TRACE.toUpperCase(), spanId: SPAN.toUpperCase(), parentSpanId: "AAAAAAAAAAAAAAAA" });
  const result = acceptSpans(request(upper));
  t.equal(result.rejected, 0);
  t.match(kept(result.request)[0], { traceId: TRACE, spanId: SPAN, parentSpanId: "aaaaaaaaaaaaaaaa" });
  t.equal(upper.traceId, TRACE.toUpperCase(), "the request given is not changed");
});

t.test('a parent of 16 zeros or "" is a root: left out', async (t) => {
  for (const parentSpanId of ["0".repeat(16), ""]) {
    const given = span({ parentSpanId });
    const result = acceptSpans(request(given));
    t.equal(result.rejected, 0);
    const [root] = kept(result.request);
    t.notOk(root && "parentSpanId" in root, JSON.stringify(parentSpanId));
    t.strictSame({ ...root, parentSpanId }, given, "nothing else changes");
  }
});

t.test("reasons name at most the first 5 refused spans; empty scopes stay", async (t) => {
  const spans = Array.from({ length: 8 }, (_, i) => span({ name: `bad ${i}`, spanId: "0".repeat(16) }));
  const result = acceptSpans(request(...spans));
  t.equal(result.rejected, 8);
  t.equal(result.reasons.length, 5);
  t.match(result.reasons[4], /^span "bad 4"/);
  t.equal(result.request.resourceSpans[0]?.scopeSpans[0]?.spans.length, 0);
  t.strictSame(result.request.resourceSpans[0]?.scopeSpans[0]?.scope, { name: "sc" });
});

t.test("a long name is cut short in the reason", async (t) => {
  const result = acceptSpans(request(span({ name: "x".repeat(10_000), traceId: "" })));
  t.ok((result.reasons[0]?.length ?? 0) < 300);
});
