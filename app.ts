/**
 * Builds the agentmon HTTP app from its dependencies. openapi.yaml is the routing table:
 * fastify-openapi-glue turns each operation into a route served by handlers/<operationId>.ts,
 * ajv checks request bodies against its schemas and its response schemas serialize the replies.
 * Nothing here reads the environment (server.ts does).
 */
import type { Duplex } from "node:stream";
import AjvCompiler, { type ValidatorFactory } from "@fastify/ajv-compiler";
import { type SerializerFactory, SerializerSelector } from "@fastify/fast-json-stringify-compiler";
import underPressure from "@fastify/under-pressure";
import type { ValidateFunction } from "ajv";
import Fastify, {
  type FastifyInstance,
  type FastifyReply,
  type FastifyRequest,
  type FastifyServerOptions,
  LogController,
} from "fastify";
import openapiGlue from "fastify-openapi-glue";
import { KEY_REVOKED, type Store } from "./db/store.ts";
import {
  ApiError,
  internalError,
  invalidApiKey,
  invalidJwt,
  invalidRequest,
  payloadTooLarge,
  serviceUnavailable,
  storageFault,
  storageUnavailable,
  tooManyRequests,
  unsupportedMediaType,
} from "./handlers/errors.ts";
import { createHandlers } from "./handlers/index.ts";
import { type Claims, FailureLimiter, hashApiKey, isApiKeyShape, signJwt, verifyJwt } from "./lib/auth.ts";
import { decodeBody } from "./lib/body.ts";
import { parseJsonBody } from "./lib/json.ts";
import { checkParameters } from "./lib/parameters.ts";
import { type PriceTable, priceTable } from "./lib/prices.ts";
import { RateLimiter } from "./lib/ratelimit.ts";
import { loadSpec } from "./lib/spec.ts";
import { isTimestamp } from "./lib/timestamps.ts";
import { type AjvError, detailsFromAjv } from "./lib/validation.ts";

export { SPEC_PATH } from "./lib/spec.ts";
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
  /** O1: the whole request (headers and body) must arrive within this many ms; 0 turns it off. */
  requestTimeoutMs?: number;
  /** O1: an idle keep-alive connection is closed after this many ms. */
  keepAliveTimeoutMs?: number;
  /** O2: new requests are refused with 503 while the event loop lags more than this; 0 turns it off. */
  maxEventLoopDelayMs?: number;
  /** O3: requests per minute per API key (with the JWTs it obtained); 0 or absent turns it off. */
  rateLimit?: number;
  /** Prices llm events sent without a cost; default: prices/models.json. */
  prices?: PriceTable;
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

