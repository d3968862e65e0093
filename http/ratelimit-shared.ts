/**
 * 4.6 and O3 counted in a store that every node shares, PostgreSQL or Redis
 * (docs/decisions/018-shared-limits.md), behind the RequestLimits of http/ratelimit.ts:
 *
 * - 4.6 (failed API-key checks per client address, in fixed windows) is rate-limiter-flexible's
 *   RateLimiterPostgres or RateLimiterRedis: `penalty` counts a failure, `get` reads the window.
 *   The library times its windows by the wall clock (Date.now(), and Redis's own expiry).
 * - O3 (a token bucket per API key) is one atomic statement of ours in the same store, the same
 *   arithmetic as http/ratelimit.ts RateLimiter, on the app's clock: the library counts in fixed
 *   windows only, and O3 promises a bucket.
 * - Both answer from this node's memory while the store fails or is slow (withFallback), with one
 *   warning when that starts and one when it ends: a limiter never turns a request into a 500.
 *
 * The PostgreSQL tables are created by the migration db/postgres/migrations/002-rate-limits.sql,
 * never by the library at run time (tableCreated: true).
 */
import { Redis } from "ioredis";
import type { Pool } from "pg";
import { RateLimiterPostgres, RateLimiterRedis, type RateLimiterStoreAbstract } from "rate-limiter-flexible";
import { type LimitSettings, memoryLimits, type RequestLimits } from "./ratelimit.ts";

/** 4.6's table, in the layout RateLimiterPostgres expects. */
export const FAILURES_TABLE = "rate_limits";
/** O3's table: one token bucket per API key. */
export const BUCKETS_TABLE = "rate_buckets";

export interface SharedLimitOptions extends LimitSettings {
  /** Told once when the store starts failing and once when it answers again (one line each). */
  warn: (line: string) => void;
  /**
   * Starts every row or key of this deployment: `<prefix>:auth-fail:<address>` (4.6) and
   * `<prefix>:rate:<API key id>` (O3). Default `agentmon`.
   */
  prefix?: string | undefined;
  /** O3's clock, in milliseconds since the epoch; default Date.now. 4.6's windows run on the wall clock. */
  now?: (() => number) | undefined;
  /** A store call that has not answered within this many ms is answered from memory; default 1000. */
  timeoutMs?: number | undefined;
  /** While the store fails, it is tried again after this many ms; default 5000. */
  retryMs?: number | undefined;
}

export interface PostgresLimitOptions extends SharedLimitOptions {
  /** The caller's pool, on a database migrated with 002-rate-limits.sql; never ended here. */
  pool: Pool;
}

export interface RedisLimitOptions extends SharedLimitOptions {
  /** The caller's ioredis client (never closed here), or a redis:// URL to connect to (closed with the limits). */
  redis: Redis | string;
}

