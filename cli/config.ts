/**
 * The command line's settings: every setting of `agentmon serve`, its environment variable, its
 * flag, its default and how it is read and checked. server.ts hands in the environment and the
 * flags; nothing here reads them itself.
 */

import { readFileSync } from "node:fs";
import { SYNCHRONOUS, type Synchronous } from "../db/sqlite/open.ts";
import { isApiKeyShape } from "../domain/keys.ts";
import { isEmailShape, isRole } from "../domain/people.ts";
import { type PriceEntry, readPrices } from "../domain/prices.ts";
import type { SmtpSettings } from "../services/mail.ts";
import type { OidcProvider } from "../services/oidc.ts";

const MIB = 1024 * 1024;

export const DEFAULT_PROJECT = "default";

export interface Config {
  port: number;
  host: string;
  db: string;
  /** A PostgreSQL database (`postgres://...`): used instead of the SQLite file `db` when given. */
  databaseUrl: string | undefined;
  apiKey: string | undefined;
  publicUrl: string | undefined;
  jwtSecret: string | undefined;
  bodyLimit: number;
  /** The OTLP endpoints' body limit, before and after decompression (otlp.md T2). */
  otlpBodyLimit: number;
  /** Bytes of request bodies read or held in flight, past which new bodies get 503 (decision 019). */
  inflightBytes: number;
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
  /** The bearer token of GET /metrics on the main port; unset: 404 there. */
  metricsToken: string | undefined;
  /** A port of its own that serves GET /metrics without a credential, on `host`; unset: none. */
  metricsPort: number | undefined;
  /**
   * A port of its own that serves OTLP/gRPC (the collector services' Export) on `host`; unset: none
   * (docs/decisions/028-otlp-grpc.md; 4317 is OTLP's usual port).
   */
  otlpGrpcPort: number | undefined;
  /** Redis, where every node counts 4.6 and O3 (cli/limits.ts); unset: PostgreSQL or memory. */
  redisUrl: string | undefined;
  /** Days a session is kept after its last activity, unless its project says otherwise; unset: forever. */
  retentionDays: number | undefined;
  /** Seconds between two retention sweeps of `serve`. */
  retentionIntervalSeconds: number;
  /** People (decision 035): the secret that signs the browser cookies; unset: one kept in the database. */
  cookieSecret: string | undefined;
  /** How long a browser session lives, in hours. */
  sessionHours: number;
  /** Failed sign-ins allowed per account and per address within the window. */
  loginFailLimit: number;
  loginFailWindowSeconds: number;
  /** Single sign-on: the OpenID Connect providers (a JSON list, or a file holding one). */
  oidcProviders: OidcProvider[] | undefined;
  /** Passwords are refused: people sign in through a provider. */
  ssoOnly: boolean;
  /**
   * Where the one-time links are mailed (smtp:// or smtps://, with user:password when the server
   * asks for them), and the sender; unset: nothing is mailed (decision 035).
   */
  smtp: SmtpSettings | undefined;
  smtpFrom: string | undefined;
}

/** A configuration mistake: reported as one line, never a stack trace. */
export class ConfigError extends Error {}

