/**
 * Builds the agentmon HTTP app from its dependencies, by composing the http/ plugins. openapi.yaml
 * is the routing table: fastify-openapi-glue turns each operation into a route served by
 * handlers/<operationId>.ts, ajv checks requests against its schemas and its response schemas
 * serialize the replies. Nothing here reads the environment (server.ts does) or decides a rule.
 */
import Fastify, { type FastifyInstance, type FastifyServerOptions, LogController } from "fastify";
import openapiGlue from "fastify-openapi-glue";
import type { Store } from "./db/store.ts";
import { newSecret } from "./domain/keys.ts";
import { type PriceTable, priceTable } from "./domain/prices.ts";
import { createHandlers } from "./handlers/index.ts";
import { credentials } from "./http/auth.ts";
import { bodies } from "./http/body.ts";
import { docs } from "./http/docs.ts";
import { clientErrors, errorAnswers, hostRequired, sendError, toApiError } from "./http/errors.ts";
import { holdWhileHandling } from "./http/inflight.ts";
import { backpressure, timeouts } from "./http/limits.ts";
import { lingerBound, lingeringClose } from "./http/linger.ts";
import { requestMetrics } from "./http/metrics.ts";
import { otlpRoutes } from "./http/otlp.ts";
import { normaliseQuery } from "./http/parameters.ts";
import { browserSessions } from "./http/people.ts";
import { memoryLimits, type RequestLimits } from "./http/ratelimit.ts";
import { routesOf, type Spec } from "./http/routes.ts";
import { schemaOptions, validateEveryBody } from "./http/schemas.ts";
import { refusingDeps, scopedHandlers } from "./http/scopes.ts";
import { loadSpec } from "./lib/spec.ts";
import { DEFAULT_INFLIGHT_BYTES, InflightBytes } from "./services/inflight.ts";
import { type Mailer, noMailer, type SmtpSettings, smtpMailer } from "./services/mail.ts";
import { Metrics } from "./services/metrics.ts";
import { Oidc, type OidcProvider } from "./services/oidc.ts";

export { SPEC_PATH } from "./lib/spec.ts";
export const MIB = 1024 * 1024;

/** The document the app is built from and serves (lib/spec.ts loadSpec). */
export type LoadedSpec = { text: string; spec: Spec };
/** Loads it, for a start that has time to spare before buildApp (cli/serve.ts). */
export const loadAppSpec = (): LoadedSpec => loadSpec<Spec>();

export interface AppOptions {
  store: Store;
  /** openapi.yaml as loadAppSpec answers it, loaded ahead; one app's own (it keeps it); by default loaded here. */
  spec?: LoadedSpec;
  /** HS256 signing secret for JWTs. */
  jwtSecret: string;
  /** Base of session_url; a function when it is known only once the server listens (PORT=0). */
  publicUrl?: string | (() => string);
  /** Body limit in bytes, after decompression (L1). */
  bodyLimit?: number;
  /** Body limit of the OTLP endpoints, before and after decompression (otlp.md T2); default 16 MiB. */
  otlpBodyLimit?: number;
  /**
   * The ceiling on memory: bytes of request bodies read or held in flight, past which new bodies
   * get 503 (docs/decisions/019-inflight-memory.md); default DEFAULT_INFLIGHT_BYTES.
   */
  inflightBytes?: number;
  /** Most events in one create_events call (E1). */
  maxEvents?: number;
  /** Failed API-key checks allowed per address and window (4.6). */
  authFailLimit?: number;
  authFailWindowMs?: number;
  /** Which proxies to believe about the client address (X-Forwarded-For), as Fastify's `trustProxy`. */
  trustProxy?: boolean | string;
  /** O1: the whole request must arrive within this many ms (0: off); idle keep-alive connections close after. */
  requestTimeoutMs?: number;
  keepAliveTimeoutMs?: number;
  /** O2: new requests are refused with 503 while the event loop lags more than this; 0 turns it off. */
  maxEventLoopDelayMs?: number;
  /** O3: requests per minute per API key (with the JWTs it obtained); 0 or absent turns it off. */
  rateLimit?: number;
  /**
   * Where 4.6 and O3 are counted: http/ratelimit-shared.ts keeps them in PostgreSQL or Redis, for
   * several nodes. The app closes them with itself. Default: in this process, with the numbers above.
   */
  limits?: RequestLimits;
  /**
   * People (docs/decisions/035-people.md): the secret that signs the browser-session and CSRF
   * cookies (default: one kept in the database, made at first start), how many hours a session
   * lives (default 168), and the sign-in throttle: failed sign-ins allowed per account and per
   * address within the window (default 10 in 15 minutes), counted in `loginLimits` when given
   * (http/ratelimit-shared.ts: shared by every node; the app closes it), else in this process.
   */
  cookieSecret?: string;
  sessionHours?: number;
  loginFailLimit?: number;
  loginFailWindowMs?: number;
  loginLimits?: RequestLimits;
  /** Single sign-on (AGENTMON_OIDC): the identity providers; SSO only refuses passwords. */
  oidcProviders?: OidcProvider[];
  ssoOnly?: boolean;
  /**
   * AGENTMON_SMTP_URL and AGENTMON_SMTP_FROM: invitations and reset links are also mailed
   * (services/mail.ts); unset: they are only answered.
   */
  mail?: { smtp: SmtpSettings; from: string };
  /** Prices llm events sent without a cost; default: prices/models.json. */
  prices?: PriceTable;
  /** What GET /metrics shows; by default the app's own, over `store`'s figures. */
  metrics?: Metrics;
  /** The bearer token of GET /metrics on the main port; without one it answers 404. */
  metricsToken?: string | undefined;
  logger?: FastifyServerOptions["logger"];
  /** The clock, in milliseconds since the epoch. */
  now?: () => number;
}

