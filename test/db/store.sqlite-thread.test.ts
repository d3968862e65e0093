/** The Store contract (store.contract.ts) on the storage thread, the store production uses for a file. */
import { join } from "node:path";
import t from "tap";
import { schemaVersion } from "../../db/sqlite/migrate.ts";
import { openThreadedStore } from "../../db/sqlite/thread.ts";
import { tempDir } from "../helper.ts";
import { committedReader, derivedRows, tableRows } from "./sqlite-committed.ts";
import { storeContract } from "./store.contract.ts";

storeContract(t, {
  schemaVersion: schemaVersion(),
  eventRollups: true,
  async open(t) {
    const path = join(tempDir(t), "agentmon.db");
    const store = await openThreadedStore({ path });
    return { store, committed: committedReader(t, path), rows: tableRows(t, path), derived: derivedRows(t, path) };
  },
});
