/**
 * Request bodies: decoded, limited, metered, parsed. They may come gzip- or deflate-encoded
 * (contract G4). The body limit counts the decoded bytes, and decoding stops the moment the limit
 * is passed, so a gzip bomb costs at most one limit's worth of work before its 413. The memory
 * ceiling (http/inflight.ts) holds a declared Content-Length before the body is read, and counts
 * a body without one, and the inflated bytes of an encoded one, as they arrive. Only JSON bodies
 * are read (http/json.ts), and protobuf on the OTLP routes; JSON bodies holding U+0000 are
 * refused (decision 017).
 */
import { PassThrough, pipeline, type Readable, Transform } from "node:stream";
import { createGunzip, createInflate } from "node:zlib";
import type { FastifyInstance, FastifyRequest } from "fastify";
import { payloadTooLarge, unsupportedMediaType } from "../domain/errors.ts";
import { quoteBigIntegers } from "../ingest/otlp/big-integers.ts";
import type { InflightBytes } from "../services/inflight.ts";
import { type Meter, meterBody, settleParsed, UNPARSED_COST } from "./inflight.ts";
import { parseJsonBody, refuseNul } from "./json.ts";
import { otlpRoute } from "./otlp.ts";

type Decoder = ReturnType<typeof createGunzip> | ReturnType<typeof createInflate>;

/** The decoder of a Content-Encoding (undefined: identity); a 415 for a coding not supported. */
export function decoderFor(encoding: string | undefined): (() => Decoder) | undefined {
  // A list of codings is applied in order; identity is no coding at all.
  const codings = (encoding ?? "")
    .toLowerCase()
    .split(",")
    .map((coding) => coding.trim())
    .filter((coding) => coding !== "" && coding !== "identity");
  if (codings.length === 0) return undefined;
  const name = codings.join(", ");
  if (name === "gzip" || name === "x-gzip") return createGunzip;
  if (name === "deflate") return createInflate;
  throw unsupportedMediaType(`Content-Encoding "${name}" is not supported; send the body plain, gzip or deflate`);
}

/**
 * The request's bytes as a stream of their own, each chunk let through by `admit` (or refused
 * with its error). Ending this stream early (a refusal, a 413 while inflating) leaves the request
 * itself alone: its remaining bytes are read and dropped, so that the answer reaches the client
 * and the connection stays usable, instead of the socket being destroyed under it.
 */
function guarded(source: Readable, admit: (chunk: Buffer) => Error | undefined): PassThrough {
  const out = new PassThrough();
  let open = true;
  const drop = () => {
    open = false;
    source.resume();
  };
  out.once("close", drop);
  source.on("data", (chunk: Buffer) => {
    if (!open) return;
    const refused = admit(chunk);
    if (refused !== undefined) {
      open = false;
      out.destroy(refused);
    } else if (!out.write(chunk)) {
      source.pause();
      out.once("drain", () => source.resume());
    }
  });
  source.once("end", () => {
    if (open) out.end();
  });
  source.once("error", (error) => {
    if (open) out.destroy(error);
  });
  source.once("close", () => {
    if (open && !source.readableEnded) out.destroy(Object.assign(new Error("aborted"), { code: "ECONNRESET" }));
  });
  return out;
}

/** Whether a request has a body to decode: a length above 0, or chunks. */
function carriesBody(req: FastifyRequest): boolean {
  const { headers } = req;
  return headers["transfer-encoding"] !== undefined || (headers["content-length"] ?? "0") !== "0";
}

export function decodeBody(
  decoder: (() => Decoder) | undefined,
  payload: Readable,
  limit: number,
  meter?: Meter,
): Readable & { receivedEncodedLength?: number } {
  // Bytes as they arrive count only when no Content-Length was held for them.
  const growRaw = meter !== undefined && !meter.declared;
  if (decoder === undefined) {
    if (!growRaw) return payload;
    return guarded(payload, (chunk) => (meter.hold.grow(chunk.length * UNPARSED_COST) ? undefined : meter.refusal()));
  }
  let decoded = 0;
  const counter: Transform & { receivedEncodedLength?: number } = new Transform({
    transform(chunk: Buffer, _encoding, done) {
      decoded += chunk.length;
      if (decoded > limit) done(payloadTooLarge(limit));
      else if (meter !== undefined && !meter.hold.grow(chunk.length * UNPARSED_COST)) done(meter.refusal());
      else done(null, chunk);
    },
  });
  counter.receivedEncodedLength = 0;
  const source = guarded(payload, (chunk) => {
    counter.receivedEncodedLength = (counter.receivedEncodedLength ?? 0) + chunk.length;
    return growRaw && !meter.hold.grow(chunk.length * UNPARSED_COST) ? meter.refusal() : undefined;
  });
  pipeline(source, decoder(), counter, () => {});
  return counter;
}

/**
 * Decoding and parsing of every route's body. Only JSON bodies are read, by http/json.ts (depth
 * limit; __proto__ and constructor keys stay data, G5: domain/records.ts copies unknown fields
 * with Object.fromEntries and spreads, never by assignment). The other media types of the spec
 * are response types (YAML, the web UI's HTML, JS, CSS, SVG); naming them keeps glue from
 * warning at start-up, and a body of one of them gets the same 415 as any other non-JSON body.
 */
export function bodies(
  app: FastifyInstance,
  options: { bodyLimit: number; responseMediaTypes: Set<string>; inflight?: InflightBytes | undefined },
) {
  const { bodyLimit, inflight } = options;
  app.addHook("preParsing", async (req, reply, payload) => {
    // An OTLP route has a limit of its own (http/otlp.ts); the others, the app's.
    const limit = req.routeOptions.bodyLimit ?? bodyLimit;
    // A GET or HEAD body is never read (Node drops it), so nothing about it is refused either.
    if (req.method === "GET" || req.method === "HEAD") return payload;
    // G3: 413 outranks 415, so a declared oversize body is refused before its type is looked at.
    if (Number(req.headers["content-length"]) > limit) throw payloadTooLarge(limit);
    // A request without a body (neither a length nor chunks) has no coding to refuse.
    if (!carriesBody(req)) return payload;
    const decoder = decoderFor(req.headers["content-encoding"]);
    // Then the memory ceiling: a body that does not fit is refused before it is read (503).
    const meter = inflight === undefined ? undefined : meterBody(inflight, req, reply);
    return decodeBody(decoder, payload, limit, meter);
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
      // The memory ceiling counts what the parsed body takes from now on (http/inflight.ts).
      settleParsed(req, text.length, value);
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
