/**
 * scripts/check.sh asks this whether to run the PostgreSQL leg: exit 0 when the tests' PostgreSQL
 * server answers (test/postgres.ts) or is required (AGENTMON_REQUIRE_POSTGRES=1: then the leg runs
 * and fails if it does not); else exit 1, with why on stdout.
 */
import { postgresRequired, postgresUnavailable } from "../test/postgres.ts";

const why = await postgresUnavailable();
if (why !== undefined && !postgresRequired()) {
  process.stdout.write(`${why}; set AGENTMON_TEST_DATABASE_URL to a server where user postgres may create databases\n`);
  process.exit(1);
}
