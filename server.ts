/**
 * The `agentmon` command: `serve`, and `keys create|list|revoke`. This is the only module that
 * reads the environment and the command line; everything else gets its settings passed in.
 */
import { parseArgs } from "node:util";
import { buildApp, MIB } from "./app.ts";
import { openDb, SYNCHRONOUS, type Synchronous } from "./db/sqlite/open.ts";
import { sqliteStore } from "./db/sqlite/store.ts";
import { openThreadedStore } from "./db/sqlite/thread.ts";
import type { Store } from "./db/store.ts";
import { hashApiKey, isApiKeyShape, keyPrefix, newSecret } from "./domain/keys.ts";
import { type PriceEntry, priceTable, readPrices } from "./domain/prices.ts";
import type { ApiKeyRecord } from "./domain/types.ts";

export const DEFAULT_PROJECT = "default";

export interface Config {
  port: number;
  host: string;
  db: string;
  apiKey: string | undefined;
  publicUrl: string | undefined;
  jwtSecret: string | undefined;
  bodyLimit: number;
  maxEvents: number;
  authFailLimit: number;
  authFailWindowSeconds: number;
  trustProxy: boolean | string;
  requestTimeoutSeconds: number;
  keepAliveTimeoutSeconds: number;
  maxEventLoopDelayMs: number;
  rateLimit: number;
  /** Price entries that override or extend prices/models.json. */
  prices: PriceEntry[] | undefined;
  logLevel: string;
  /** How hard a commit is pushed to the disk: `normal` survives a process crash, `full` also an OS crash (G7). */
  synchronous: Synchronous;
}

/** A configuration mistake: reported as one line, never a stack trace. */
export class ConfigError extends Error {}

/** Every setting: its environment variable, its `serve` flag, its default and how it is read. */
const SETTINGS = {
  port: { env: "PORT", flag: "port", fallback: "3000", read: (v: string) => integer(v, "PORT", 0, 65535) },
  host: { env: "HOST", flag: "host", fallback: "127.0.0.1", read: (v: string) => v },
  db: { env: "AGENTMON_DB", flag: "db", fallback: "./data/agentmon.db", read: (v: string) => v },
  apiKey: { env: "AGENTMON_API_KEY", flag: "api-key", fallback: undefined, read: readApiKey },
  publicUrl: { env: "AGENTMON_PUBLIC_URL", flag: "public-url", fallback: undefined, read: readUrl },
  jwtSecret: { env: "AGENTMON_JWT_SECRET", flag: "jwt-secret", fallback: undefined, read: (v: string) => v },
  bodyLimit: { env: "AGENTMON_BODY_LIMIT", flag: "body-limit", fallback: "5MiB", read: readSize },
  maxEvents: {
    env: "AGENTMON_MAX_EVENTS",
    flag: "max-events",
    fallback: "1000",
    read: (v: string) => integer(v, "AGENTMON_MAX_EVENTS", 1, 1_000_000),
  },
  authFailLimit: {
    env: "AGENTMON_AUTH_FAIL_LIMIT",
    flag: "auth-fail-limit",
    fallback: "20",
    read: (v: string) => integer(v, "AGENTMON_AUTH_FAIL_LIMIT", 1, 1_000_000),
  },
  authFailWindowSeconds: {
    env: "AGENTMON_AUTH_FAIL_WINDOW",
    flag: "auth-fail-window",
    fallback: "60",
    read: (v: string) => integer(v, "AGENTMON_AUTH_FAIL_WINDOW", 1, 86_400),
  },
  trustProxy: { env: "AGENTMON_TRUST_PROXY", flag: "trust-proxy", fallback: "false", read: readTrustProxy },
  requestTimeoutSeconds: {
    env: "AGENTMON_REQUEST_TIMEOUT",
    flag: "request-timeout",
    fallback: "30",
    read: (v: string) => integer(v, "AGENTMON_REQUEST_TIMEOUT", 0, 3600),
  },
  keepAliveTimeoutSeconds: {
    env: "AGENTMON_KEEPALIVE_TIMEOUT",
    flag: "keepalive-timeout",
    fallback: "72",
    read: (v: string) => integer(v, "AGENTMON_KEEPALIVE_TIMEOUT", 1, 3600),
  },
  maxEventLoopDelayMs: {
    env: "AGENTMON_MAX_EVENT_LOOP_DELAY",
    flag: "max-event-loop-delay",
    fallback: "1000",
    read: (v: string) => integer(v, "AGENTMON_MAX_EVENT_LOOP_DELAY", 0, 600_000),
  },
  rateLimit: {
    env: "AGENTMON_RATE_LIMIT",
    flag: "rate-limit",
    fallback: "0",
    read: (v: string) => integer(v, "AGENTMON_RATE_LIMIT", 0, 100_000_000),
  },
  prices: { env: "AGENTMON_PRICES", flag: "prices", fallback: undefined, read: readPriceFile },
  logLevel: { env: "AGENTMON_LOG_LEVEL", flag: "log-level", fallback: "info", read: readLogLevel },
  synchronous: { env: "AGENTMON_SYNCHRONOUS", flag: "synchronous", fallback: "normal", read: readSynchronous },
} as const;

