/** `agentmon serve`: opens storage, builds the app, listens, and stops cleanly on a signal. */
import { setFlagsFromString } from "node:v8";
import type { FastifyInstance } from "fastify";
import { Conflict } from "../db/errors.ts";
import type { Store } from "../db/store.ts";
import { hashApiKey, newSecret } from "../domain/keys.ts";
import { importedEntries, priceTable, shippedPrices } from "../domain/prices.ts";
import type { GrpcListener } from "../http/grpc.ts";
import { type MetricsListener, metricsListener } from "../http/metrics.ts";
import type { RequestLimits } from "../http/ratelimit.ts";
import { Metrics } from "../services/metrics.ts";
import { ownerLinkIfNoOne } from "../services/people.ts";
import { startSweeper } from "../services/retention.ts";
import { type Config, ConfigError, DEFAULT_PROJECT, type Output } from "./config.ts";
import { createKey } from "./keys.ts";
import { chooseLimits } from "./limits.ts";
import { databaseName, openServerStore } from "./storage.ts";
import type { StartedThread } from "./storage-thread.ts";

/**
 * Makes sure the key given by AGENTMON_API_KEY exists, in the default project. Several nodes
 * started at once with the same key on one database may all find it missing: the first one's
 * insert wins, and the others, refused by the unique key (Conflict), check the key it made.
 */
async function ensureConfiguredKey(store: Store, key: string): Promise<void> {
  let existing = await store.apiKeyByHash(hashApiKey(key));
  if (!existing) {
    try {
      await createKey(store, DEFAULT_PROJECT, key);
      return;
    } catch (error) {
      if (!(error instanceof Conflict)) throw error;
      existing = await store.apiKeyByHash(hashApiKey(key));
      if (!existing) throw error;
    }
  }
  if (existing.revoked_at !== null) throw new ConfigError("AGENTMON_API_KEY names a key that was revoked");
  if (existing.project_name !== DEFAULT_PROJECT) {
    throw new ConfigError(`AGENTMON_API_KEY belongs to project "${existing.project_name}", not "${DEFAULT_PROJECT}"`);
  }
}

/** The app's settings, from the command line's. */
const appOptions = (config: Config) => ({
  bodyLimit: config.bodyLimit,
  otlpBodyLimit: config.otlpBodyLimit,
  inflightBytes: config.inflightBytes,
  maxEvents: config.maxEvents,
  authFailLimit: config.authFailLimit,
  authFailWindowMs: config.authFailWindowSeconds * 1000,
  trustProxy: config.trustProxy,
  requestTimeoutMs: config.requestTimeoutSeconds * 1000,
  keepAliveTimeoutMs: config.keepAliveTimeoutSeconds * 1000,
  maxEventLoopDelayMs: config.maxEventLoopDelayMs,
  rateLimit: config.rateLimit,
  metricsToken: config.metricsToken,
  sessionHours: config.sessionHours,
  ssoOnly: config.ssoOnly,
  ...(config.oidcProviders === undefined ? {} : { oidcProviders: config.oidcProviders }),
  ...(config.smtp === undefined || config.smtpFrom === undefined
    ? {}
    : { mail: { smtp: config.smtp, from: config.smtpFrom } }),
  logger: { level: config.logLevel },
});

/**
 * Stops once (a signal, or the storage thread's death): requests in flight are answered, then the
 * process exits. `drainFirst` (the OTLP/gRPC port's drain) runs before the app closes, since its
 * calls go through the app.
 */
function stopper(app: FastifyInstance, io: Output, drainFirst: () => Promise<void>) {
  let stopping = false;
  return (signal: string, code = 0) => {
    if (stopping) return;
    stopping = true;
    app.log.info({ signal }, "shutting down: finishing requests in flight");
    drainFirst()
      .then(() => app.close())
      .then(
        () => process.exit(code),
        (error: unknown) => {
          io.err(`agentmon: error while shutting down: ${(error as Error).message}`);
          process.exit(1);
        },
      );
  };
}

/**
 * Connections the kernel keeps waiting for the server to accept them (capped by
 * net.core.somaxconn, 4096 on current Linux). Node's default is 511: while the event loop is busy
 * with large bodies, a burst of more clients than that (issue 27: 1000 uploads at once) overflows
 * the accept queue, and a client whose handshake the kernel dropped there is reset when it sends,
 * never reading the answer the server would have given it.
 */
