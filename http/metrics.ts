/**
 * GET /metrics (docs/decisions/012-metrics.md): every answered request counted and timed by its
 * operation and status, the reason of a refusal (401, 413, 429, 503 and which storage fault), the
 * metrics token of the main port, and the port of its own that serves /metrics without one.
 * services/metrics.ts keeps the figures; this is where HTTP meets them.
 */
import { createHash, timingSafeEqual } from "node:crypto";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import type { FastifyInstance, FastifyRequest } from "fastify";
import { SchemaMismatch, StorageFault } from "../db/errors.ts";
import { ApiError, notFound } from "../domain/errors.ts";
import { METRICS_CONTENT_TYPE, type Metrics, type Rejection } from "../services/metrics.ts";
import { clientError, hostProblem } from "./errors.ts";
import { InflightRefusal } from "./inflight.ts";
import type { Routes } from "./routes.ts";

/** The refusals counted, by status; a 503 of a storage fault (or of the memory ceiling) says which instead. */
const REFUSED: Record<number, Rejection> = {
  401: "unauthorized",
  413: "payload_too_large",
  429: "too_many_requests",
  503: "unavailable",
};

function storageFault(error: unknown): Rejection | undefined {
  if (error instanceof StorageFault) return `storage_${error.kind}`;
  if (error instanceof SchemaMismatch) return "storage_schema";
  if (error instanceof InflightRefusal) return "inflight_bytes";
  return undefined;
}

export const invalidMetricsToken = () =>
  new ApiError(
    401,
    {
      error: "Invalid metrics token",
      message: "Send the metrics token as Authorization: Bearer <AGENTMON_METRICS_TOKEN>",
    },
    { "www-authenticate": 'Bearer realm="agentmon metrics"' },
  );

const metricsNotServed = () =>
  notFound(
    "Metrics are not served on this port: set AGENTMON_METRICS_TOKEN to serve them here to that bearer token, or AGENTMON_METRICS_PORT to serve them on a port of their own",
  );

const digest = (text: string) => createHash("sha256").update(text).digest();

export interface MetricsOptions {
  metrics: Metrics;
  /** The bearer token of GET /metrics on this port; without one it answers 404. */
  token?: string | undefined;
  routes: Routes;
}

/** Counts every answer (register before the routes), and guards GET /metrics with the token. */
export function requestMetrics(app: FastifyInstance, { metrics, token, routes }: MetricsOptions) {
  // Only a refused request pays for the look-up of why.
  const faults = new WeakMap<FastifyRequest, Rejection>();
  app.addHook("onError", (req, _reply, error, done) => {
    const fault = storageFault(error);
    if (fault !== undefined) faults.set(req, fault);
    done();
  });
  app.addHook("onResponse", (req, reply, done) => {
    const status = reply.statusCode;
    const operation = (req.routeOptions.schema as { operationId?: string } | undefined)?.operationId ?? "none";
    const refused = REFUSED[status];
    const reason = refused === undefined ? undefined : status === 503 ? (faults.get(req) ?? refused) : refused;
    metrics.request(operation, status, reply.elapsedTime / 1000, reason);
    done();
  });

  const expected = token === undefined ? undefined : digest(token);
  /** The metrics token, compared in constant time (as hashes, so its length does not show either). */
  async function checkMetricsToken(req: FastifyRequest) {
    if (expected === undefined) throw metricsNotServed();
    const given = /^Bearer +(\S+) *$/i.exec(req.headers.authorization ?? "")?.[1];
    if (given === undefined || !timingSafeEqual(digest(given), expected)) throw invalidMetricsToken();
  }
  app.addHook("onRoute", (route) => {
    if (routes.security(route.method as string, route.url) === "metrics") route.onRequest = checkMetricsToken;
  });
}

export interface MetricsListener {
  /** Where /metrics is served, such as `http://127.0.0.1:9464/metrics`. */
  url: string;
  close(): Promise<void>;
}

function answer(res: ServerResponse, status: number, body: object, headers: Record<string, string> = {}) {
  const text = JSON.stringify(body);
  res.writeHead(status, {
    "content-type": "application/json; charset=utf-8",
    "content-length": Buffer.byteLength(text),
    ...headers,
  });
  res.end(text);
}

/**
 * AGENTMON_METRICS_PORT: a listener of its own, on the server's host, that serves GET (and HEAD)
 * /metrics without a credential and answers anything else with a G2 body; keep the port where
 * only Prometheus reaches it.
 */
export async function metricsListener(metrics: Metrics, host: string, port: number): Promise<MetricsListener> {
  // Node's own 400 for a request without Host has no body: hostProblem answers it with one.
  const server = createServer(
    { requestTimeout: 10_000, headersTimeout: 10_000, requireHostHeader: false },
    (req, res) => {
      void serveMetrics(metrics, req, res);
    },
  );
  server.keepAliveTimeout = 72_000;
  server.on("clientError", clientError); // broken HTTP gets a G2 body here too
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, host, () => {
      server.off("error", reject);
      resolve();
    });
  });
  const address = server.address() as AddressInfo;
  const shown = address.family === "IPv6" ? `[${address.address}]` : address.address;
  return {
    url: `http://${shown}:${address.port}/metrics`,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

async function serveMetrics(metrics: Metrics, req: IncomingMessage, res: ServerResponse) {
  const path = (req.url ?? "").split("?")[0];
  const problem = hostProblem(req);
  if (problem) {
    answer(res, 400, { error: "Bad request", message: problem }, { connection: "close" });
    return;
  }
  if (path !== "/metrics") {
    answer(res, 404, { error: "Not found", message: "This port serves only GET /metrics" });
    return;
  }
  if (req.method !== "GET" && req.method !== "HEAD") {
    answer(
      res,
      405,
      { error: "Method not allowed", message: `${req.method} is not allowed on /metrics; use GET` },
      { allow: "GET, HEAD" },
    );
    return;
  }
  try {
    const text = await metrics.exposition();
    res.writeHead(200, { "content-type": METRICS_CONTENT_TYPE, "content-length": Buffer.byteLength(text) });
    res.end(req.method === "HEAD" ? undefined : text);
  } catch {
    answer(res, 500, {
      error: "Internal server error",
      message: "Something went wrong on the server; the request can be retried",
    });
  }
}
