/**
 * `agentmon vacuum`: SQLite only. Rewrites the database file (VACUUM) with auto_vacuum =
 * INCREMENTAL, so that a file made before agentmon turned it on shrinks after deletes from then
 * on (the retention sweep gives pages back in small steps); it also gives back every free page
 * now. It holds the write lock for the whole rewrite: writes of a running server wait for it
 * (and fail with 503 past 5 seconds), so run it while the server is stopped or quiet. PostgreSQL
 * reuses the space of deleted rows through (auto)vacuum: nothing to do there.
 */
import { statSync } from "node:fs";
import { openDb } from "../db/sqlite/open.ts";
import type { Config, Output } from "./config.ts";
import { databaseName } from "./storage.ts";

const size = (path: string) => statSync(path, { throwIfNoEntry: false })?.size ?? 0;

export async function vacuum(config: Config, io: Output) {
  if (config.databaseUrl !== undefined) {
    io.out(
      "agentmon: PostgreSQL reuses the space of deleted rows through autovacuum; nothing to do (no VACUUM FULL needed).",
    );
    return 0;
  }
  const db = openDb(config.db);
  try {
    const before = size(config.db) + size(`${config.db}-wal`);
    const mode = Number(db.pragma("auto_vacuum", { simple: true }));
    io.err(`agentmon: vacuuming ${databaseName(config)}; writes wait until it ends`);
    db.pragma("auto_vacuum = INCREMENTAL");
    db.exec("VACUUM");
    db.pragma("wal_checkpoint(TRUNCATE)");
    const after = size(config.db) + size(`${config.db}-wal`);
    io.out(
      `Vacuumed ${databaseName(config)}: ${before} bytes before, ${after} after; incremental auto-vacuum is ${mode === 2 ? "still" : "now"} on.`,
    );
    return 0;
  } finally {
    db.close();
  }
}