function integer(value: string, name: string, min: number, max: number): number {
  const n = Number(value);
  if (!/^\d+$/.test(value.trim()) || n < min || n > max) {
    throw new ConfigError(`${name} must be a whole number from ${min} to ${max} (got "${value}")`);
  }
  return n;
}

function readApiKey(value: string): string {
  if (!isApiKeyShape(value.trim())) throw new ConfigError(`AGENTMON_API_KEY must be a UUID (got "${value}")`);
  return value.trim().toLowerCase();
}

function readUrl(value: string): string {
  try {
    const url = new URL(value);
    if (url.protocol !== "http:" && url.protocol !== "https:") throw new Error();
    return value.replace(/\/+$/, "");
  } catch {
    throw new ConfigError(`AGENTMON_PUBLIC_URL must be an http(s) URL (got "${value}")`);
  }
}

const UNITS: Record<string, number> = { "": 1, b: 1, k: 1024, kb: 1000, kib: 1024, m: MIB, mb: 1e6, mib: MIB };

export function readSize(value: string): number {
  const m = /^\s*(\d+(?:\.\d+)?)\s*([a-z]*)\s*$/i.exec(value);
  const unit = m ? UNITS[(m[2] ?? "").toLowerCase()] : undefined;
  if (!m || unit === undefined || Number(m[1]) * unit < 1024) {
    throw new ConfigError(
      `AGENTMON_BODY_LIMIT must be a size such as 5MiB, 512KiB or 1048576, at least 1KiB (got "${value}")`,
    );
  }
  return Math.floor(Number(m[1]) * unit);
}

/** false, true, or a comma-separated list of proxy addresses/CIDRs. */
function readTrustProxy(value: string): boolean | string {
  const v = value.trim().toLowerCase();
  if (v === "false") return false;
  if (v === "true") return true;
  if (/^[0-9a-f.:/]+(\s*,\s*[0-9a-f.:/]+)*$/.test(v)) return v.replace(/\s+/g, "");
  throw new ConfigError(
    `AGENTMON_TRUST_PROXY must be true, false, or proxy addresses such as 10.0.0.1,10.1.0.0/16 (got "${value}")`,
  );
}

/** A JSON price table, read and checked now, so that a mistake in it stops the start. */
function readPriceFile(path: string): PriceEntry[] {
  try {
    return readPrices(path);
  } catch (error) {
    throw new ConfigError(`AGENTMON_PRICES: ${(error as Error).message}`);
  }
}

const LOG_LEVELS = ["fatal", "error", "warn", "info", "debug", "trace", "silent"];
function readLogLevel(value: string): string {
  if (!LOG_LEVELS.includes(value)) {
    throw new ConfigError(`AGENTMON_LOG_LEVEL must be one of ${LOG_LEVELS.join(", ")} (got "${value}")`);
  }
  return value;
}

