/**
 * Redis for the tests (issue 14: the limits shared by several nodes): the one every machine of ours
 * runs at 127.0.0.1:6379, or AGENTMON_TEST_REDIS_URL's. When it does not answer, the tests that
 * need it are skipped with one line that says why, unless AGENTMON_REQUIRE_REDIS=1 (CI: .ci/run
 * sets it), where they fail instead.
 */
import { Redis } from "ioredis";

export const REDIS_URL = process.env.AGENTMON_TEST_REDIS_URL || "redis://127.0.0.1:6379";

/** True when the Redis tests must run (CI). */
export const redisRequired = () => process.env.AGENTMON_REQUIRE_REDIS === "1";

/** Why Redis cannot be used here, or undefined when it can. */
export async function redisUnavailable(): Promise<string | undefined> {
  const client = new Redis(REDIS_URL, { lazyConnect: true, maxRetriesPerRequest: 0, connectTimeout: 2000 });
  client.on("error", () => undefined);
  try {
    await client.connect();
    await client.ping();
    return undefined;
  } catch (error) {
    return `Redis at ${new URL(REDIS_URL).host} does not answer (${(error as Error).message})`;
  } finally {
    client.disconnect();
  }
}
