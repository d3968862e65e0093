/**
 * The binary answers of the OTLP endpoints (otlp.md T3, T4, T8, T10), encoded by generated/otlp.js.
 * A full success is the empty message, zero bytes on the wire.
 */
import { google, opentelemetry } from "../../generated/otlp.js";

const { ExportTraceServiceResponse } = opentelemetry.proto.collector.trace.v1;
const { ExportLogsServiceResponse } = opentelemetry.proto.collector.logs.v1;
const { ExportMetricsServiceResponse } = opentelemetry.proto.collector.metrics.v1;

/** What was refused one by one (T8): how many, and why the first few were. */
export interface PartialSuccess {
  rejected: number;
  message: string;
}

export function encodeTraceResponse(partial?: PartialSuccess): Uint8Array {
  if (!partial) return new Uint8Array(0);
  const partialSuccess = { rejectedSpans: partial.rejected, errorMessage: partial.message };
  return ExportTraceServiceResponse.encode({ partialSuccess }).finish();
}

export function encodeLogsResponse(partial?: PartialSuccess): Uint8Array {
  if (!partial) return new Uint8Array(0);
  const partialSuccess = { rejectedLogRecords: partial.rejected, errorMessage: partial.message };
  return ExportLogsServiceResponse.encode({ partialSuccess }).finish();
}

/** Metrics are accepted and not read (T4): the answer is always the empty response. */
export function encodeMetricsResponse(): Uint8Array {
  return ExportMetricsServiceResponse.encode({}).finish();
}

/**
 * A failure as google.rpc.Status: the body of an OTLP/HTTP failure (T10), with no details; over
 * OTLP/gRPC the `grpc-status-details-bin` of a refusal the client may retry, whose one detail is a
 * google.rpc.RetryInfo saying after how many seconds (docs/decisions/028-otlp-grpc.md).
 */
export function encodeStatus(code: number, message: string, retryAfterSeconds?: number): Uint8Array {
  if (retryAfterSeconds === undefined) return google.rpc.Status.encode({ code, message }).finish();
  const retryInfo = google.rpc.RetryInfo.encode({ retryDelay: { seconds: retryAfterSeconds, nanos: 0 } }).finish();
  // pbjs keeps google.protobuf.Any's field names as the .proto spells them.
  const details = [{ type_url: RETRY_INFO_TYPE_URL, value: retryInfo }];
  return google.rpc.Status.encode({ code, message, details }).finish();
}

/** The type URL of google.rpc.RetryInfo in a google.protobuf.Any. */
export const RETRY_INFO_TYPE_URL = "type.googleapis.com/google.rpc.RetryInfo";
