/**
 * Request bodies: decoded, limited, parsed. They may come gzip- or deflate-encoded (contract G4).
 * The body limit counts the decoded bytes, and decoding stops the moment the limit is passed, so
 * a gzip bomb costs at most one limit's worth of work before its 413. Only JSON bodies are read
 * (http/json.ts), and refused when they hold U+0000 (decision 017).
 */
import { pipeline, type Readable, Transform } from "node:stream";
import { createGunzip, createInflate } from "node:zlib";
import type { FastifyInstance } from "fastify";
import { payloadTooLarge, unsupportedMediaType } from "../domain/errors.ts";
import { quoteBigIntegers } from "../ingest/otlp/decode.ts";
import { parseJsonBody, refuseNul } from "./json.ts";
import { otlpRoute } from "./otlp.ts";

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

/**
 * Decoding and parsing of every route's body. Only JSON bodies are read, by http/json.ts (depth
 * limit; __proto__ and constructor keys stay data, G5: domain/records.ts copies unknown fields
 * with Object.fromEntries and spreads, never by assignment). The other media types of the spec
 * are response types (YAML, the web UI's HTML, JS, CSS, SVG); naming them keeps glue from
 * warning at start-up, and a body of one of them gets the same 415 as any other non-JSON body.
 */
export function bodies(app: FastifyInstance, options: { bodyLimit: number; responseMediaTypes: Set<string> }) {
  const { bodyLimit } = options;
  app.addHook("preParsing", async (req, _reply, payload) => {
    // An OTLP route has a limit of its own (http/otlp.ts); the others, the app's.
    const limit = req.routeOptions.bodyLimit ?? bodyLimit;
    // G3: 413 outranks 415, so a declared oversize body is refused before its type is looked at.
    if (Number(req.headers["content-length"]) > limit) throw payloadTooLarge(limit);
    return decodeBody(req.headers["content-encoding"], payload, limit);
  });
  app.removeAllContentTypeParsers();
  app.addContentTypeParser("application/json", { parseAs: "string" }, (req, body, done) => {
    try {
      // OTLP/JSON may write 64-bit integers as bare numbers: they are quoted first, so that
      // JSON.parse does not round them (otlp.md T11).
      const otlp = otlpRoute(req) !== undefined;
      const text = otlp ? quoteBigIntegers(body as string) : (body as string);
      const value = parseJsonBody(text);
      // U+0000 (decision 017). An OTLP route looks for it in the request it decodes
      // (services/otlp.ts), so that its protobuf and JSON bodies are judged alike.
      if (!otlp) refuseNul(text, value);
      done(null, value);
    } catch (error) {
      done(error as Error, undefined);
    }
  });
  // Protobuf is read, as bytes, only by the OTLP routes; anywhere else it is a 415.
  app.addContentTypeParser("application/x-protobuf", { parseAs: "buffer" }, (req, body, done) => {
    if (otlpRoute(req) === undefined) done(unsupportedMediaType(), undefined);
    else done(null, body);
  });
  for (const type of options.responseMediaTypes) {
    if (type === "application/json" || type === "application/x-protobuf") continue;
    app.addContentTypeParser(type, (_req, _payload, done) => {
      done(unsupportedMediaType(), undefined);
    });
  }
}
