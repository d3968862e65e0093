/**
 * A request body that cannot be read as OTLP: bad protobuf, JSON of the wrong shape (otlp.md T10).
 * Its message says what was wrong, and where in JSON, for the 400 answer; nothing of the request is
 * stored. Every other error a decoder throws is a bug of ours, not of the client.
 */
export class OtlpDecodeError extends Error {
  override name = "OtlpDecodeError";
}
