/**
 * PostgreSQL's failures as the typed errors of db/errors.ts. Only this file knows SQLSTATEs and
 * node-postgres' connection errors; everything above db/ sees a StorageFault with a kind and a
 * reason a client can act on (O4), or a Conflict.
 */
import { Conflict, StorageFault } from "../errors.ts";

/** What a failure means for a client, by SQLSTATE (exact, or its two-character class). */
const FAULTS: [RegExp, StorageFault["kind"], string][] = [
  [/^53100$/, "full", "the database's disk is full"],
  [/^(53|55P03|40P01|40001)/, "busy", "the database is busy; try again"],
  [/^(08|57P0[1-3]|58|XX)/, "unavailable", "the database cannot be reached"],
  [/^25006$/, "unavailable", "the database is read-only"],
];

/** Node's errors of a lost or refused connection, and node-postgres' own. */
const CONNECTION = /^(ECONNREFUSED|ECONNRESET|EPIPE|ETIMEDOUT|ENOTFOUND|EHOSTUNREACH|EAI_AGAIN)$/;
const CONNECTION_MESSAGE =
  /Connection terminated|Client has encountered a connection error|Client was closed|Cannot use a pool after calling end|timeout exceeded when trying to connect/;

const codeOf = (error: unknown) => {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === "string" ? code : undefined;
};

/** Deadlocks and serialization failures: the same calls may succeed when run again. */
export const isRetryable = (error: unknown) => /^(40P01|40001)$/.test(codeOf(error) ?? "");

/**
 * The database's condition, not the call's: the connection, the disk, the server. They fail a
 * whole group commit; an error of one call's own (a constraint, a bug) fails that call alone.
 */
export function isFault(error: unknown): boolean {
  if (error instanceof StorageFault) return true;
  const code = codeOf(error) ?? "";
  if (CONNECTION.test(code)) return true;
  if (FAULTS.some(([pattern]) => pattern.test(code))) return true;
  return code === "" && error instanceof Error && CONNECTION_MESSAGE.test(error.message);
}

/** The typed error for an error of node-postgres; any other error is answered as it is. */
export function translate(error: unknown): unknown {
  if (error instanceof StorageFault || error instanceof Conflict) return error;
  const code = codeOf(error) ?? "";
  if (code === "23505") return new Conflict("a row with this key was written by another call", { cause: error });
  const fault = FAULTS.find(([pattern]) => pattern.test(code));
  if (fault) return new StorageFault(fault[1], fault[2], { cause: error, message: `${fault[2]}: ${String(error)}` });
  if (isFault(error)) {
    return new StorageFault("unavailable", "the database cannot be reached", {
      cause: error,
      message: `the database cannot be reached: ${String(error)}`,
    });
  }
  return error;
}

/** Rethrows an error as its typed error. */
export const rethrow = (error: unknown): never => {
  throw translate(error);
};