function readSynchronous(value: string): Synchronous {
  const v = value.trim().toLowerCase();
  if (!(SYNCHRONOUS as readonly string[]).includes(v)) {
    throw new ConfigError(`AGENTMON_SYNCHRONOUS must be one of ${SYNCHRONOUS.join(", ")} (got "${value}")`);
  }
  return v as Synchronous;
}

/** Settings from flags, then the environment, then the defaults. */
export function loadConfig(env: NodeJS.ProcessEnv, flags: Record<string, string | undefined>): Config {
  const config: Record<string, unknown> = {};
  for (const [name, setting] of Object.entries(SETTINGS)) {
    const raw = flags[setting.flag] ?? env[setting.env] ?? setting.fallback;
    config[name] = raw === undefined || raw === "" ? undefined : setting.read(raw);
  }
  return config as unknown as Config;
}

const USAGE = `Usage:
  agentmon serve [--port N] [--host H] [--db PATH] [--api-key UUID] [--public-url URL]
                 [--jwt-secret S] [--body-limit SIZE] [--max-events N] [--log-level L]
                 [--auth-fail-limit N] [--auth-fail-window SECONDS] [--trust-proxy T]
                 [--request-timeout SECONDS] [--keepalive-timeout SECONDS]
                 [--max-event-loop-delay MS] [--rate-limit PER_MINUTE] [--prices FILE]
                 [--synchronous normal|full]
  agentmon keys create [--project NAME]   create an API key; it is printed once
  agentmon keys list                      list keys (prefixes only)
  agentmon keys revoke <key-or-prefix>    revoke a key at once

Each serve flag has an environment variable: PORT, HOST, AGENTMON_DB, AGENTMON_API_KEY,
AGENTMON_PUBLIC_URL, AGENTMON_JWT_SECRET, AGENTMON_BODY_LIMIT, AGENTMON_MAX_EVENTS,
AGENTMON_LOG_LEVEL, AGENTMON_AUTH_FAIL_LIMIT, AGENTMON_AUTH_FAIL_WINDOW, AGENTMON_TRUST_PROXY,
AGENTMON_REQUEST_TIMEOUT, AGENTMON_KEEPALIVE_TIMEOUT, AGENTMON_MAX_EVENT_LOOP_DELAY,
AGENTMON_RATE_LIMIT, AGENTMON_PRICES, AGENTMON_SYNCHRONOUS.`;

const FLAG_OPTIONS = Object.fromEntries(
  [...Object.values(SETTINGS).map((s) => s.flag), "project"].map((flag) => [flag, { type: "string" as const }]),
);

interface Output {
  out(line: string): void;
  err(line: string): void;
}

const console_: Output = {
  out: (line) => process.stdout.write(`${line}\n`),
  err: (line) => process.stderr.write(`${line}\n`),
};

/**
 * The server's store: a file database on its own thread (db/thread.ts), `:memory:` in this one
 * (it cannot be shared between threads, and a test pipeline's start stays fast).
 */
async function openServerStore(config: Config, onFailure: (error: Error) => void): Promise<Store> {
  try {
    if (config.db === ":memory:" || config.db === "") {
      return sqliteStore(openDb(config.db, { synchronous: config.synchronous }), {
        prices: priceTable(config.prices ?? []),
      });
    }
    return await openThreadedStore({
      path: config.db,
      synchronous: config.synchronous,
      prices: config.prices ?? [],
      onFailure,
    });
  } catch (error) {
    throw new ConfigError(`cannot open the database ${config.db}: ${(error as Error).message}`);
  }
}

/** The `keys` commands' store: one short-lived connection in this thread. */
function openStore(path: string, synchronous: Synchronous): Store {
  try {
    return sqliteStore(openDb(path, { synchronous }), { checkpointer: false });
  } catch (error) {
    throw new ConfigError(`cannot open the database ${path}: ${(error as Error).message}`);
  }
}

const now = () => new Date().toISOString();

