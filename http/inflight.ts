/**
 * The ceiling on memory, at the HTTP edge (docs/decisions/019-inflight-memory.md): each request
 * body that will be read holds its bytes in services/inflight.ts's budget from before it is read
 * until its answer is sent, since the parsed body and the rows built from it live that long.
 * http/body.ts opens the hold (a declared Content-Length at once, else as the bytes arrive, and
 * the inflated bytes of a gzip or deflate body as they come out); a body that does not fit is
 * refused with 503 and Retry-After, never half stored (G7).
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import { ApiError } from "../domain/errors.ts";
import type { Hold, InflightBytes } from "../services/inflight.ts";
import { isProtobuf, otlpRoute } from "./otlp.ts";

/** Seconds a refused client is asked to wait: bodies in flight are answered within about that. */
export const INFLIGHT_RETRY_AFTER = 2;

const mib = (bytes: number) => `${Math.round((bytes / 1024 / 1024) * 10) / 10} MiB`;

/** The 503 of a body that would pass the budget; http/metrics.ts counts it by its class. */
export class InflightRefusal extends ApiError {
  constructor(limit: number) {
    super(
      503,
      {
        error: "Service unavailable",
        message: `The server holds as many request bodies as its memory budget allows (${mib(limit)}, AGENTMON_INFLIGHT_BYTES); nothing was stored. Retry after ${INFLIGHT_RETRY_AFTER} seconds`,
      },
      { "retry-after": String(INFLIGHT_RETRY_AFTER) },
    );
  }
}

/**
 * What a body holds per byte read until it is parsed: its bytes, and as much again for what
 * parsing them will make (docs/decisions/029-inflight-answers-and-cost.md). Once parsed, the hold
 * becomes the body's bytes plus an estimate of the parsed value (settleParsed), which is more
 * for a body of many small values and about this for one of long strings.
 */
export const UNPARSED_COST = 2;

/** A body's hold, and how http/body.ts grows it: `declared` when the Content-Length was reserved whole. */
export interface Meter {
  hold: Hold;
  declared: boolean;
  refusal(): ApiError;
}

/**
 * An estimate of the V8 heap a parsed JSON value takes, in bytes: a string its header and one
 * byte a character (JSON text is mostly Latin-1), a number that is not a small integer a heap
 * number, an array its header and a slot an element, an object its header and a property slot
 * and descriptor per key (keys are shared strings). One walk, no allocation but its stack: about
 * a microsecond per thousand values.
 */
export function parsedSize(value: unknown): number {
  let size = 0;
  const stack: unknown[] = [value];
  while (stack.length > 0) {
    const v = stack.pop();
    if (typeof v === "string") size += 16 + v.length;
    else if (typeof v === "number") size += (v | 0) === v ? 0 : 16;
    else if (Array.isArray(v)) {
      size += 48 + 8 * v.length;
      for (const item of v) if (typeof item === "object" || typeof item === "string") stack.push(item);
    } else if (typeof v === "object" && v !== null) {
      size += 32;
      const record = v as Record<string, unknown>;
      for (const key in record) {
        size += 16;
        const item = record[key];
        if (typeof item === "object" || typeof item === "string") stack.push(item);
        else if (typeof item === "number" && (item | 0) !== item) size += 16;
      }
    }
  }
  return size;
}

/** A hold lives until both the answer has gone (or the client has) and the handler has returned. */
interface Lifetime {
  hold: Hold;
  answered: boolean;
  handling: boolean;
}
const lifetimes = new WeakMap<FastifyRequest, Lifetime>();

/** Whether Fastify will read this request's body: only JSON, and protobuf on the OTLP routes, are read (http/body.ts). */
function readsBody(req: FastifyRequest): boolean {
  const { headers } = req;
  if (headers["transfer-encoding"] === undefined && (headers["content-length"] ?? "0") === "0") return false;
  if (req.method === "GET" || req.method === "HEAD") return false;
  const type = (headers["content-type"] ?? "").split(";")[0]?.trim().toLowerCase();
  return type === "application/json" || (isProtobuf(req) && otlpRoute(req) !== undefined);
}

/**
 * The meter of a body about to be read, its declared length (if any) reserved now; undefined when
 * the body will not be read. Throws the 503 when the body does not fit.
 */
export function meterBody(ledger: InflightBytes, req: FastifyRequest, reply: FastifyReply): Meter | undefined {
  if (!readsBody(req)) return undefined;
  const length = req.headers["content-length"];
  const declared = length !== undefined && /^\d+$/.test(length);
  const hold = ledger.open(declared ? Number(length) * UNPARSED_COST : 0);
  const refusal = () => new InflightRefusal(ledger.limit);
  if (hold === undefined) throw refusal();
  const lifetime: Lifetime = { hold, answered: false, handling: false };
  lifetimes.set(req, lifetime);
  // 'finish': the answer was sent; 'close': it was, or the connection went first (an abort, O1's 408).
  const answered = () => {
    lifetime.answered = true;
    if (!lifetime.handling) hold.release();
  };
  reply.raw.once("finish", answered);
  reply.raw.once("close", answered);
  return { hold, declared, refusal };
}

/**
 * A body has been parsed: its hold becomes its `bytes` (the text, which lives as long as the
 * call) plus what its parsed `value` takes, whether or not that fits (http/body.ts); bodies under
 * SETTLE_FROM keep what they hold.
 */
export function settleParsed(req: FastifyRequest, bytes: number, value: unknown) {
  if (bytes < SETTLE_FROM) return;
  lifetimes.get(req)?.hold.settle(bytes + parsedSize(value));
}

/**
 * Bodies smaller than this keep twice their bytes: the walk costs about a tenth of JSON.parse,
 * which B1's 100-event calls (about 90 KiB) need not pay, and a small body's shape moves the
 * ceiling little (decision 029).
 */
export const SETTLE_FROM = 256 * 1024;

type Handler = (this: unknown, req: FastifyRequest, reply: FastifyReply) => unknown;

/**
 * Keeps a body's hold while its handler runs, even once the client has gone: the parsed body and
 * the rows built from it live until the handler returns. Register before the routes.
 */
export function holdWhileHandling(app: FastifyInstance) {
  app.addHook("onRoute", (route) => {
    const methods = [route.method].flat();
    if (methods.every((method) => method === "GET" || method === "HEAD")) return;
    const handler = route.handler as Handler;
    route.handler = async function (this: unknown, req: FastifyRequest, reply: FastifyReply) {
      const lifetime = lifetimes.get(req);
      if (lifetime) lifetime.handling = true;
      try {
        return await handler.call(this, req, reply);
      } finally {
        if (lifetime) {
          lifetime.handling = false;
          if (lifetime.answered) lifetime.hold.release();
        }
      }
    } as typeof route.handler;
  });
}
