/** The Store contract (store.contract.ts) on the PostgreSQL adapter, a database of its own per test. */
import t from "tap";
import { schemaVersion } from "../../db/postgres/migrate.ts";
import { openPostgresStore } from "../../db/postgres/store.ts";
import { postgresRequired, postgresUnavailable, testDatabase } from "../postgres.ts";
import { storeContract } from "./store.contract.ts";

const unavailable = await postgresUnavailable();
if (unavailable !== undefined && !postgresRequired()) {
  t.comment(`the PostgreSQL contract is skipped: ${unavailable}`);
} else {
  storeContract(t, {
    schemaVersion: schemaVersion(),
    async open(t) {
      const url = await testDatabase(t);
      const store = await openPostgresStore({ url });
      // Another node's view of the same database: it sees only what is committed (G7).
      const committed = await openPostgresStore({ url });
      t.teardown(() => committed.close());
      return { store, committed };
    },
  });
}
