/**
 * Builds the agentmon HTTP app from its dependencies. openapi.yaml is the routing table:
 * fastify-openapi-glue turns each operation into a route served by handlers/<operationId>.ts,
 * ajv checks request bodies against its schemas and its response schemas serialize the replies.
 * Nothing here reads the environment (server.ts does).
 */
import { readFileSync } from "node:fs";
import Fastify, { type FastifyInstance, type FastifyRequest, type FastifyServerOptions, LogController } from "fastify";
import openapiGlue from "fastify-openapi-glue";
import { parse as parseYaml } from "yaml";
import type { Store } from "./db/store.ts";
import {
  ApiError,
  internalError,
  invalidApiKey,
  invalidJwt,
  invalidRequest,
  payloadTooLarge,
  serviceUnavailable,
  tooManyRequests,
  unsupportedMediaType,
} from "./handlers/errors.ts";
import { createHandlers } from "./handlers/index.ts";
import { FailureLimiter, hashApiKey, isApiKeyShape, signJwt, verifyJwt } from "./lib/auth.ts";
import { decodeBody } from "./lib/body.ts";
import { parseJsonBody } from "./lib/json.ts";
import { isTimestamp } from "./lib/timestamps.ts";
import { type AjvError, detailsFromAjv } from "./lib/validation.ts";

export const SPEC_PATH = new URL("./openapi.yaml", import.meta.url);
export const MIB = 1024 * 1024;

export interface AppOptions {
  store: Store;
  /** HS256 signing secret for JWTs. */
  jwtSecret: string;
  /** Base of session_url; a function when it is known only once the server listens (PORT=0). */
  publicUrl?: string | (() => string);
  /** Body limit in bytes, after decompression (L1). */
  bodyLimit?: number;
  /** Most events in one create_events call (E1). */
  maxEvents?: number;
  /** Failed API-key checks allowed per address and window (4.6). */
  authFailLimit?: number;
  authFailWindowMs?: number;
  /**
   * Which proxies to believe about the client address (X-Forwarded-For), as Fastify's
   * `trustProxy`: the address is what 4.6 counts failures by. Default: none.
   */
  trustProxy?: boolean | string;
  logger?: FastifyServerOptions["logger"];
  /** The clock, in milliseconds since the epoch. */
  now?: () => number;
}

type Security = "apiKey" | "jwt" | "none";

interface Operation {
  security?: Record<string, string[]>[];
  requestBody?: unknown;
}

type Spec = {
  paths: Record<string, Record<string, Operation>>;
  components: { schemas: Record<string, { properties?: Record<string, Record<string, unknown>> }> };
};

function securityOf(operation: Operation): Security {
  const schemes = (operation.security ?? []).flatMap((requirement) => Object.keys(requirement));
  if (schemes.includes("bearerAuth")) return "jwt";
  if (schemes.includes("agentmonApiKey")) return "apiKey";
  return "none";
}

const errorName: Record<number, string> = {
  400: "Bad request",
  404: "Not found",
  405: "Method not allowed",
  413: "Payload too large",
  415: "Unsupported media type",
};

const STORAGE_DOWN = /^SQLITE_(BUSY|LOCKED|READONLY|FULL|IOERR|CANTOPEN|CORRUPT|NOTADB|PROTOCOL)/;

/** Every error becomes a contract G2 body; nothing internal reaches the client. */
function toApiError(err: unknown, bodyLimit: number): ApiError {
  if (err instanceof ApiError) return err;
  const e = err as { code?: string; statusCode?: number; validation?: AjvError[]; message?: string };
  if (e.validation) return invalidRequest(detailsFromAjv(e.validation));
  // better-sqlite3 says this (a TypeError, no code) once the connection is closed, e.g. while stopping.
  const closed = err instanceof TypeError && e.message === "The database connection is not open";
  if (closed || (e.code !== undefined && STORAGE_DOWN.test(e.code))) {
    return serviceUnavailable("Storage is unavailable right now; nothing was stored", 5);
  }
  switch (e.code) {
    case "FST_ERR_CTP_BODY_TOO_LARGE":
      return payloadTooLarge(bodyLimit);
    case "FST_ERR_CTP_INVALID_MEDIA_TYPE":
      return unsupportedMediaType();
    case "FST_ERR_CTP_INVALID_CONTENT_LENGTH":
      return new ApiError(400, {
        error: "Bad request",
        message: "The request body does not match its Content-Length",
      });
    case "Z_DATA_ERROR":
    case "Z_BUF_ERROR":
    case "ERR_STREAM_PREMATURE_CLOSE":
      return new ApiError(400, {
        error: "Bad request",
        message: "The request body could not be decompressed as its Content-Encoding says",
      });
  }
  const status = e.statusCode ?? 500;
  if (status >= 400 && status < 500) {
    return new ApiError(status, { error: errorName[status] ?? "Bad request", message: e.message ?? "Bad request" });
  }
  return internalError();
}

