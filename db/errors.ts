/**
 * What any storage adapter may throw, whatever its engine. Adapters translate their engine's
 * own failures (SQLite result codes, PostgreSQL SQLSTATEs) into these; one place in http/
 * (http/errors.ts) turns them into contract G2 bodies and statuses. Nothing above db/ knows an
 * engine's error code.
 *
 * Every class has a `name` of its own, so that an error that crossed a thread (db/sqlite/thread.ts)
 * is revived as the same class.
 */

/**
 * Why the database cannot take the call right now (O4), in words a client can act on:
 * - `busy`: another process holds a lock;
 * - `full`: the disk (or the database's size cap) is full;
 * - `unavailable`: the file is read-only, unreadable, damaged, or the connection is gone;
 * - `behind`: writes arrive faster than the disk takes them (O2).
 * Nothing of the call was stored; the same call may succeed later.
 */
export type FaultKind = "busy" | "full" | "unavailable" | "behind";

export class StorageFault extends Error {
  override readonly name = "StorageFault";
  constructor(
    readonly kind: FaultKind,
    /** What is wrong, for the client: "the disk is full". */
    readonly reason: string,
    /** `message`: a longer account than `reason`, for logs; `reason` when not given. */
    options: { cause?: unknown; message?: string } = {},
  ) {
    super(options.message ?? reason, { cause: options.cause });
  }
}

/** A write met a row it was not meant to meet (a unique key taken by another writer). */
export class Conflict extends Error {
  override readonly name = "Conflict";
}

/** The database is not at the schema version this code needs (newer, or not migrated). */
export class SchemaMismatch extends Error {
  override readonly name = "SchemaMismatch";
  constructor(
    readonly found: number,
    readonly needed: number,
  ) {
    super(`the database is at schema version ${found}; this server needs ${needed}`);
  }
}

/** A JWT's write ran after the API key the token was issued through was revoked (or removed). */
export class KeyRevoked extends Error {
  override readonly name = "KeyRevoked";
  constructor() {
    super("the API key this JWT was issued through is revoked");
  }
}

export type StorageError = StorageFault | Conflict | SchemaMismatch | KeyRevoked;

/** An error as plain data, to cross a thread or a process; `revive` makes the same class again. */
export interface WireError {
  name: string;
  message: string;
  kind?: FaultKind;
  reason?: string;
  found?: number;
  needed?: number;
  /** An untyped error's own code (a bug's, or a constraint's), kept for logs and tests. */
  code?: string;
}

export function wire(error: unknown): WireError {
  if (error instanceof StorageFault) {
    return { name: error.name, message: error.message, kind: error.kind, reason: error.reason };
  }
  if (error instanceof SchemaMismatch) {
    return { name: error.name, message: error.message, found: error.found, needed: error.needed };
  }
  const e = error as { name?: unknown; message?: unknown; code?: unknown } | null;
  return {
    name: typeof e?.name === "string" ? e.name : "Error",
    message: typeof e?.message === "string" ? e.message : String(error),
    ...(typeof e?.code === "string" ? { code: e.code } : {}),
  };
}

export function revive(error: WireError): Error {
  switch (error.name) {
    case "StorageFault":
      return new StorageFault(error.kind ?? "unavailable", error.reason ?? error.message, { message: error.message });
    case "SchemaMismatch":
      return new SchemaMismatch(error.found ?? 0, error.needed ?? 0);
    case "KeyRevoked":
      return new KeyRevoked();
    case "Conflict":
      return new Conflict(error.message);
  }
  const revived = error.name === "TypeError" ? new TypeError(error.message) : new Error(error.message);
  if (error.name !== "TypeError") revived.name = error.name;
  return error.code === undefined ? revived : Object.assign(revived, { code: error.code });
}