/** Every setting: its environment variable, its `serve` flag, its default and how it is read. */
const SETTINGS = {
  port: { env: "PORT", flag: "port", fallback: "3000", read: (v: string) => integer(v, "PORT", 0, 65535) },
  host: { env: "HOST", flag: "host", fallback: "127.0.0.1", read: (v: string) => v },
  db: { env: "AGENTMON_DB", flag: "db", fallback: "./data/agentmon.db", read: (v: string) => v },
  databaseUrl: { env: "AGENTMON_DATABASE_URL", flag: "database-url", fallback: undefined, read: readDatabaseUrl },
  apiKey: { env: "AGENTMON_API_KEY", flag: "api-key", fallback: undefined, read: readApiKey },
  publicUrl: { env: "AGENTMON_PUBLIC_URL", flag: "public-url", fallback: undefined, read: readUrl },
  jwtSecret: { env: "AGENTMON_JWT_SECRET", flag: "jwt-secret", fallback: undefined, read: (v: string) => v },
  bodyLimit: {
    env: "AGENTMON_BODY_LIMIT",
    flag: "body-limit",
    fallback: "5MiB",
    read: (v: string) => readSize(v, "AGENTMON_BODY_LIMIT"),
  },
  otlpBodyLimit: {
    env: "AGENTMON_OTLP_BODY_LIMIT",
    flag: "otlp-body-limit",
    fallback: "16MiB",
    read: (v: string) => readSize(v, "AGENTMON_OTLP_BODY_LIMIT"),
  },
  inflightBytes: {
    env: "AGENTMON_INFLIGHT_BYTES",
    flag: "inflight-bytes",
    fallback: "128MiB",
    read: (v: string) => readSize(v, "AGENTMON_INFLIGHT_BYTES"),
  },
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
  metricsToken: { env: "AGENTMON_METRICS_TOKEN", flag: "metrics-token", fallback: undefined, read: readMetricsToken },
  metricsPort: {
    env: "AGENTMON_METRICS_PORT",
    flag: "metrics-port",
    fallback: undefined,
    read: (v: string) => integer(v, "AGENTMON_METRICS_PORT", 0, 65535),
  },
  otlpGrpcPort: {
    env: "AGENTMON_OTLP_GRPC_PORT",
    flag: "otlp-grpc-port",
    fallback: undefined,
    read: (v: string) => integer(v, "AGENTMON_OTLP_GRPC_PORT", 0, 65535),
  },
  redisUrl: { env: "AGENTMON_REDIS_URL", flag: "redis-url", fallback: undefined, read: readRedisUrl },
  retentionDays: { env: "AGENTMON_RETENTION_DAYS", flag: "retention-days", fallback: undefined, read: readDays },
  retentionIntervalSeconds: {
    env: "AGENTMON_RETENTION_INTERVAL",
    flag: "retention-interval",
    fallback: "600",
    read: (v: string) => integer(v, "AGENTMON_RETENTION_INTERVAL", 1, 86_400),
  },
  cookieSecret: { env: "AGENTMON_COOKIE_SECRET", flag: "cookie-secret", fallback: undefined, read: readCookieSecret },
  sessionHours: {
    env: "AGENTMON_SESSION_HOURS",
    flag: "session-hours",
    fallback: "168",
    read: (v: string) => integer(v, "AGENTMON_SESSION_HOURS", 1, 8760),
  },
  loginFailLimit: {
    env: "AGENTMON_LOGIN_FAIL_LIMIT",
    flag: "login-fail-limit",
    fallback: "10",
    read: (v: string) => integer(v, "AGENTMON_LOGIN_FAIL_LIMIT", 1, 1_000_000),
  },
  loginFailWindowSeconds: {
    env: "AGENTMON_LOGIN_FAIL_WINDOW",
    flag: "login-fail-window",
    fallback: "900",
    read: (v: string) => integer(v, "AGENTMON_LOGIN_FAIL_WINDOW", 1, 86_400),
  },
  oidcProviders: { env: "AGENTMON_OIDC", flag: "oidc", fallback: undefined, read: readOidc },
  ssoOnly: {
    env: "AGENTMON_SSO_ONLY",
    flag: "sso-only",
    fallback: "false",
    read: (v: string) => {
      if (v !== "true" && v !== "false") throw new ConfigError(`AGENTMON_SSO_ONLY must be true or false (got "${v}")`);
      return v === "true";
    },
  },
  smtp: { env: "AGENTMON_SMTP_URL", flag: "smtp-url", fallback: undefined, read: readSmtpUrl },
  smtpFrom: { env: "AGENTMON_SMTP_FROM", flag: "smtp-from", fallback: undefined, read: readSmtpFrom },
} as const;

/**
 * AGENTMON_SMTP_URL: smtp://[user[:password]@]host[:port] (STARTTLS when the server offers it,
 * port 587 by default) or smtps://… (TLS from the start, port 465), nothing after the port. Read
 * here into the transport's settings; the message never repeats what comes before an `@`, where
 * the URL carries its password.
 */
function readSmtpUrl(value: string): SmtpSettings {
  let url: URL | undefined;
  try {
    url = new URL(value.trim());
  } catch {}
  const secure = url?.protocol === "smtps:";
  if (
    !url ||
    !(secure || url.protocol === "smtp:") ||
    !url.hostname ||
    !/^\/?$/.test(url.pathname) ||
    url.search ||
    url.hash
  ) {
    const at = value.lastIndexOf("@");
    throw new ConfigError(
      "AGENTMON_SMTP_URL must be an smtp:// or smtps:// URL such as smtp://mail.internal:587 or " +
        `smtps://user:password@smtp.example.com:465, nothing after the port (got "${at < 0 ? value : `…@${value.slice(at + 1)}`}")`,
    );
  }
  let auth: SmtpSettings["auth"];
  try {
    auth =
      url.username === ""
        ? undefined
        : { user: decodeURIComponent(url.username), pass: decodeURIComponent(url.password) };
  } catch {
    throw new ConfigError("AGENTMON_SMTP_URL: the user or password is not valid percent-encoding");
  }
  return {
    host: url.hostname.replace(/^\[(.*)\]$/, "$1"),
    port: url.port === "" ? (secure ? 465 : 587) : Number(url.port),
    secure,
    ...(auth === undefined ? {} : { auth }),
  };
}

