/** Opening a SQLite database: the file, its pragmas, and its schema brought up to date. */
import { mkdirSync } from "node:fs";
import { dirname } from "node:path";
import Database from "better-sqlite3";
import { migrate } from "./migrate.ts";
import { projectorFunctions } from "./projector.ts";
import { searchFunctions } from "./search.ts";

export type Db = Database.Database;

/**
 * How hard a commit is pushed to the disk (AGENTMON_SYNCHRONOUS). `normal`: WAL with
 * synchronous=NORMAL, a commit survives a crash or kill of the process but the last commits may
 * be lost on an OS crash or power cut; `full`: every commit is fsynced, so it survives those too.
 */
export const SYNCHRONOUS = ["normal", "full"] as const;
export type Synchronous = (typeof SYNCHRONOUS)[number];

export interface DbOptions {
  /** Default `normal`. */
  synchronous?: Synchronous | undefined;
}

/** Opens (creating it if needed) a database file, or `:memory:`, and brings its schema up to date. */
export function openDb(path: string, options: DbOptions = {}): Db {
  if (path !== ":memory:" && path !== "") mkdirSync(dirname(path), { recursive: true });
  const db = new Database(path);
  // A new database gives the pages of deleted rows back to the file system in small steps
  // (Store.reclaimSpace, after a retention sweep). It must be set before the first table; on an
  // older database it takes effect at its next VACUUM (`agentmon vacuum`).
  if (isEmpty(db)) db.pragma("auto_vacuum = INCREMENTAL");
  db.pragma("journal_mode = WAL");
  db.pragma(`synchronous = ${options.synchronous === "full" ? "FULL" : "NORMAL"}`);
  db.pragma("foreign_keys = ON");
  db.pragma("busy_timeout = 5000");
  // 1 MB of page cache instead of 2: the hot pages of a write load (the ends of the indexes of
  // the sessions being written) fit, and the churn of a bigger cache costs resident memory (B5).
  if (!db.memory) db.pragma("cache_size = -1024");
  searchFunctions(db);
  projectorFunctions(db);
  migrate(db);
  return db;
}

const isEmpty = (db: Db) => db.prepare("SELECT count(*) FROM sqlite_schema").pluck().get() === 0;

/** A read-only connection to an existing file, for reads beside the writer (db/sqlite/thread.ts). */
export function openReader(path: string): Db {
  const reader = new Database(path, { readonly: true, fileMustExist: true });
  reader.pragma("busy_timeout = 1000");
  reader.pragma("cache_size = -64");
  searchFunctions(reader);
  projectorFunctions(reader);
  return reader;
}