/** The 4.6 and O3 counters in the PostgreSQL database behind `pool`, shared by every node on it. */
export function postgresLimits(options: PostgresLimitOptions): RequestLimits {
  const { pool } = options;
  const now = options.now ?? Date.now;
  const prefix = options.prefix ?? "agentmon";
  const failures = new RateLimiterPostgres({
    storeClient: pool,
    storeType: "pool",
    tableName: FAILURES_TABLE,
    tableCreated: true,
    clearExpiredByTimeout: false, // the interval below does it, and stops with the limits
    keyPrefix: `${prefix}:auth-fail`,
    points: options.failureLimit,
    duration: windowSeconds(options.failureWindowMs),
  });
  const bucket = bucketOf(options.ratePerMinute);

  /** Takes one token of the key's bucket if it holds one, in one statement (the row is locked by the upsert). */
  async function takeRequest(keyId: string): Promise<number> {
    if (!bucket) return 0;
    const key = `${prefix}:rate:${keyId}`;
    const at = Math.floor(now());
    const refilled = `LEAST($3::float8, b.tokens + GREATEST($2 - b.taken_at, 0) * $4::float8)`;
    const taken = await pool.query({
      name: "agentmon-o3-take",
      text: `INSERT INTO ${BUCKETS_TABLE} AS b (key, tokens, taken_at) VALUES ($1, $3::float8 - 1, $2)
             ON CONFLICT (key) DO UPDATE SET tokens = ${refilled} - 1, taken_at = $2 WHERE ${refilled} >= 1
             RETURNING tokens`,
      values: [key, at, bucket.capacity, bucket.perMs],
    });
    if (taken.rowCount) return 0;
    const row = (
      await pool.query({ text: `SELECT tokens, taken_at FROM ${BUCKETS_TABLE} WHERE key = $1`, values: [key] })
    ).rows[0] as { tokens: number; taken_at: string } | undefined;
    return row ? bucket.wait(row.tokens, Number(row.taken_at), at) : 1;
  }

  // Rows an hour past their use go, as the library would do it (hourly margin for clocks that differ).
  const cleanup = setInterval(() => {
    const before = Date.now() - 3_600_000;
    pool.query(`DELETE FROM ${FAILURES_TABLE} WHERE expire < $1`, [before]).catch(() => {});
    pool.query(`DELETE FROM ${BUCKETS_TABLE} WHERE taken_at < $1`, [before]).catch(() => {});
  }, 300_000);
  cleanup.unref();

  const store: RequestLimits = {
    failureWait: (address) => failureWait(failures, options.failureLimit, address),
    recordFailure: async (address) => {
      await failures.penalty(address, 1);
    },
    takeRequest,
    close: async () => clearInterval(cleanup),
  };
  return withFallback(store, memoryLimits(options, now), { ...options, name: "PostgreSQL" });
}

/** O3's token bucket in Redis, atomically: KEYS[1] the bucket, ARGV capacity, tokens per ms, now (ms). */
const TAKE_LUA = `
local capacity, perMs, now = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
local state = redis.call('HMGET', KEYS[1], 'tokens', 'taken_at')
local tokens = capacity
if state[1] then tokens = math.min(capacity, tonumber(state[1]) + math.max(now - tonumber(state[2]), 0) * perMs) end
if tokens < 1 then return {0, string.format('%.17g', tokens)} end
tokens = tokens - 1
redis.call('HSET', KEYS[1], 'tokens', string.format('%.17g', tokens), 'taken_at', string.format('%.17g', now))
redis.call('PEXPIRE', KEYS[1], math.max(1, math.ceil((capacity - tokens) / perMs)))
return {1, string.format('%.17g', tokens)}
`;

/**
 * The 4.6 and O3 counters in Redis, shared by every node on it. A URL is connected to now: an
 * unreachable server rejects (a start stops on it); later faults are answered from memory.
 */
export async function redisLimits(options: RedisLimitOptions): Promise<RequestLimits> {
  const owned = typeof options.redis === "string";
  const client = typeof options.redis === "string" ? await connectRedis(options.redis) : options.redis;
  const now = options.now ?? Date.now;
  const prefix = options.prefix ?? "agentmon";
  const failures = new RateLimiterRedis({
    storeClient: client,
    rejectIfRedisNotReady: true, // not connected: answered from memory at once, not queued
    keyPrefix: `${prefix}:auth-fail`,
    points: options.failureLimit,
    duration: windowSeconds(options.failureWindowMs),
  });
  const bucket = bucketOf(options.ratePerMinute);
  const store: RequestLimits = {
    failureWait: (address) => failureWait(failures, options.failureLimit, address),
    recordFailure: async (address) => {
      await failures.penalty(address, 1);
    },
    async takeRequest(keyId) {
      if (!bucket) return 0;
      const at = Math.floor(now());
      const [taken, tokens] = (await client.eval(
        TAKE_LUA,
        1,
        `${prefix}:rate:${keyId}`,
        bucket.capacity,
        bucket.perMs,
        at,
      )) as [number, string];
      return taken === 1 ? 0 : bucket.wait(Number(tokens), at, at);
    },
    close: async () => {
      if (owned) client.disconnect();
    },
  };
  return withFallback(store, memoryLimits(options, now), { ...options, name: "Redis" });
}

