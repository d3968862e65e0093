/**
 * SQLite's failures as the typed errors of db/errors.ts. Only this file knows SQLite's result
 * codes; everything above db/ sees a StorageFault with a kind and a reason a client can act on.
 */
import { Conflict, StorageFault } from "../errors.ts";

/** What a storage failure means for a client, by SQLite's extended result code (O4). */
const FAULTS: [RegExp, StorageFault["kind"], string][] = [
  [/^SQLITE_FULL/, "full", "the disk is full"],
  [/^SQLITE_READONLY/, "unavailable", "the database file is read-only"],
  [/^SQLITE_(BUSY|LOCKED)/, "busy", "the database is locked by another process"],
  [/^SQLITE_(IOERR|PROTOCOL)/, "unavailable", "the disk reported an I/O error"],
  [/^SQLITE_CANTOPEN/, "unavailable", "the database file cannot be opened"],
  [/^SQLITE_(CORRUPT|NOTADB)/, "unavailable", "the database file is damaged"],
];

/**
 * SQLite codes that are the database's condition, not the call's (a full disk, an I/O error, a
 * lock, no memory, ...). SQLite may end the whole transaction on these on its own ("Response To
 * Errors Within A Transaction"); whether it did or not, they fail the whole group commit, so that
 * the outcome does not depend on which it chose.
 */
const GROUP_FAULT = /^SQLITE_(FULL|IOERR|BUSY|LOCKED|NOMEM|READONLY|CORRUPT|NOTADB|CANTOPEN|PROTOCOL)/;

const codeOf = (error: unknown) => {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === "string" ? code : undefined;
};

export const failsTheGroup = (error: unknown) => GROUP_FAULT.test(codeOf(error) ?? "");

/** The typed error for an error of better-sqlite3; any other error is answered as it is. */
export function translate(error: unknown): unknown {
  // better-sqlite3 says this (a TypeError, no code) once the connection is closed, e.g. while stopping.
  if (error instanceof TypeError && error.message === "The database connection is not open") {
    return new StorageFault("unavailable", "the server is stopping", { cause: error });
  }
  const code = codeOf(error);
  if (code === undefined || !code.startsWith("SQLITE_")) return error;
  const fault = FAULTS.find(([pattern]) => pattern.test(code));
  if (fault) return new StorageFault(fault[1], fault[2], { cause: error });
  if (code === "SQLITE_CONSTRAINT_UNIQUE" || code === "SQLITE_CONSTRAINT_PRIMARYKEY") {
    return new Conflict("a row with this key was written by another call", { cause: error });
  }
  return error;
}

/** Rethrows an error as its typed error. */
export const rethrow = (error: unknown): never => {
  throw translate(error);
};