/** Every error becomes a contract G2 body; nothing internal reaches the client. */
function toApiError(err: unknown, bodyLimit: number): ApiError {
  if (err instanceof ApiError) return err;
  const e = err as { code?: string; statusCode?: number; validation?: AjvError[]; message?: string };
  if (e.validation) return invalidRequest(detailsFromAjv(e.validation));
  if (e.code === KEY_REVOKED) return invalidJwt();
  const fault = storageFault(err);
  if (fault) return storageUnavailable(fault);
  switch (e.code) {
    case "FST_ERR_CTP_BODY_TOO_LARGE":
      return payloadTooLarge(bodyLimit);
    case "FST_ERR_CTP_INVALID_MEDIA_TYPE":
      return unsupportedMediaType();
    case "FST_ERR_BAD_URL":
      return new ApiError(400, { error: "Bad request", message: "The URL is not valid percent-encoded UTF-8" });
    case "FST_ERR_MAX_PARAM_LENGTH":
      return new ApiError(414, {
        error: "URI too long",
        message: "A path parameter is longer than 3072 characters; ids are at most 256",
      });
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

/**
 * Errors Node's HTTP parser meets before there is a request to route (O1 timeouts, oversized or
 * broken headers) get a G2 body too; the connection is then closed.
 */
function clientError(err: NodeJS.ErrnoException, socket: Duplex) {
  if (err.code === "ECONNRESET" || socket.destroyed) return;
  const [status, reason, body] =
    err.code === "ERR_HTTP_REQUEST_TIMEOUT"
      ? [
          408,
          "Request Timeout",
          { error: "Request timeout", message: "The request did not arrive in time; send it again" },
        ]
      : err.code === "HPE_HEADER_OVERFLOW"
        ? [
            431,
            "Request Header Fields Too Large",
            { error: "Request header fields too large", message: "The request headers are over 16 KiB" },
          ]
        : [400, "Bad Request", { error: "Bad request", message: "The request is not valid HTTP/1.1" }];
  const text = JSON.stringify(body);
  if (socket.writable) {
    socket.write(
      `HTTP/1.1 ${status} ${reason}\r\nContent-Type: application/json; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(text)}\r\nConnection: close\r\n\r\n${text}`,
    );
  }
  socket.destroy();
}

type Compile<F> = (route: object) => F;
const ajvCompilers = AjvCompiler();
const serializerCompilers = SerializerSelector();

/** Fastify's own ajv compilers (same options, same formats), made lazy per route and part. */
function lazyValidators(external: unknown, options: unknown): Compile<unknown> {
  let compile: Compile<ValidateFunction> | undefined;
  return (route) => {
    let validate: ValidateFunction | undefined;
    const lazy = (data: unknown) => {
      compile ??= ajvCompilers(external as never, options as never) as Compile<ValidateFunction>;
      validate ??= compile(route);
      const valid = validate(data);
      lazy.errors = validate.errors;
      return valid;
    };
    lazy.errors = undefined as unknown;
    return lazy;
  };
}

/** Fastify's own fast-json-stringify serializers, compiled on the first reply that needs one. */
function lazySerializers(external: unknown, options: unknown): Compile<unknown> {
  let compile: Compile<(data: unknown) => string> | undefined;
  return (route) => {
    let serialize: ((data: unknown) => string) | undefined;
    return (data: unknown) => {
      compile ??= serializerCompilers(external as never, options as never) as unknown as Compile<
        (data: unknown) => string
      >;
      serialize ??= compile(route);
      return serialize(data);
    };
  };
}

/** Every media type the spec's responses use. */
function responseMediaTypes(spec: Spec): Set<string> {
  const types = new Set<string>();
  const shared = (spec.components as { responses?: Record<string, { content?: object }> }).responses ?? {};
  for (const item of Object.values(spec.paths)) {
    for (const operation of Object.values(item) as {
      responses?: Record<string, { $ref?: string; content?: object }>;
    }[]) {
      for (const response of Object.values(operation.responses ?? {})) {
        const resolved = response.$ref ? shared[response.$ref.split("/").pop() ?? ""] : response;
        for (const type of Object.keys(resolved?.content ?? {})) types.add(type);
      }
    }
  }
  return types;
}

export async function buildApp(options: AppOptions): Promise<FastifyInstance> {
  const now = options.now ?? Date.now;
  const bodyLimit = options.bodyLimit ?? 5 * MIB;
  const { store, jwtSecret } = options;
  const { text: specText, spec } = loadSpec<Spec>();
  // E1: the maximum batch is configurable; the served document keeps saying the default.
  const eventsSchema = spec.components.schemas.CreateEventsRequest?.properties?.events;
  if (eventsSchema && options.maxEvents !== undefined) eventsSchema.maxItems = options.maxEvents;

  const requestTimeout = options.requestTimeoutMs ?? 30_000;
  const app = Fastify({
    // O1: slow clients. Node checks these timeouts on its own clock (connectionsCheckingInterval),
    // so it is made as fine as the shortest timeout needs; headers get at most 10 s.
    requestTimeout,
    keepAliveTimeout: options.keepAliveTimeoutMs ?? 72_000,
    http: {
      headersTimeout: requestTimeout > 0 ? Math.min(10_000, requestTimeout) : 10_000,
      connectionsCheckingInterval: Math.max(100, Math.min(1000, requestTimeout / 10 || 1000)),
    },
    clientErrorHandler: clientError,
    // Ids may be 256 characters (L1), and percent-encoding makes one up to 12 times as long.
    routerOptions: { maxParamLength: 256 * 12 },
    // Errors of the router (a path parameter too long, bad percent-encoding) get G2 bodies too.
    frameworkErrors: (err, _req, reply) => {
      const error = toApiError(err, bodyLimit);
      (reply as FastifyReply).code(error.statusCode).headers(error.headers).send(error.body);
    },
    logger: options.logger ?? false,
    trustProxy: options.trustProxy ?? false,
    bodyLimit,
    // One log line per request, written by the onResponse hook below.
    logController: new LogController({ disableRequestLogging: true }),
    return503OnClosing: false,
    // Route schemas are compiled on first use, not at start-up: a contract-testing pipeline
    // starts the server for every job, and most jobs touch a few of the operations (B4).
    schemaController: {
      compilersFactory: {
        buildValidator: lazyValidators as unknown as ValidatorFactory,
        buildSerializer: lazySerializers as unknown as SerializerFactory,
      },
    },
    ajv: {
      customOptions: {
        strict: true,
        allErrors: true,
        coerceTypes: false,
        removeAdditional: false,
        useDefaults: false,
        allowUnionTypes: true,
        // The schemas are openapi.yaml's, checked against the meta-schemas by npm test (the
        // OpenAPI validator and Redocly); checking them again at every start cost B4 ~25 ms.
        validateSchema: false,
      },
      onCreate: (ajv) => {
        // G6 is more liberal than RFC 3339 (no offset needed, space separator, seconds optional).
        ajv.addFormat("date-time", { type: "string", validate: isTimestamp });
      },
    },
  });

  // Which credential each route needs, and which methods each path has (for 405), from the spec.
  const security = new Map<string, Security>();
  const methods = new Map<string, { pattern: RegExp; allowed: string[] }>();
  for (const [path, item] of Object.entries(spec.paths)) {
    for (const [method, operation] of Object.entries(item)) {
      security.set(`${method.toUpperCase()} ${path}`, securityOf(operation));
      const pattern = new RegExp(`^${path.replace(/\{[^}]+\}/g, "[^/]+")}$`);
      methods.set(path, { pattern, allowed: [...(methods.get(path)?.allowed ?? []), method.toUpperCase()] });
    }
  }
  /** The methods the spec has for a concrete path, templates (`/v2/sessions/{session_id}`) included. */
  const allowedOn = (path: string) => {
    const allowed = [...methods.values()].filter((m) => m.pattern.test(path)).flatMap((m) => m.allowed);
    return allowed.length > 0 ? [...new Set(allowed)] : undefined;
  };

  const limiter = new FailureLimiter(options.authFailLimit ?? 20, options.authFailWindowMs ?? 60_000);
  const rate = options.rateLimit ? new RateLimiter(options.rateLimit) : undefined;
  /** O3: one request taken from the API key's bucket. */
  function throttle(keyId: string) {
    const wait = rate?.take(keyId, now()) ?? 0;
    if (wait > 0) throw tooManyRequests(wait, "This API key is over its request rate limit");
  }

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
    throttle(key.id);
    req.apiKey = key;
  }

  /**
   * A JWT's signature and lifetime are checked here, before the body is read. Its API key is
   * checked where it cannot go stale (4.3): every JWT operation writes, and the store checks the
   * key inside the write's own transaction (KeyRevoked: 401, nothing stored); any other answer
   * checks it first (the error handler), so a revoked key's 401 still comes before all else (G3).
   */
  async function checkJwt(req: FastifyRequest) {
    const match = /^Bearer +([^ ]+) *$/i.exec(req.headers.authorization ?? "");
    const claims = match?.[1] ? verifyJwt(match[1], jwtSecret, Math.floor(now() / 1000)) : undefined;
    if (!claims) throw invalidJwt();
    req.claims = claims;
    throttle(claims.key_id);
  }

  /** False when the key a JWT was issued through is revoked or gone; true when it cannot be read. */
  async function keyIsLive(claims: Claims) {
    try {
      const key = await store.apiKeyById(claims.key_id);
      return key !== undefined && key.revoked_at === null && key.project_id === claims.project_id;
    } catch {
      return true; // the storage fault is answered instead
    }
  }

  app.addHook("onRoute", (route) => {
    const schema = route.schema as { body?: unknown } | undefined;
    // Validate every body, whatever its Content-Type says (a text/plain body gets 415, not a pass).
    const body = schema?.body as { content?: Record<string, { schema: unknown }> } | undefined;
    const json = body?.content?.["application/json"]?.schema;
    if (schema && json) schema.body = json;
    // Credentials are checked before the body is read (G3: 401 comes first).
    // Routes say `/v2/sessions/:session_id` where the spec says `{session_id}`, and Fastify adds a
    // HEAD route for every GET: both need the GET's credential.
    const method = route.method === "HEAD" ? "GET" : route.method;
    const kind = security.get(`${method} ${route.url.replace(/:(\w+)/g, "{$1}")}`);
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
  // O2: while the event loop lags, new work is refused at once instead of queueing without
  // bound. Liveness is never refused; readiness answers its own 503 (getReadiness).
  const maxEventLoopDelay = options.maxEventLoopDelayMs ?? 1000;
  await app.register(underPressure, {
    maxEventLoopDelay,
    // A rejection goes to the error handler like any other error; resolving lets the request on.
    // The lag is Infinity when no sample was taken in the last interval: that happens once, while
    // the app compiles its routes at start-up, and is not overload.
    pressureHandler: async (req, _reply, _type, value) => {
      if (req.routeOptions.url === "/healthz" || req.routeOptions.url === "/readyz") return;
      if (!Number.isFinite(value)) return;
      throw overloaded(Number(value));
    },
  });
  const lagging = (lagMs: number) => `overloaded (event loop lag ${Math.round(lagMs)} ms)`;
  const overloaded = (lagMs: number) => serviceUnavailable(`The server is ${lagging(lagMs)}; retry after 2 seconds`, 2);
  const pressure = () => {
    if (maxEventLoopDelay <= 0) return undefined;
    const lag = app.memoryUsage().eventLoopDelay;
    return lag > maxEventLoopDelay && Number.isFinite(lag) ? `the server is ${lagging(lag)}` : undefined;
  };

  // Query and path parameters: normalised and checked against the spec (lib/parameters.ts).
  app.addHook("preValidation", checkParameters);
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
  // assignment). The other media types of the spec are response types (YAML, the web UI's HTML,
  // JS, CSS, SVG); naming them keeps glue from warning at start-up, and a body of one of them
  // gets the same 415 as any other non-JSON body.
  app.removeAllContentTypeParsers();
  app.addContentTypeParser("application/json", { parseAs: "string" }, (_req, body, done) => {
    try {
      done(null, parseJsonBody(body as string));
    } catch (error) {
      done(error as Error, undefined);
    }
  });
  for (const type of responseMediaTypes(spec)) {
    if (type === "application/json") continue;
    app.addContentTypeParser(type, (_req, _payload, done) => {
      done(unsupportedMediaType(), undefined);
    });
  }

  app.setErrorHandler(async (err, req, reply) => {
    let error = toApiError(err, bodyLimit);
    if (req.claims && error.statusCode !== 401 && error.statusCode < 500 && !(await keyIsLive(req.claims))) {
      error = invalidJwt();
    }
    if (error.statusCode === 500 || error.statusCode === 503) req.log.error({ err }, "request failed");
    reply.code(error.statusCode).headers(error.headers).send(error.body);
  });
  app.setNotFoundHandler((req, reply) => {
    const path = req.url.split("?")[0] ?? "";
    const allowed = allowedOn(path);
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
    pressure,
    prices: options.prices ?? priceTable(),
    issueJwt: (claims: { session_id: string; project_id: string; key_id: string }) =>
      signJwt({ ...claims, iat: Math.floor(now() / 1000) }, jwtSecret),
  };
  await app.register(openapiGlue, { specification: spec, serviceHandlers: createHandlers(deps) });
  app.addHook("onClose", async () => store.close());
  return app;
}
