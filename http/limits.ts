/**
 * Overload and slow clients (O1-O3): the server's timeouts, a 503 for new requests while it
 * shuts down or while its event loop lags (O2), and the one log line per request.
 */
import underPressure from "@fastify/under-pressure";
import type { FastifyInstance } from "fastify";
import { ApiError, serviceUnavailable } from "../domain/errors.ts";

/**
 * O1: Node checks these timeouts on its own clock (connectionsCheckingInterval), so it is made
 * as fine as the shortest timeout needs; headers get at most 10 s.
 */
export function timeouts(requestTimeoutMs = 30_000, keepAliveTimeoutMs = 72_000) {
  return {
    requestTimeout: requestTimeoutMs,
    keepAliveTimeout: keepAliveTimeoutMs,
    http: {
      headersTimeout: requestTimeoutMs > 0 ? Math.min(10_000, requestTimeoutMs) : 10_000,
      connectionsCheckingInterval: Math.max(100, Math.min(1000, requestTimeoutMs / 10 || 1000)),
      // Node's own answer to a request without Host has no body: http/errors.ts hostRequired gives a G2 one.
      requireHostHeader: false,
    },
  };
}

/** Liveness (also under C1's name) and readiness, which answers its own 503. */
const NEVER_REFUSED = new Set(["/healthz", "/health", "/readyz", "/metrics"]);

const lagging = (lagMs: number) => `overloaded (event loop lag ${Math.round(lagMs)} ms)`;

/** O2's 503, a class of its own so that OTLP/gRPC can answer it RESOURCE_EXHAUSTED (http/grpc.ts). */
export class OverloadRefusal extends ApiError {
  constructor(lagMs: number) {
    super(
      503,
      { error: "Service unavailable", message: `The server is ${lagging(lagMs)}; retry after 2 seconds` },
      { "retry-after": "2" },
    );
  }
}
const overloaded = (lagMs: number) => new OverloadRefusal(lagMs);

/**
 * Refuses new work at once while the server stops or its event loop lags, instead of queueing
 * without bound. Liveness and metrics are never refused this way (an overload is when they are
 * needed); readiness answers its own 503 (getReadiness), from the `pressure` this answers.
 */
export async function backpressure(app: FastifyInstance, maxEventLoopDelay = 1000) {
  let closing = false;
  app.addHook("preClose", async () => {
    closing = true;
  });
  app.addHook("onRequest", async () => {
    if (closing) throw serviceUnavailable("The server is shutting down; retry in a moment", 5);
  });
  await app.register(underPressure, {
    maxEventLoopDelay,
    // A rejection goes to the error handler like any other error; resolving lets the request on.
    // The lag is Infinity when no sample was taken in the last interval: that happens once, while
    // the app compiles its routes at start-up, and is not overload.
    pressureHandler: async (req, _reply, _type, value) => {
      if (NEVER_REFUSED.has(req.routeOptions.url ?? "")) return;
      if (!Number.isFinite(value)) return;
      throw overloaded(Number(value));
    },
  });
  app.addHook("onResponse", async (req, reply) => {
    req.log.info(
      { method: req.method, url: req.url, status: reply.statusCode, ms: Math.round(reply.elapsedTime * 10) / 10 },
      "request",
    );
  });
  /** Why the server is refusing new work right now (O2), or undefined when it is not. */
  return (): string | undefined => {
    if (maxEventLoopDelay <= 0) return undefined;
    const lag = app.memoryUsage().eventLoopDelay;
    return lag > maxEventLoopDelay && Number.isFinite(lag) ? `the server is ${lagging(lag)}` : undefined;
  };
}
