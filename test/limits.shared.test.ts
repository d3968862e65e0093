/**
 * 4.6 and O3 counted in memory, in PostgreSQL and in Redis (test/limits/shared.ts): real services,
 * so skipped with one line saying why where either does not answer, unless CI requires them
 * (AGENTMON_REQUIRE_POSTGRES=1, AGENTMON_REQUIRE_REDIS=1: then they fail instead).
 */
import t from "tap";
import { postgresRequired, postgresUnavailable } from "./postgres.ts";
import { redisRequired, redisUnavailable } from "./redis.ts";

const why = [
  postgresRequired() ? undefined : await postgresUnavailable(),
  redisRequired() ? undefined : await redisUnavailable(),
].filter((reason) => reason !== undefined);
if (why.length > 0) t.comment(`the shared limits tests are skipped: ${why.join("; ")}`);
else await import("./limits/shared.ts");
