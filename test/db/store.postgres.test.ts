/** The Store contract (store.contract.ts) on the PostgreSQL adapter, a database of its own per test. */
import t from "tap";
import { schemaVersion } from "../../db/postgres/migrate.ts";
import { openPostgresStore } from "../../db/postgres/store.ts";
import { derivedRows, postgresRequired, postgresUnavailable, testDatabase } from "../postgres.ts";
import { storeContract } from "./store.contract.ts";

const unavailable = await postgresUnavailable();
if (unavailable !== undefined && !postgresRequired()) {
  t.comment(`the PostgreSQL contract is skipped: ${unavailable}`);
} else {
  storeContract(t, {
    schemaVersion: schemaVersion(),
    eventRollups: true,
    async open(t) {
      const url = await testDatabase(t);
      const store = await openPostgresStore({ url });
      // Another node's view of the same database: it sees only what is committed (G7).
      const committed = await openPostgresStore({ url });
      t.teardown(() => committed.close());
      const rows = async () => {
        const { rows: tables } = await committed.pool.query<{ name: string }>(
          "SELECT tablename AS name FROM pg_tables WHERE schemaname = 'public' ORDER BY tablename",
        );
        const counts: Record<string, number> = {};
        for (const { name } of tables) {
          const { rows: n } = await committed.pool.query<{ n: number }>(`SELECT count(*)::int AS n FROM "${name}"`);
          counts[name] = n[0]?.n ?? 0;
        }
        return counts;
      };
      // Every projection's rows, read as the SQLite runners read them (the same SQL), bigints as
      // numbers so that the rebuild comparison weighs values, not spellings.
      const derived = () => derivedRows(committed.pool);
      return { store, committed, rows, derived };
    },
  });
}
