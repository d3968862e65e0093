/**
 * Where `agentmon serve` counts 4.6 (failed API-key checks per address) and O3 (requests per API
 * key), docs/decisions/018-shared-limits.md: in Redis when AGENTMON_REDIS_URL is set, else in the
 * PostgreSQL database the server stores into (its pool), else in this process (one node).
 */
import type { Pool } from "pg";
import { type LimitSettings, memoryLimits, type RequestLimits } from "../http/ratelimit.ts";
import { type Config, ConfigError, type Output } from "./config.ts";

/**
 * The counters for buildApp's `limits` (the app closes them). `pool`: the PostgreSQL store's pool,
 * on a database its migrations brought to 002-rate-limits.sql. A Redis server that cannot be
 * reached stops the start (a ConfigError); a store that fails later is counted around, with a
 * warning on stderr.
 */
export async function chooseLimits(config: Config, io: Output, pool?: Pool, login?: boolean): Promise<RequestLimits> {
  // Sign-in throttling (decision 035) is the same failure counter, with its own numbers, under a
  // prefix of its own, in the same place: shared by every node exactly as 4.6 is.
  const settings: LimitSettings = login
    ? {
        failureLimit: config.loginFailLimit,
        failureWindowMs: config.loginFailWindowSeconds * 1000,
        ratePerMinute: 0,
      }
    : {
        failureLimit: config.authFailLimit,
        failureWindowMs: config.authFailWindowSeconds * 1000,
        ratePerMinute: config.rateLimit,
      };
  const prefix = login ? "agentmon-login" : undefined;
  const warn = (line: string) => io.err(`agentmon: warning: ${line}`);
  if (config.redisUrl === undefined && !pool) return memoryLimits(settings);
  // Loaded only here: ioredis and rate-limiter-flexible would add a fifth to every start (decision 018).
  const { postgresLimits, redisLimits } = await import("../http/ratelimit-shared.ts");
  const shared = (where: string) => {
    if (!login) {
      io.out(`agentmon: failed key checks and request rates are counted in ${where}, shared by every node on it`);
    }
  };
  if (config.redisUrl !== undefined) {
    const { host } = new URL(config.redisUrl);
    let limits: RequestLimits;
    try {
      limits = await redisLimits({ ...settings, redis: config.redisUrl, warn, prefix });
    } catch (error) {
      throw new ConfigError(`cannot reach Redis at ${host} (AGENTMON_REDIS_URL): ${(error as Error).message}`);
    }
    shared(`Redis at ${host}`);
    return limits;
  }
  shared("the PostgreSQL database");
  return postgresLimits({ ...settings, pool: pool as Pool, warn, prefix });
}
