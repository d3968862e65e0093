/** The Store contract (store.contract.ts) on the in-thread SQLite store, on a file. */
import { join } from "node:path";
import t from "tap";
import { schemaVersion } from "../../db/sqlite/migrate.ts";
import { openDb } from "../../db/sqlite/open.ts";
import { sqliteStore } from "../../db/sqlite/store.ts";
import { tempDir } from "../helper.ts";
import { committedReader, derivedRows, tableRows } from "./sqlite-committed.ts";
import { storeContract } from "./store.contract.ts";

storeContract(t, {
  schemaVersion: schemaVersion(),
  eventRollups: true,
  async open(t) {
    const path = join(tempDir(t), "agentmon.db");
    const store = sqliteStore(openDb(path));
    return { store, committed: committedReader(t, path), rows: tableRows(t, path), derived: derivedRows(t, path) };
  },
});
