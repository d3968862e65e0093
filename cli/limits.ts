/**
 * Where `agentmon serve` counts 4.6 (failed API-key checks per address) and O3 (requests per API
 * key), docs/decisions/018-shared-limits.md: in Redis when AGENTMON_REDIS_URL is set, else in the
 * PostgreSQL database the server stores into (its pool), else in this process (one node).
 */
import type { Pool } from "pg";
import { type LimitSettings, memoryLimits, type RequestLimits } from "../http/ratelimit.ts";
import { postgresLimits, redisLimits } from "../http/ratelimit-shared.ts";
import { type Config, ConfigError, type Output } from "./config.ts";

/**
 * The counters for buildApp's `limits` (the app closes them). `pool`: the PostgreSQL store's pool,
 * on a database its migrations brought to 002-rate-limits.sql. A Redis server that cannot be
 * reached stops the start (a ConfigError); a store that fails later is counted around, with a
 * warning on stderr.
 */
export async function chooseLimits(config: Config, io: Output, pool?: Pool): Promise<RequestLimits> {
  const settings: LimitSettings = {
    failureLimit: config.authFailLimit,
    failureWindowMs: config.authFailWindowSeconds * 1000,
    ratePerMinute: config.rateLimit,
  };
  const warn = (line: string) => io.err(`agentmon: warning: ${line}`);
  if (config.redisUrl !== undefined) {
    try {
      return await redisLimits({ ...settings, redis: config.redisUrl, warn });
    } catch (error) {
      const { host } = new URL(config.redisUrl);
      throw new ConfigError(`cannot reach Redis at ${host} (AGENTMON_REDIS_URL): ${(error as Error).message}`);
    }
  }
  if (pool) return postgresLimits({ ...settings, pool, warn });
  return memoryLimits(settings);
}