const LISTEN_BACKLOG = 4096;

export async function serve(config: Config, io: Output, started?: StartedThread): Promise<number> {
  // A storage thread that stopped on its own leaves a server that can only answer 503: it exits
  // (status 1, once the requests in flight are answered) so that its supervisor restarts it.
  let storageFailed = (_error: Error) => {};
  // The app's modules (Fastify, ajv, the handlers: most of what a start loads) are loaded while
  // the storage thread opens the database, on the other core, rather than before it starts
  // (B4, docs/decisions/034-cold-start.md). A start that fails before it needs them ignores them.
  const appModule = import("../app.ts");
  appModule.catch(() => undefined);
  const opening = openServerStore(config, (error) => storageFailed(error), started);
  // While the storage thread starts and opens the database (B4, decision 039), the start's work
  // that needs no database: openapi.yaml's parsed document, and the shipped price table.
  const ahead = appModule.then(({ loadAppSpec }) => {
    shippedPrices();
    return loadAppSpec();
  });
  ahead.catch(() => undefined);
  const { store, pool } = await opening;
  if (config.jwtSecret !== undefined && config.jwtSecret.length < 32) {
    io.err("agentmon: warning: AGENTMON_JWT_SECRET is shorter than 32 characters; use a longer random secret");
  }
  let jwtSecret: string;
  let firstKey: string | undefined;
  let prices: ReturnType<typeof priceTable>;
  let limits: RequestLimits | undefined;
  let loginLimits: RequestLimits | undefined;
  try {
    limits = await chooseLimits(config, io, pool); // 4.6 and O3: in Redis, PostgreSQL or this process
    loginLimits = await chooseLimits(config, io, pool, true); // sign-in throttling, in the same place
    // The layers the store re-prices updates with, in the same order (docs/decisions/015-prices.md).
    const imported = await store.importedPrices();
    try {
      prices = priceTable(config.prices ?? [], shippedPrices(), importedEntries(imported));
    } catch (error) {
      throw new ConfigError((error as Error).message);
    }
    jwtSecret = config.jwtSecret ?? (await store.metaValue("jwt_secret", newSecret()));
    if (config.apiKey !== undefined) await ensureConfiguredKey(store, config.apiKey);
    else if ((await store.listApiKeys()).length === 0) firstKey = (await createKey(store, DEFAULT_PROJECT)).key;
  } catch (error) {
    await limits?.close();
    await loginLimits?.close();
    await store.close(); // the app owns the store only once it is built
    throw error;
  }

  let base = config.publicUrl;
  // One set of metrics, served by the app (with the token) and by the metrics port (without).
  const metrics = new Metrics(() => store.stats());
  const { buildApp } = await appModule;
  const app = await buildApp({
    ...appOptions(config),
    spec: await ahead,
    prices,
    store,
    jwtSecret,
    metrics,
    limits,
    loginLimits,
    ...(config.cookieSecret === undefined ? {} : { cookieSecret: config.cookieSecret }),
    publicUrl: () => base ?? "",
  });
  let metricsPort: MetricsListener | undefined;
  app.addHook("onClose", async () => metricsPort?.close());
  // The OTLP/gRPC port drains before the app closes (stopper); this only ends what is left of it
  // when the app closes some other way (a failed start).
  let grpcPort: GrpcListener | undefined;
  app.addHook("onClose", async () => grpcPort?.close(0));
  // Retention (docs/decisions/020-retention.md): shortly after start, then every interval; it
  // stops (after its current batch) before the store closes.
  const sweeper = startSweeper({
    store,
    defaultDays: config.retentionDays,
    metrics,
    intervalMs: config.retentionIntervalSeconds * 1000,
    firstDelayMs: Math.min(30_000, config.retentionIntervalSeconds * 1000),
    onSwept: (removed, ms) => app.log.info({ ...removed, ms: Math.round(ms) }, "retention: removed idle sessions"),
    onError: (error) => app.log.warn({ err: error }, "retention: the sweep failed; the next one tries again"),
  });
  app.addHook("preClose", async () => sweeper.stop());
  // One write, so that nothing else written to stdout (the logger's lines) can come between
  // "It is shown only now:" and the key. A CI run once missed the key after that line; the
  // cause is not proven, but a reader of the log must find the key where the line says.
  const showFirstKey = (where: string | undefined) => {
    if (firstKey === undefined) return;
    const lines = [
      `agentmon: created the first API key, for project "${DEFAULT_PROJECT}". It is shown only now:`,
      `  ${firstKey}`,
    ];
    if (where !== undefined) {
      lines.push(
        `  try: curl -s ${where}/v2/create_session -H 'X-Agentmon-Api-Key: ${firstKey}' -H 'Content-Type: application/json' -d '{"session":{"id":"hello"}}'`,
      );
    }
    io.out(lines.join("\n"));
  };
  let address: string;
  try {
    address = await app.listen({ port: config.port, host: config.host, backlog: LISTEN_BACKLOG });
  } catch (error) {
    showFirstKey(undefined); // the key exists now: do not lose it because the port was taken
    await app.close();
    throw error;
  }
  if (config.metricsPort !== undefined) {
    try {
      metricsPort = await metricsListener(metrics, config.host, config.metricsPort);
    } catch (error) {
      showFirstKey(undefined);
      await app.close();
      throw new ConfigError(`AGENTMON_METRICS_PORT: ${(error as Error).message}; choose another port`);
    }
  }
  if (config.otlpGrpcPort !== undefined) {
    try {
      // Loaded only now: a server without the port does not load @grpc/grpc-js at all.
      const { otlpGrpcListener } = await import("../http/grpc.ts");
      grpcPort = await otlpGrpcListener(app, {
        host: config.host,
        port: config.otlpGrpcPort,
        bodyLimit: config.otlpBodyLimit,
      });
    } catch (error) {
      showFirstKey(undefined);
      await app.close();
      throw new ConfigError(`AGENTMON_OTLP_GRPC_PORT: ${(error as Error).message}; choose another port`);
    }
  }
  // The listen address, with the real port when PORT=0; a wildcard host is no address to visit.
  base ??= address.replace(/\/\/(\[::\]|0\.0\.0\.0)(?=:)/, "//localhost");
  showFirstKey(base);
  // Issue 26: while nobody has an account, each start prints a one-time link that makes the
  // owner's (a lost one is replaced by restarting; each works once, for 7 days).
  const ownerLink = await ownerLinkIfNoOne({ store, now: Date.now, publicUrl: () => base ?? "" });
  if (ownerLink) {
    io.out(
      `agentmon: nobody has an account yet. This one-time link makes the owner's (until ${ownerLink.expires_at}):\n  ${ownerLink.link}`,
    );
  }
  if (firstKey === undefined && config.apiKey === undefined) {
    io.out("agentmon: API keys: `agentmon keys create` makes a new one, `agentmon keys list` shows them");
  }
  if (metricsPort) io.out(`agentmon: metrics on ${metricsPort.url} (no credential: keep this port private)`);
  if (grpcPort) io.out(`agentmon: OTLP/gRPC on ${grpcPort.url}`);
  io.out(`agentmon: listening on ${address} (database ${databaseName(config)})`);
  // Memory (issue 3, B5): V8 lets the old generation grow by half again before each full
  // collection; a server holding ~10 MB of live objects then sits at 50-60 MB of heap. Growing by
  // a fifth keeps the resident size near what is live, at no throughput cost measured. Read
  // whenever the heap's limit is recomputed, so set now it takes effect from the next collection
  // on; set before the start, it made V8 refuse Node's cached code of its own modules on both
  // threads, about 100 ms of B4 (docs/decisions/039-no-v8-flags-at-start.md).
  setFlagsFromString("--heap-growing-percent=20");

  // A gRPC call in flight gets as long to finish as an HTTP request may take (O1), 30 s if that is off.
  const drainMs = config.requestTimeoutSeconds * 1000 || 30_000;
  const stop = stopper(app, io, async () => grpcPort?.close(drainMs));
  storageFailed = (error) => {
    io.err(`agentmon: ${error.message}; exiting so that a supervisor can restart it`);
    stop("storage thread", 1);
  };
  process.once("SIGTERM", () => stop("SIGTERM"));
  process.once("SIGINT", () => stop("SIGINT"));
  return 0;
}
