/**
 * otlp.md T15 (G5): everything a span came with is kept with its event, so that toOtlp rebuilds the
 * OTLP/JSON a client sent, from the stored events and the session's extra (the session root).
 */
import t from "tap";
import type { EventRecord, JsonObject } from "../../domain/types.ts";
import { mapTraces, sessionIdToTraceId, toOtlp } from "../../ingest/otlp/map.ts";
import type { TraceRequest } from "../../ingest/otlp/types.ts";
import { FIXTURES, loadFixture, request, span } from "./otlp.helpers.ts";

/** Every span with its resource, scope and schema URLs, sorted by span id: grouping aside, a request. */
function flat(request: TraceRequest, traceId?: string) {
  const rows = [];
  for (const rs of request.resourceSpans) {
    for (const ss of rs.scopeSpans) {
      for (const s of ss.spans) {
        if (traceId === undefined || s.traceId === traceId) {
          rows.push({ resource: rs.resource, rsUrl: rs.schemaUrl, scope: ss.scope, ssUrl: ss.schemaUrl, span: s });
        }
      }
    }
  }
  return rows.sort((a, b) => (a.span.spanId < b.span.spanId ? -1 : 1));
}

/** What a store gives back: JSON, so undefined and shared references are gone. */
const stored = <T>(value: T): T => JSON.parse(JSON.stringify(value));

function exportOf(request: TraceRequest): Map<string, TraceRequest> {
  const out = new Map<string, TraceRequest>();
  for (const write of mapTraces(request)) {
    const events: EventRecord[] = stored(write.events);
    const sessionExtra: JsonObject = stored(write.root?.fields.extra ?? {});
    out.set(write.session_id, toOtlp(events, write.session_id, sessionExtra));
  }
  return out;
}

for (const [label, path] of Object.entries(FIXTURES)) {
  t.test(`${label}: mapping and exporting give back the same spans`, async (t) => {
    const original = loadFixture(path);
    const exported = exportOf(original);
    t.equal(exported.size, 1);
    for (const [sessionId, again] of exported) {
      const traceId = sessionIdToTraceId(sessionId);
      t.strictSame(flat(again), flat(original, traceId));
      t.strictSame(stored(again), again, "plain JSON");
    }
  });
}

t.test("grouping: spans of two scopes and two resources come back in their own groups", async (t) => {
  const a = request([span({ id: "00000000000000a1" }), span({ id: "00000000000000a2", parent: "00000000000000a1" })], {
    "service.name": "a",
  });
  const b = request([span({ id: "00000000000000b1", parent: "00000000000000a1" })], { "service.name": "b" });
  const merged: TraceRequest = { resourceSpans: [...a.resourceSpans, ...b.resourceSpans] };
  (merged.resourceSpans[1] as { schemaUrl?: string }).schemaUrl = "https://opentelemetry.io/schemas/1.30.0";
  merged.resourceSpans[1]?.scopeSpans.push({
    scope: { name: "other", version: "2" },
    spans: [span({ id: "00000000000000b2" })],
  });
  const [again] = [...exportOf(merged).values()];
  t.equal(again?.resourceSpans.length, 2);
  t.same(
    again?.resourceSpans.map((rs) => rs.scopeSpans.map((ss) => ss.scope.name)),
    [["test"], ["test", "other"]],
  );
  t.strictSame(flat(again as TraceRequest), flat(merged));
});

t.test("error events and v2 events are no spans; a session id that is no UUID gives no trace id", async (t) => {
  const [write] = mapTraces(request([span({ id: "00000000000000c1", status: { code: 2, message: "boom" } })]));
  t.equal(write?.events.length, 2);
  const again = toOtlp(write?.events ?? [], write?.session_id ?? "");
  t.equal(flat(again).length, 1);
  t.equal(toOtlp([], "not-a-uuid").resourceSpans.length, 0);
});
