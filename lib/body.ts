/**
 * Request bodies may come gzip- or deflate-encoded (contract G4). The body limit counts the
 * decoded bytes, and decoding stops the moment the limit is passed, so a gzip bomb costs at most
 * one limit's worth of work before its 413.
 */
import { pipeline, type Readable, Transform } from "node:stream";
import { createGunzip, createInflate } from "node:zlib";
import { payloadTooLarge, unsupportedMediaType } from "../handlers/errors.ts";

export function decodeBody(
  encoding: string | undefined,
  payload: Readable,
  limit: number,
): Readable & { receivedEncodedLength?: number } {
  // A list of codings is applied in order; identity is no coding at all.
  const codings = (encoding ?? "")
    .toLowerCase()
    .split(",")
    .map((coding) => coding.trim())
    .filter((coding) => coding !== "" && coding !== "identity");
  if (codings.length === 0) return payload;
  const name = codings.join(", ");
  const decoder =
    name === "gzip" || name === "x-gzip" ? createGunzip() : name === "deflate" ? createInflate() : undefined;
  if (decoder === undefined) {
    throw unsupportedMediaType(`Content-Encoding "${name}" is not supported; send the body plain, gzip or deflate`);
  }
  let decoded = 0;
  const counter: Transform & { receivedEncodedLength?: number } = new Transform({
    transform(chunk: Buffer, _encoding, done) {
      decoded += chunk.length;
      if (decoded > limit) done(payloadTooLarge(limit));
      else done(null, chunk);
    },
  });
  counter.receivedEncodedLength = 0;
  payload.on("data", (chunk: Buffer) => {
    counter.receivedEncodedLength = (counter.receivedEncodedLength ?? 0) + chunk.length;
  });
  pipeline(payload, decoder, counter, () => {});
  return counter;
}