/** AGENTMON_SMTP_FROM: an address (`agentmon@example.com`), or a name and one (`agentmon <agentmon@example.com>`). */
function readSmtpFrom(value: string): string {
  const v = value.trim();
  const m = /^(?:([^<>"\p{Cc}]*?)\s*<([^<>\s]+)>|([^<>\s]+))$/u.exec(v);
  const address = m?.[2] ?? m?.[3];
  if (!m || address === undefined || !isEmailShape(address) || /\p{Cc}/u.test(v)) {
    throw new ConfigError(
      `AGENTMON_SMTP_FROM must be an address such as agentmon@example.com or "agentmon <agentmon@example.com>" (got "${value}")`,
    );
  }
  return v;
}

/**
 * AGENTMON_OIDC: a JSON list of providers, or the path of a file holding one: each
 * {id, issuer, client_id, client_secret, groups_claim?, roles?: [{group, project, role}]}.
 */
function readOidc(value: string): OidcProvider[] {
  let list: unknown;
  try {
    list = JSON.parse(value.trim().startsWith("[") ? value : readFileSync(value, "utf8"));
  } catch (error) {
    throw new ConfigError(
      `AGENTMON_OIDC must be a JSON list of providers, or a file holding one: ${(error as Error).message}`,
    );
  }
  const ok = (p: Record<string, unknown>) =>
    ["id", "issuer", "client_id", "client_secret"].every((k) => typeof p[k] === "string" && p[k] !== "") &&
    /^[A-Za-z0-9_-]{1,64}$/.test(String(p.id)) &&
    (p.roles === undefined ||
      (Array.isArray(p.roles) &&
        p.roles.every(
          (r: Record<string, unknown>) =>
            typeof r.group === "string" && typeof r.project === "string" && isRole(r.role),
        )));
  if (!Array.isArray(list) || !list.every((p) => typeof p === "object" && p !== null && ok(p))) {
    throw new ConfigError(
      "AGENTMON_OIDC: each provider needs id (letters, digits, - and _), issuer, client_id and client_secret; roles, when given, [{group, project, role}] with a role of viewer, annotator, editor, admin",
    );
  }
  return list as OidcProvider[];
}

/** A secret of at least 32 visible ASCII characters: it signs every browser session's cookie. */
function readCookieSecret(value: string): string {
  if (!/^[\x21-\x7e]{32,1024}$/.test(value)) {
    throw new ConfigError("AGENTMON_COOKIE_SECRET must be 32 to 1024 visible ASCII characters (a long random string)");
  }
  return value;
}

/** A retention: a whole number of days from 1 to 36500, or `forever` (undefined). */
export function readDays(value: string, name = "AGENTMON_RETENTION_DAYS"): number | undefined {
  if (value.trim().toLowerCase() === "forever") return undefined;
  const n = Number(value.trim());
  if (!/^\d+$/.test(value.trim()) || n < 1 || n > 36_500) {
    throw new ConfigError(`${name} must be a whole number of days from 1 to 36500, or forever (got "${value}")`);
  }
  return n;
}

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

/** A PostgreSQL connection URL (libpq's form, as node-postgres takes it). */
function readDatabaseUrl(value: string): string {
  let url: URL | undefined;
  try {
    url = new URL(value);
  } catch {
    // reported below
  }
  if (url === undefined || (url.protocol !== "postgres:" && url.protocol !== "postgresql:") || url.host === "") {
    throw new ConfigError(
      "AGENTMON_DATABASE_URL must be a PostgreSQL URL such as postgres://user:password@host:5432/agentmon",
    );
  }
  return value;
}

/** A database URL as it may be shown: without its password. */
export function withoutPassword(value: string): string {
  const url = new URL(value);
  if (url.password !== "") url.password = "***";
  return url.toString();
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

/**
 * redis:// or rediss://, a host, and at most a database number as its path. The message never
 * repeats what comes before an `@`, where the URL carries its password.
 */
function readRedisUrl(value: string): string {
  let url: URL | undefined;
  try {
    url = new URL(value.trim());
  } catch {}
  const scheme = url?.protocol === "redis:" || url?.protocol === "rediss:";
  if (!url || !scheme || !url.hostname || !/^(\/\d*)?$/.test(url.pathname)) {
    const at = value.lastIndexOf("@");
    throw new ConfigError(
      "AGENTMON_REDIS_URL must be a redis:// or rediss:// URL such as redis://127.0.0.1:6379 or " +
        `rediss://:password@redis.internal:6380/0 (got "${at < 0 ? value : `…@${value.slice(at + 1)}`}")`,
    );
  }
  return value.trim();
}

const UNITS: Record<string, number> = {
  "": 1,
  b: 1,
  k: 1024,
  kb: 1000,
  kib: 1024,
  m: MIB,
  mb: 1e6,
  mib: MIB,
  g: 1024 * MIB,
  gb: 1e9,
  gib: 1024 * MIB,
};

export function readSize(value: string, name = "AGENTMON_BODY_LIMIT"): number {
  const m = /^\s*(\d+(?:\.\d+)?)\s*([a-z]*)\s*$/i.exec(value);
  const unit = m ? UNITS[(m[2] ?? "").toLowerCase()] : undefined;
  if (!m || unit === undefined || Number(m[1]) * unit < 1024) {
    throw new ConfigError(`${name} must be a size such as 5MiB, 512KiB or 1048576, at least 1KiB (got "${value}")`);
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

/** A secret of 16 to 1024 visible ASCII characters: it travels in an Authorization header. */
function readMetricsToken(value: string): string {
  if (!/^[\x21-\x7e]{16,1024}$/.test(value)) {
    throw new ConfigError(
      "AGENTMON_METRICS_TOKEN must be 16 to 1024 visible ASCII characters, no spaces (a long random string)",
    );
  }
  return value;
}

/** Settings from flags, then the environment, then the defaults. */
export function loadConfig(env: NodeJS.ProcessEnv, flags: Record<string, string | undefined>): Config {
  const config: Record<string, unknown> = {};
  for (const [name, setting] of Object.entries(SETTINGS)) {
    const raw = flags[setting.flag] ?? env[setting.env] ?? setting.fallback;
    config[name] = raw === undefined || raw === "" ? undefined : setting.read(raw);
  }
  if (config.metricsPort !== undefined && config.metricsPort !== 0 && config.metricsPort === config.port) {
    throw new ConfigError(`AGENTMON_METRICS_PORT must be another port than PORT (both are ${config.port})`);
  }
  const grpcPort = config.otlpGrpcPort;
  if (grpcPort !== undefined && grpcPort !== 0 && (grpcPort === config.port || grpcPort === config.metricsPort)) {
    const other = grpcPort === config.port ? "PORT" : "AGENTMON_METRICS_PORT";
    throw new ConfigError(`AGENTMON_OTLP_GRPC_PORT must be another port than ${other} (both are ${grpcPort})`);
  }
  if (config.smtpFrom !== undefined && config.smtp === undefined) {
    throw new ConfigError(
      "AGENTMON_SMTP_FROM is set but AGENTMON_SMTP_URL is not: set both to mail the links, or neither",
    );
  }
  if (config.smtp !== undefined && config.smtpFrom === undefined) {
    throw new ConfigError("AGENTMON_SMTP_URL needs AGENTMON_SMTP_FROM, the address the links are mailed from");
  }
  return config as unknown as Config;
}

export const USAGE = `Usage:
  agentmon serve [--port N] [--host H] [--db PATH | --database-url URL] [--api-key UUID] [--public-url URL]
                 [--jwt-secret S] [--body-limit SIZE] [--otlp-body-limit SIZE] [--inflight-bytes SIZE]
                 [--max-events N] [--log-level L]
                 [--auth-fail-limit N] [--auth-fail-window SECONDS] [--trust-proxy T]
                 [--request-timeout SECONDS] [--keepalive-timeout SECONDS]
                 [--max-event-loop-delay MS] [--rate-limit PER_MINUTE] [--prices FILE]
                 [--synchronous normal|full] [--metrics-token T] [--metrics-port N] [--otlp-grpc-port N]
                 [--redis-url URL] [--retention-days DAYS|forever] [--retention-interval SECONDS]
                 [--cookie-secret S] [--session-hours N] [--login-fail-limit N] [--login-fail-window SECONDS]
                 [--oidc JSON|FILE] [--sso-only true|false] [--smtp-url URL --smtp-from ADDRESS]
  agentmon keys create [--project NAME] [--scope ingest,read,admin,annotate|all]
                                          create an API key; it is printed once. Scopes (4.7):
                                          ingest (write API, OTLP), read (read API, web UI),
                                          admin (delete, keys, members, audit), annotate (scores
                                          only); default: ingest,read,admin; all: the four
  agentmon keys list                      list keys (prefixes, projects, scopes)
  agentmon keys revoke <key-or-prefix>    revoke a key at once
  agentmon prices check                   models of stored llm events that have no price
  agentmon prices import FILE             check a price table and keep it in the database;
                                          serve uses it from its next start
  agentmon projects list                  projects and their retention
  agentmon projects set-retention <project> <days|forever|default>
                                          keep its sessions that many days after their last
                                          activity (default: AGENTMON_RETENTION_DAYS)
  agentmon sessions delete --project NAME --before DATE [--tag T]... [--dry-run]
                                          delete (or count) the sessions started before DATE
  agentmon export [--project NAME] [--format ndjson|csv|otlp] [--out FILE] [--tag T]... [--end-state S]
                 [--from DATE] [--to DATE] [--agent-id ID] [--q TEXT] [--conversation-id ID]
                                          write the project's sessions as GET /v2/export does
                                          (standard output by default)
  agentmon import FILE [--project NAME]   read an NDJSON export back; importing twice changes nothing
  agentmon users create --email E [--name N] [--owner] [--project P --role R]
                                          make a person's account; prints a one-time link that
                                          sets its password
  agentmon users list                     people, owners and who is disabled
  agentmon users invite --email E --project P --role R
                                          a one-time link that makes the account, with its role
  agentmon users reset-link <email>       a one-time link that sets the password (a day)
  agentmon users disable|enable <email>   disabling ends their browser sessions at once
  agentmon members list [--project P]     who has which role in which project
  agentmon members set <project> <email> <viewer|annotator|editor|admin>
  agentmon members remove <project> <email>
  agentmon audit export [--project NAME] [--out FILE]
                                          write the audit trail as NDJSON, oldest first, one
                                          record a line (as GET /v2/audit/export); without
                                          --project every record, the instance's acts included
  agentmon vacuum                         SQLite: rewrite the file, turning on incremental
                                          auto-vacuum; pauses writes while it runs
  agentmon rebuild [--resume]             make every projection (totals, rollups, search index, score analytics)
                                          again from the raw rows, with progress; --resume
                                          finishes one that was stopped

--db and --database-url apply to every command.
Each serve flag has an environment variable: PORT, HOST, AGENTMON_DB, AGENTMON_DATABASE_URL, AGENTMON_API_KEY,
AGENTMON_PUBLIC_URL, AGENTMON_JWT_SECRET, AGENTMON_BODY_LIMIT, AGENTMON_OTLP_BODY_LIMIT,
AGENTMON_INFLIGHT_BYTES, AGENTMON_MAX_EVENTS,
AGENTMON_LOG_LEVEL, AGENTMON_AUTH_FAIL_LIMIT, AGENTMON_AUTH_FAIL_WINDOW, AGENTMON_TRUST_PROXY,
AGENTMON_REQUEST_TIMEOUT, AGENTMON_KEEPALIVE_TIMEOUT, AGENTMON_MAX_EVENT_LOOP_DELAY,
AGENTMON_RATE_LIMIT, AGENTMON_PRICES, AGENTMON_SYNCHRONOUS, AGENTMON_METRICS_TOKEN,
AGENTMON_METRICS_PORT, AGENTMON_OTLP_GRPC_PORT, AGENTMON_REDIS_URL, AGENTMON_RETENTION_DAYS, AGENTMON_RETENTION_INTERVAL,
AGENTMON_COOKIE_SECRET, AGENTMON_SESSION_HOURS, AGENTMON_LOGIN_FAIL_LIMIT, AGENTMON_LOGIN_FAIL_WINDOW,
AGENTMON_OIDC, AGENTMON_SSO_ONLY, AGENTMON_SMTP_URL, AGENTMON_SMTP_FROM.
With AGENTMON_SMTP_URL and AGENTMON_SMTP_FROM, users create, invite and reset-link also mail the link.`;

/** The flags of the settings (serve's, and --db/--database-url for every command). */
export const SETTING_FLAGS: readonly string[] = Object.values(SETTINGS).map((s) => s.flag);

export const FLAG_OPTIONS = {
  ...Object.fromEntries(
    [
      ...Object.values(SETTINGS).map((s) => s.flag),
      "project",
      "scope",
      "before",
      "format",
      "out",
      "end-state",
      "from",
      "to",
      "agent-id",
      "q",
      "conversation-id",
      "email",
      "name",
      "role",
    ].map((flag) => [flag, { type: "string" as const }]),
  ),
  tag: { type: "string" as const, multiple: true },
  "dry-run": { type: "boolean" as const },
  resume: { type: "boolean" as const },
  owner: { type: "boolean" as const },
};

/** Where the commands write: the console, or what a test collects. */
export interface Output {
  out(line: string): void;
  err(line: string): void;
}
