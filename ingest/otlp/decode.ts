/**
 * Reading OTLP request bodies, and writing the answers: what the HTTP layer uses (otlp.md T1-T4,
 * T10, T11). Binary bodies go through decodeTraces and decodeLogs. JSON bodies are parsed by the
 * caller (after quoteBigIntegers) and read by readTracesJson and readLogsJson. Both give the
 * canonical form of types.ts, and both throw OtlpDecodeError, and only that, for a body that
 * cannot be read: a 400.
 */
export { quoteBigIntegers } from "./big-integers.ts";
export { OtlpDecodeError } from "./errors.ts";
export { readLogsJson, readTracesJson } from "./json.ts";
export { decodeLogs, decodeTraces } from "./protobuf.ts";
export {
  encodeLogsResponse,
  encodeMetricsResponse,
  encodeStatus,
  encodeTraceResponse,
  type PartialSuccess,
  RETRY_INFO_TYPE_URL,
} from "./responses.ts";