export async function buildApp(options: AppOptions): Promise<FastifyInstance> {
  const { store, now = Date.now, bodyLimit = 5 * MIB } = options;
  const metrics = options.metrics ?? new Metrics(() => store.stats());
  const inflight = new InflightBytes(options.inflightBytes ?? DEFAULT_INFLIGHT_BYTES);
  metrics.observeInflight(inflight);
  const { text: specText, spec: served } = options.spec ?? loadAppSpec();
  // E1: the maximum batch is configurable; the served document (L3, and /docs) keeps saying the
  // default. Copied only when it differs: the document as loaded has its routes parsed already
  // (lib/spec.ts), a copy is parsed again.
  const maxItems = served.components.schemas.CreateEventsRequest?.properties?.events?.maxItems;
  const spec = options.maxEvents === undefined || options.maxEvents === maxItems ? served : structuredClone(served);
  const eventsSchema = spec.components.schemas.CreateEventsRequest?.properties?.events;
  if (eventsSchema && options.maxEvents !== undefined) eventsSchema.maxItems = options.maxEvents;
  const routes = routesOf(spec);
  const otlpBodyLimit = options.otlpBodyLimit ?? 16 * MIB;
  // A connection closed after an answer is read and dropped within this (http/linger.ts).
  const linger = lingerBound([bodyLimit, otlpBodyLimit], options.requestTimeoutMs);

  const app = Fastify({
    ...timeouts(options.requestTimeoutMs, options.keepAliveTimeoutMs),
    ...schemaOptions,
    clientErrorHandler: clientErrors(linger),
    // Ids may be 256 characters (L1), and percent-encoding makes one up to 12 times as long.
    routerOptions: { maxParamLength: 256 * 12 },
    frameworkErrors: (err, _req, reply) => sendError(reply, toApiError(err, bodyLimit)),
    logger: options.logger ?? false,
    trustProxy: options.trustProxy ?? false,
    bodyLimit,
    logController: new LogController({ disableRequestLogging: true }), // http/limits.ts logs each request
    return503OnClosing: false,
  });

  hostRequired(app); // the first hook: a request without Host is refused before all else
  lingeringClose(app, linger);
  validateEveryBody(app);
  const credentialChecks = await credentials(app, { ...options, now, routes });
  const cookieSecret = options.cookieSecret ?? (await store.metaValue("cookie_secret", newSecret()));
  const sessions = await browserSessions(app, { store, routes, now, cookieSecret });
  const loginLimits =
    options.loginLimits ??
    memoryLimits(
      {
        failureLimit: options.loginFailLimit ?? 10,
        failureWindowMs: options.loginFailWindowMs ?? 900_000,
        ratePerMinute: 0,
      },
      now,
    );
  app.addHook("onClose", async () => loginLimits.close());
  const pressure = await backpressure(app, options.maxEventLoopDelayMs);
  requestMetrics(app, { metrics, token: options.metricsToken, routes });
  app.addHook("preValidation", normaliseQuery);
  otlpRoutes(app, otlpBodyLimit);
  bodies(app, { bodyLimit, responseMediaTypes: routes.responseMediaTypes, inflight });
  holdWhileHandling(app);
  errorAnswers(app, { bodyLimit, routes, review: credentialChecks.review });

  const base = options.publicUrl ?? "http://127.0.0.1:3000";
  const publicUrl = () => (typeof base === "function" ? base() : base).replace(/\/+$/, "");
  const mailer: Mailer = options.mail ? smtpMailer(options.mail.smtp, options.mail.from, publicUrl) : noMailer;
  const deps = {
    store,
    now,
    prices: options.prices ?? priceTable(),
    publicUrl,
    issueJwt: credentialChecks.issueJwt,
    issueOtlpToken: credentialChecks.issueOtlpToken,
    specText,
    startedAt: now(),
    pressure,
    counts: metrics,
    metrics,
    people: {
      ...sessions,
      limits: loginLimits,
      sessionHours: options.sessionHours ?? 168,
      oidc: new Oidc(options.oidcProviders ?? []),
      ssoOnly: options.ssoOnly ?? false,
      mailer,
    },
  };
  // 4.7: an operation's handler runs only for a credential with its scope (http/scopes.ts).
  const handlers = scopedHandlers(createHandlers(deps), createHandlers(refusingDeps(deps)), routes);
  await app.register(openapiGlue, { specification: spec, serviceHandlers: handlers });
  await docs(app, served as unknown as Record<string, unknown>);
  app.addHook("onClose", async () => store.close());
  return app;
}
