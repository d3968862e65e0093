/**
 * Test-side protobuf: a canonical OTLP request (ingest/otlp/types.ts) encoded as an OTLP client
 * would send it, and the server's binary answers decoded, both with the generated code
 * (generated/otlp.js), so that the tests speak the wire format without hand-made bytes.
 */
import Long from "long";
import { google, opentelemetry } from "../generated/otlp.js";
import type { AnyValue, KeyValue, TraceRequest } from "../ingest/otlp/types.ts";

const { ExportTraceServiceRequest, ExportTraceServiceResponse } = opentelemetry.proto.collector.trace.v1;

const bytes = (hex: string | undefined) => (hex ? Buffer.from(hex, "hex") : new Uint8Array(0));
const long = (decimal: string | undefined, unsigned: boolean) =>
  decimal === undefined ? undefined : Long.fromString(decimal, unsigned);

function value(v: AnyValue): object {
  if ("intValue" in v) return { intValue: long(v.intValue, false) };
  if ("doubleValue" in v) return { doubleValue: Number(v.doubleValue) };
  if ("bytesValue" in v) return { bytesValue: Buffer.from(v.bytesValue, "base64") };
  if ("arrayValue" in v) return { arrayValue: { values: v.arrayValue.values.map(value) } };
  if ("kvlistValue" in v) return { kvlistValue: { values: attrs(v.kvlistValue.values) } };
  return v;
}
const attrs = (list: KeyValue[] | undefined) => (list ?? []).map((kv) => ({ key: kv.key, value: value(kv.value) }));

/** The request as the bytes of an ExportTraceServiceRequest. */
export function encodeTraces(request: TraceRequest): Uint8Array {
  const message = {
    resourceSpans: request.resourceSpans.map((rs) => ({
      resource: { ...rs.resource, attributes: attrs(rs.resource.attributes) },
      schemaUrl: rs.schemaUrl,
      scopeSpans: rs.scopeSpans.map((ss) => ({
        scope: { ...ss.scope, attributes: attrs(ss.scope.attributes) },
        schemaUrl: ss.schemaUrl,
        spans: ss.spans.map((s) => ({
          ...s,
          traceId: bytes(s.traceId),
          spanId: bytes(s.spanId),
          parentSpanId: bytes(s.parentSpanId),
          startTimeUnixNano: long(s.startTimeUnixNano, true),
          endTimeUnixNano: long(s.endTimeUnixNano, true),
          attributes: attrs(s.attributes),
          events: s.events.map((e) => ({
            ...e,
            timeUnixNano: long(e.timeUnixNano, true),
            attributes: attrs(e.attributes),
          })),
          links: s.links.map((l) => ({
            ...l,
            traceId: bytes(l.traceId),
            spanId: bytes(l.spanId),
            attributes: attrs(l.attributes),
          })),
        })),
      })),
    })),
  };
  return ExportTraceServiceRequest.encode(message as never).finish();
}

/** A binary ExportTraceServiceResponse, with its 64-bit count as a string as in OTLP/JSON. */
export function decodeTraceResponse(body: Uint8Array) {
  const answer = ExportTraceServiceResponse.decode(body);
  const partial = answer.partialSuccess;
  return {
    partialSuccess: partial
      ? { rejectedSpans: String(partial.rejectedSpans ?? 0), errorMessage: partial.errorMessage ?? "" }
      : undefined,
  } as { partialSuccess: { rejectedSpans: string; errorMessage: string } };
}

/** A binary google.rpc.Status. */
export function decodeStatus(body: Uint8Array): { code: number; message: string } {
  const status = google.rpc.Status.decode(body);
  return { code: status.code ?? 0, message: status.message ?? "" };
}
