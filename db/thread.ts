/**
 * A file database's store on its own thread (docs/decisions/008-storage-thread.md): the main
 * thread keeps HTTP, JSON and validation; a worker (db/store-worker.ts) keeps the SQLite
 * connection, so that one core parses requests while the other writes. This module is the main
 * thread's side: a `Store` whose every call is a message. A call settles when the worker answers,
 * and the worker answers a write only once it is committed (G7), as the store in-thread does.
 * API keys are read here, on a read-only connection of this thread's own (keyReader).
 */
import { Worker } from "node:worker_threads";
import Database from "better-sqlite3";
import type { PriceEntry } from "../lib/prices.ts";
import { eventRow, GROUP_MAX_ROWS, keyReader, type SqliteStore, type Synchronous } from "./sqlite.ts";
import { SchemaMismatch, type Store } from "./store.ts";

export interface StoreThreadData {
  path: string;
  /** Default MAX_BACKLOG_ROWS. */
  maxBacklog?: number;
  synchronous?: Synchronous;
  /** Overrides of the shipped price table (AGENTMON_PRICES), for update_events' re-pricing. */
  prices?: PriceEntry[];
}

type Method = Exclude<keyof SqliteStore, "commits">;
export type Call = [id: number, method: Method, args: unknown[]];
export type Reply = [id: number, ok: true, value: unknown] | [id: number, ok: false, error: WireError];
export interface WireError {
  name: string;
  message: string;
  code?: string;
  /** Set for a SchemaMismatch only. */
  found?: number;
  needed?: number;
}

/** The code of a failure of the storage thread itself: handlers answer it 503 (O4). */
export const THREAD_FAULT = "AGENTMON_STORAGE_THREAD";
/** The code of a call refused because the storage thread has too many rows to write: 503 (O2). */
export const BEHIND = "AGENTMON_STORAGE_BEHIND";
/** Rows sent to the storage thread and not yet answered, at most (two full group commits). */
export const MAX_BACKLOG_ROWS = 2 * GROUP_MAX_ROWS;

const SOURCE = import.meta.url.endsWith(".ts");
// Bundled, this module is part of dist/agentmon.mjs and the worker is dist/store-worker.mjs.
const WORKER = new URL(SOURCE ? "./store-worker.ts" : "./store-worker.mjs", import.meta.url);

function revive(error: WireError): Error {
  if (error.found !== undefined && error.needed !== undefined) return new SchemaMismatch(error.found, error.needed);
  const revived = error.name === "TypeError" ? new TypeError(error.message) : new Error(error.message);
  if (error.name !== "TypeError") revived.name = error.name;
  return error.code === undefined ? revived : Object.assign(revived, { code: error.code });
}

export interface ThreadOptions extends StoreThreadData {
  /** Called once if the worker stops on its own (a crash, not close()), with the error calls get. */
  onFailure?: (error: Error) => void;
}

export interface ThreadedStore extends Store {
  /** The worker: tests stop it to see what its death does. */
  readonly thread: Worker;
}

