/**
 * Test-side protobuf: a canonical OTLP request encoded as an OTLP client would send it
 * (test/ingest/decode.helpers.ts), and the server's binary answers decoded with the generated
 * code (generated/otlp.js), so that the tests speak the wire format without hand-made bytes.
 */
import { google, opentelemetry } from "../generated/otlp.js";

export { encodeLogs, encodeTraces } from "./ingest/decode.helpers.ts";

const { ExportTraceServiceResponse } = opentelemetry.proto.collector.trace.v1;

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