/** Creates a key in a project; answers the key itself, which is never stored. */
export async function createKey(store: Store, project: string, key: string = crypto.randomUUID()) {
  const record = await store.createApiKey(hashApiKey(key), keyPrefix(key), project, now());
  return { key, record };
}

/** Makes sure the key given by AGENTMON_API_KEY exists, in the default project. */
async function ensureConfiguredKey(store: Store, key: string): Promise<void> {
  const existing = await store.apiKeyByHash(hashApiKey(key));
  if (!existing) {
    await createKey(store, DEFAULT_PROJECT, key);
    return;
  }
  if (existing.revoked_at !== null) throw new ConfigError("AGENTMON_API_KEY names a key that was revoked");
  if (existing.project_name !== DEFAULT_PROJECT) {
    throw new ConfigError(`AGENTMON_API_KEY belongs to project "${existing.project_name}", not "${DEFAULT_PROJECT}"`);
  }
}

async function serve(config: Config, io: Output): Promise<number> {
  // A storage thread that stopped on its own leaves a server that can only answer 503: it exits
  // (status 1, once the requests in flight are answered) so that its supervisor restarts it.
  let storageFailed = (_error: Error) => {};
  const store = await openServerStore(config, (error) => storageFailed(error));
  if (config.jwtSecret !== undefined && config.jwtSecret.length < 32) {
    io.err("agentmon: warning: AGENTMON_JWT_SECRET is shorter than 32 characters; use a longer random secret");
  }
  let jwtSecret: string;
  let firstKey: string | undefined;
  try {
    jwtSecret = config.jwtSecret ?? (await store.metaValue("jwt_secret", newSecret()));
    if (config.apiKey !== undefined) await ensureConfiguredKey(store, config.apiKey);
    else if ((await store.listApiKeys()).length === 0) firstKey = (await createKey(store, DEFAULT_PROJECT)).key;
  } catch (error) {
    await store.close(); // the app owns the store only once it is built
    throw error;
  }

  let base = config.publicUrl;
  const app = await buildApp({
    store,
    jwtSecret,
    publicUrl: () => base ?? "",
    bodyLimit: config.bodyLimit,
    maxEvents: config.maxEvents,
    authFailLimit: config.authFailLimit,
    authFailWindowMs: config.authFailWindowSeconds * 1000,
    trustProxy: config.trustProxy,
    requestTimeoutMs: config.requestTimeoutSeconds * 1000,
    keepAliveTimeoutMs: config.keepAliveTimeoutSeconds * 1000,
    maxEventLoopDelayMs: config.maxEventLoopDelayMs,
    rateLimit: config.rateLimit,
    prices: priceTable(config.prices ?? []),
    logger: { level: config.logLevel },
  });
  const showFirstKey = (where: string | undefined) => {
    if (firstKey === undefined) return;
    io.out(`agentmon: created the first API key, for project "${DEFAULT_PROJECT}". It is shown only now:`);
    io.out(`  ${firstKey}`);
    if (where === undefined) return;
    io.out(
      `  try: curl -s ${where}/v2/create_session -H 'X-Agentmon-Api-Key: ${firstKey}' -H 'Content-Type: application/json' -d '{"session":{"id":"hello"}}'`,
    );
  };
  let address: string;
  try {
    address = await app.listen({ port: config.port, host: config.host });
  } catch (error) {
    showFirstKey(undefined); // the key exists now: do not lose it because the port was taken
    await app.close();
    throw error;
  }
  // The listen address, with the real port when PORT=0; a wildcard host is no address to visit.
  base ??= address.replace(/\/\/(\[::\]|0\.0\.0\.0)(?=:)/, "//localhost");
  showFirstKey(base);
  if (firstKey === undefined && config.apiKey === undefined) {
    io.out("agentmon: API keys: `npx agentmon keys create` makes a new one, `npx agentmon keys list` shows them");
  }
  io.out(`agentmon: listening on ${address} (database ${config.db})`);

  let stopping = false;
  const stop = (signal: string, code = 0) => {
    if (stopping) return;
    stopping = true;
    app.log.info({ signal }, "shutting down: finishing requests in flight");
    app.close().then(
      () => process.exit(code),
      (error: unknown) => {
        io.err(`agentmon: error while shutting down: ${(error as Error).message}`);
        process.exit(1);
      },
    );
  };
  storageFailed = (error) => {
    io.err(`agentmon: ${error.message}; exiting so that a supervisor can restart it`);
    stop("storage thread", 1);
  };
  process.once("SIGTERM", () => stop("SIGTERM"));
  process.once("SIGINT", () => stop("SIGINT"));
  return 0;
}