export async function buildApp(options: AppOptions): Promise<FastifyInstance> {
  const now = options.now ?? Date.now;
  const bodyLimit = options.bodyLimit ?? 5 * MIB;
  const { store, jwtSecret } = options;
  const specText = readFileSync(SPEC_PATH, "utf8");
  const spec = parseYaml(specText) as Spec;
  // E1: the maximum batch is configurable; the served document keeps saying the default.
  const eventsSchema = spec.components.schemas.CreateEventsRequest?.properties?.events;
  if (eventsSchema && options.maxEvents !== undefined) eventsSchema.maxItems = options.maxEvents;

  const app = Fastify({
    logger: options.logger ?? false,
    trustProxy: options.trustProxy ?? false,
    bodyLimit,
    // One log line per request, written by the onResponse hook below.
    logController: new LogController({ disableRequestLogging: true }),
    return503OnClosing: false,
    ajv: {
      customOptions: {
        strict: true,
        allErrors: true,
        coerceTypes: false,
        removeAdditional: false,
        useDefaults: false,
        allowUnionTypes: true,
      },
      onCreate: (ajv) => {
        // G6 is more liberal than RFC 3339 (no offset needed, space separator, seconds optional).
        ajv.addFormat("date-time", { type: "string", validate: isTimestamp });
      },
    },
  });

  // Which credential each route needs, and which methods each path has (for 405), from the spec.
  const security = new Map<string, Security>();
  const methods = new Map<string, string[]>();
  for (const [path, item] of Object.entries(spec.paths)) {
    for (const [method, operation] of Object.entries(item)) {
      security.set(`${method.toUpperCase()} ${path}`, securityOf(operation));
      methods.set(path, [...(methods.get(path) ?? []), method.toUpperCase()]);
    }
  }

  const limiter = new FailureLimiter(options.authFailLimit ?? 20, options.authFailWindowMs ?? 60_000);

  async function checkApiKey(req: FastifyRequest) {
    const wait = limiter.retryAfter(req.ip, now());
    if (wait > 0) throw tooManyRequests(wait);
    const header = req.headers["x-agentmon-api-key"] ?? req.headers["x-agentops-api-key"];
    const given = typeof header === "string" ? header.trim() : "";
    const key = isApiKeyShape(given) ? await store.apiKeyByHash(hashApiKey(given)) : undefined;
    if (!key || key.revoked_at !== null) {
      limiter.fail(req.ip, now());
      throw invalidApiKey();
    }
    req.apiKey = key;
  }

  async function checkJwt(req: FastifyRequest) {
    const match = /^Bearer +([^ ]+) *$/i.exec(req.headers.authorization ?? "");
    const claims = match?.[1] ? verifyJwt(match[1], jwtSecret, Math.floor(now() / 1000)) : undefined;
    if (!claims) throw invalidJwt();
    const key = await store.apiKeyById(claims.key_id);
    if (!key || key.revoked_at !== null || key.project_id !== claims.project_id) throw invalidJwt();
    req.claims = claims;
  }

  app.addHook("onRoute", (route) => {
    const schema = route.schema as { body?: unknown } | undefined;
    // Validate every body, whatever its Content-Type says (a text/plain body gets 415, not a pass).
    const body = schema?.body as { content?: Record<string, { schema: unknown }> } | undefined;
    const json = body?.content?.["application/json"]?.schema;
    if (schema && json) schema.body = json;
    // Credentials are checked before the body is read (G3: 401 comes first).
    const kind = security.get(`${route.method} ${route.url}`);
    if (kind === "apiKey") route.onRequest = checkApiKey;
    if (kind === "jwt") route.onRequest = checkJwt;
  });

  let closing = false;
  app.addHook("preClose", async () => {
    closing = true;
  });
  app.addHook("onRequest", async () => {
    if (closing) throw serviceUnavailable("The server is shutting down; retry in a moment", 5);
  });
  app.addHook("preParsing", async (req, _reply, payload) => {
    // G3: 413 outranks 415, so a declared oversize body is refused before its type is looked at.
    if (Number(req.headers["content-length"]) > bodyLimit) throw payloadTooLarge(bodyLimit);
    return decodeBody(req.headers["content-encoding"], payload, bodyLimit);
  });
  app.addHook("onResponse", async (req, reply) => {
    req.log.info(
      { method: req.method, url: req.url, status: reply.statusCode, ms: Math.round(reply.elapsedTime * 10) / 10 },
      "request",
    );
  });
  // Only JSON bodies are read, by lib/json.ts (depth limit; __proto__ and constructor keys stay
  // data, G5: lib/records.ts copies unknown fields with Object.fromEntries and spreads, never by
  // assignment). YAML is a response type here (GET /v2/openapi.yaml); naming it keeps glue from
  // warning at start-up, and a YAML body gets the same 415 as any other non-JSON body.
  app.removeAllContentTypeParsers();
  app.addContentTypeParser("application/json", { parseAs: "string" }, (_req, body, done) => {
    try {
      done(null, parseJsonBody(body as string));
    } catch (error) {
      done(error as Error, undefined);
    }
  });
  app.addContentTypeParser("application/yaml", (_req, _payload, done) => {
    done(unsupportedMediaType(), undefined);
  });

  app.setErrorHandler((err, req, reply) => {
    const error = toApiError(err, bodyLimit);
    if (error.statusCode === 500 || error.statusCode === 503) req.log.error({ err }, "request failed");
    reply.code(error.statusCode).headers(error.headers).send(error.body);
  });
  app.setNotFoundHandler((req, reply) => {
    const path = req.url.split("?")[0] ?? "";
    const allowed = methods.get(path);
    if (allowed) {
      reply
        .code(405)
        .header("allow", allowed.join(", "))
        .send({
          error: "Method not allowed",
          message: `${req.method} is not allowed on ${path}; use ${allowed.join(", ")}`,
        });
      return;
    }
    reply.code(404).send({ error: "Not found", message: `There is no route ${req.method} ${path}` });
  });

  const deps = {
    store,
    publicUrl: () => {
      const base = options.publicUrl ?? "http://127.0.0.1:3000";
      return (typeof base === "function" ? base() : base).replace(/\/+$/, "");
    },
    specText,
    now,
    startedAt: now(),
    pressure: () => undefined,
    issueJwt: (claims: { session_id: string; project_id: string; key_id: string }) =>
      signJwt({ ...claims, iat: Math.floor(now() / 1000) }, jwtSecret),
  };
  await app.register(openapiGlue, { specification: spec, serviceHandlers: createHandlers(deps) });
  app.addHook("onClose", async () => store.close());
  return app;
}