/** Starts the storage thread on `path` and resolves once its database is open and migrated. */
export async function openThreadedStore(options: ThreadOptions): Promise<ThreadedStore> {
  const { onFailure, ...data } = options;
  const maxBacklog = options.maxBacklog ?? MAX_BACKLOG_ROWS;
  const settings = {
    workerData: data,
    // It holds a few calls' rows at a time: a small young generation keeps its memory small.
    resourceLimits: { maxYoungGenerationSizeMb: 8 },
  };
  // The sources (tests, the tsx fallback of bin/agentmon.js) need the TypeScript loader in the
  // worker too, registered from inside it; the bundle needs nothing.
  const worker = SOURCE
    ? new Worker(
        `import(${JSON.stringify(import.meta.resolve("tsx/esm/api"))})
          .then((tsx) => { tsx.register(); return import(${JSON.stringify(WORKER.href)}); })`,
        { ...settings, eval: true },
      )
    : new Worker(WORKER, settings);
  /** Calls sent and not yet answered, with the rows each holds (the backlog, below). */
  const pending = new Map<
    number,
    { rows: number; resolve: (value: unknown) => void; reject: (error: Error) => void }
  >();
  let backlog = 0;
  let failure: Error | undefined;
  let closing = false;
  const fail = (reason: string) => {
    const first = failure === undefined;
    failure ??= Object.assign(new Error(`the storage thread ${reason}`), { code: THREAD_FAULT });
    for (const { reject } of pending.values()) reject(failure);
    pending.clear();
    backlog = 0;
    if (first && !closing) onFailure?.(failure);
  };

  await new Promise<void>((resolve, reject) => {
    const early = (error: Error) => reject(error);
    worker.once("error", early);
    worker.once("exit", (code) => reject(new Error(`the storage thread exited with code ${code}`)));
    worker.once("message", (first: { ready?: true; failed?: WireError }) => {
      worker.off("error", early);
      if (first.failed) reject(revive(first.failed));
      else resolve();
    });
  }).catch(async (error) => {
    await worker.terminate();
    throw error;
  });
  worker.removeAllListeners("exit");
  worker.on("message", (replies: Reply[]) => {
    for (const [id, ok, value] of replies) {
      const call = pending.get(id);
      if (call === undefined) continue;
      pending.delete(id);
      backlog -= call.rows;
      if (ok) call.resolve(value);
      else call.reject(revive(value));
    }
  });
  worker.on("error", (error) => fail(`failed: ${error.message}`));
  worker.on("exit", (code) => fail(closing ? "was stopped" : `stopped unexpectedly (exit code ${code})`));

  // API-key checks read here, without a round trip (see keyReader): a read of a few pages, and a
  // revoke committed by any process is seen by the next request. (A JWT's key is checked by the
  // worker, inside its write's transaction: app.ts checkJwt.)
  let reader: Database.Database;
  try {
    reader = new Database(options.path, { readonly: true, fileMustExist: true });
    reader.pragma("busy_timeout = 1000");
    reader.pragma("cache_size = -64");
  } catch (error) {
    await worker.terminate();
    throw error;
  }
  const keys = keyReader(reader);

  // Each call goes at once: batching them (per turn of the event loop, or while the worker is
  // busy) measured slower, since the worker then waits idle while calls gather (issue 3). The
  // rows sent and not yet answered are bounded (O2): past the bound a call fails at once, with
  // nothing stored, instead of queueing without end while the disk cannot keep up.
  let nextId = 0;
  const call = (method: Method, args: unknown[], rows = 1) =>
    new Promise<unknown>((resolve, reject) => {
      if (failure !== undefined) return reject(failure);
      if (backlog > 0 && backlog + rows > maxBacklog) {
        return reject(Object.assign(new Error("the storage thread is behind"), { code: BEHIND }));
      }
      const id = nextId++;
      backlog += rows;
      pending.set(id, { rows, resolve, reject });
      worker.postMessage([id, method, args] satisfies Call);
    });
  const forward =
    <M extends Method>(method: M) =>
    (...args: unknown[]) =>
      call(method, args) as ReturnType<SqliteStore[M]>;

  let closed: Promise<void> | undefined;
  return {
    thread: worker,
    metaValue: forward("metaValue"),
    createApiKey: forward("createApiKey"),
    apiKeyByHash: keys.apiKeyByHash,
    apiKeyById: keys.apiKeyById,
    listApiKeys: forward("listApiKeys"),
    revokeApiKey: forward("revokeApiKey"),
    createSession: forward("createSession"),
    getSession: forward("getSession"),
    updateSession: forward("updateSession"),
    tokenCost: forward("tokenCost"),
    listSessions: forward("listSessions"),
    readSession: forward("readSession"),
    listEventsPage: forward("listEventsPage"),
    deleteSession: forward("deleteSession"),
    // The rows' JSON is built here, on the main thread, so that the storage thread only writes.
    insertEvents: (projectId, sessionId, events, keyId) =>
      call("insertEventRows", [projectId, sessionId, events.map(eventRow), keyId], events.length) as Promise<boolean>,
    updateEvents: forward("updateEvents"),
    listEvents: forward("listEvents"),
    upsertAgent: forward("upsertAgent"),
    listAgents: forward("listAgents"),
    ping: forward("ping"),
    close() {
      closed ??= (async () => {
        // The reader goes first, so that the worker's connection is the last and removes the WAL.
        reader.close();
        // Queued calls are sent first and the worker runs them before closing: none is dropped.
        if (failure === undefined) await call("close", []).catch(() => {});
        closing = true;
        await worker.terminate();
      })();
      return closed;
    },
  };
}