/** A client of our own: commands fail at once while it is not connected (no offline queue), so memory answers. */
async function connectRedis(url: string): Promise<Redis> {
  const client = new Redis(url, { lazyConnect: true, enableOfflineQueue: false, maxRetriesPerRequest: 1 });
  let lastError: Error | undefined;
  client.on("error", (error: Error) => {
    lastError = error; // a fault reaches the limits as a failed call, which withFallback reports
  });
  try {
    await client.connect();
    return client;
  } catch (error) {
    client.disconnect();
    throw lastError ?? error;
  }
}

/** 4.6: the seconds left of the address's window once it holds `limit` failures, else 0. */
async function failureWait(failures: RateLimiterStoreAbstract, limit: number, address: string): Promise<number> {
  const window = await failures.get(address);
  if (!window || window.consumedPoints < limit) return 0;
  return Math.max(1, Math.ceil(window.msBeforeNext / 1000));
}

/** The library counts in whole seconds (Redis expiries are whole seconds). */
function windowSeconds(ms: number): number {
  if (!Number.isInteger(ms / 1000) || ms < 1000) {
    throw new RangeError(`the failed-key window of shared limits must be whole seconds (got ${ms} ms)`);
  }
  return ms / 1000;
}

/**
 * O3's bucket: `perMinute` tokens, refilled evenly over the minute, as http/ratelimit.ts
 * RateLimiter (the same arithmetic, so that every store answers the same Retry-After).
 */
function bucketOf(perMinute: number) {
  if (!(perMinute > 0)) return undefined;
  const perMs = perMinute / 60_000;
  return {
    capacity: perMinute,
    perMs,
    /** The seconds until a bucket of `tokens` at `takenAt` holds a whole token. */
    wait(tokens: number, takenAt: number, at: number): number {
      const now = Math.min(perMinute, tokens + Math.max(at - takenAt, 0) * perMs);
      return Math.max(1, Math.ceil((1 - now) / perMs / 1000));
    },
  };
}

interface FallbackOptions {
  /** The store's name, for the warnings. */
  name: string;
  warn: (line: string) => void;
  timeoutMs?: number | undefined;
  retryMs?: number | undefined;
}

/**
 * The shared counters, answered by this node's own (`local`) while the store fails or does not
 * answer in time. Decision 018: counting alone on each node keeps 4.6 and O3 (at most as many
 * times looser as there are nodes) and keeps serving; a 503 would stop every API-key call for a
 * fault of a counter. The failures counted meanwhile stay on the node that saw them.
 */
export function withFallback(shared: RequestLimits, local: RequestLimits, options: FallbackOptions): RequestLimits {
  const timeoutMs = options.timeoutMs ?? 1000;
  const retryMs = options.retryMs ?? 5000;
  let failingSince: number | undefined;
  async function answer<T>(call: (limits: RequestLimits) => Promise<T>): Promise<T> {
    if (failingSince !== undefined && Date.now() - failingSince < retryMs) return call(local);
    try {
      const value = await deadline(call(shared), timeoutMs);
      if (failingSince !== undefined) {
        failingSince = undefined;
        options.warn(`rate limits: ${options.name} answers again; the counts are shared again`);
      }
      return value;
    } catch (error) {
      if (failingSince === undefined) {
        options.warn(
          `rate limits: ${options.name} failed (${(error as Error).message}); ` +
            "this node counts failed key checks and request rates on its own until it answers again",
        );
      }
      failingSince = Date.now();
      return call(local);
    }
  }
  return {
    failureWait: (address) => answer((limits) => limits.failureWait(address)),
    recordFailure: (address) => answer((limits) => limits.recordFailure(address)),
    takeRequest: (keyId) => answer((limits) => limits.takeRequest(keyId)),
    close: async () => {
      await Promise.all([shared.close(), local.close()]);
    },
  };
}

/** The promise's answer, or a rejection once `ms` have passed. */
function deadline<T>(promise: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer within ${ms} ms`)), ms);
  });
  return Promise.race([promise, late]).finally(() => clearTimeout(timer));
}