const describeKey = (k: ApiKeyRecord) =>
  `${k.prefix}…  ${k.project_name}  created ${k.created_at}${k.revoked_at ? `  REVOKED ${k.revoked_at}` : ""}`;

async function keys(
  sub: string | undefined,
  args: string[],
  flags: Record<string, string | undefined>,
  config: Config,
  io: Output,
) {
  const store = openStore(config.db, config.synchronous);
  try {
    if (sub === "create") {
      const project = flags.project ?? DEFAULT_PROJECT;
      if (project.trim() === "") throw new ConfigError("--project must not be empty");
      const { key, record } = await createKey(store, project);
      io.out(key);
      io.err(`Created API key ${record.prefix}… in project "${project}". Keep it now: it is not shown again.`);
      return 0;
    }
    if (sub === "list") {
      const all = await store.listApiKeys();
      if (all.length === 0) io.out("No API keys yet: `agentmon keys create` makes one.");
      for (const k of all) io.out(describeKey(k));
      return 0;
    }
    if (sub === "revoke") {
      const given = (args[0] ?? "").trim().toLowerCase().replace(/…$/, "");
      if (given.length < 4) throw new ConfigError("keys revoke needs a key or a key prefix of at least 4 characters");
      let matches: ApiKeyRecord[];
      if (isApiKeyShape(given)) {
        const exact = await store.apiKeyByHash(hashApiKey(given));
        matches = exact ? [exact] : [];
      } else if (given.length <= 8) {
        matches = (await store.listApiKeys()).filter((k) => k.prefix.startsWith(given));
      } else {
        throw new ConfigError("give the whole key, or its prefix as `agentmon keys list` shows it (8 characters)");
      }
      if (matches.length === 0) throw new ConfigError(`no API key matches "${given}"`);
      if (matches.length > 1) throw new ConfigError(`"${given}" matches ${matches.length} keys; give more of the key`);
      const key = matches[0] as ApiKeyRecord;
      if (key.revoked_at !== null) {
        io.out(`API key ${key.prefix}… was already revoked at ${key.revoked_at}`);
        return 0;
      }
      await store.revokeApiKey(key.id, now());
      io.out(`Revoked API key ${key.prefix}… of project "${key.project_name}"; it and its JWTs now fail.`);
      return 0;
    }
    io.err(USAGE);
    return 2;
  } finally {
    await store.close();
  }
}

/** Runs one command; answers the exit code (serve answers once it listens). */
export async function main(argv: string[], env: NodeJS.ProcessEnv, io: Output = console_): Promise<number> {
  try {
    const { values, positionals } = parseArgs({ args: argv, options: FLAG_OPTIONS, allowPositionals: true });
    const flags = values as Record<string, string | undefined>;
    const [command, sub, ...rest] = positionals;
    if (command === "serve") return await serve(loadConfig(env, flags), io);
    if (command === "keys") return await keys(sub, rest, flags, loadConfig(env, flags), io);
    io.err(USAGE);
    return command === undefined || command === "help" ? 0 : 2;
  } catch (error) {
    if (error instanceof ConfigError || (error as { code?: string }).code?.startsWith("ERR_PARSE_ARGS")) {
      io.err(`agentmon: ${(error as Error).message}`);
      return 1;
    }
    if ((error as { code?: string }).code === "EADDRINUSE") {
      io.err(`agentmon: ${(error as Error).message}; choose another PORT`);
      return 1;
    }
    throw error;
  }
}
