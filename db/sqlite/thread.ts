/**
 * A file database's store on its own thread (docs/decisions/008-storage-thread.md): the main
 * thread keeps HTTP, JSON and validation; a worker (thread-worker.ts) keeps the SQLite
 * connection, so that one core parses requests while the other writes. This module is the main
 * thread's side: a `Store` whose every call is a message. A call settles when the worker answers,
 * and the worker answers a write only once it is committed (G7), as the store in-thread does.
 *
 * The dispatch is derived, not listed: the worker says which methods its store has, every one is
 * forwarded, and `Call` is typed from `SqliteStore`, so a new Store method needs no edit here and
 * a wrong argument is a tsc error. API keys are read here, on a read-only connection of this
 * thread's own (keyReader), and event rows are built here (see insertEvents).
 */
import { Worker } from "node:worker_threads";
import type { PriceEntry } from "../../domain/prices.ts";
import { wordsOf } from "../../domain/search.ts";
import { revive, StorageFault, type WireError } from "../errors.ts";
import { eventRow } from "../rows.ts";
import type { Store } from "../store.ts";
import { rethrow } from "./errors.ts";
import { GROUP_MAX_ROWS } from "./group-commit.ts";
import { keyReader } from "./keys.ts";
import { openReader, type Synchronous } from "./open.ts";
import type { SqliteStore } from "./store.ts";
import { rowsOf, traceRows } from "./traces.ts";

export interface StoreThreadData {
  path: string;
  /** Default MAX_BACKLOG_ROWS. */
  maxBacklog?: number;
  synchronous?: Synchronous;
  /** Overrides of the shipped price table (AGENTMON_PRICES), for update_events' re-pricing. */
  prices?: PriceEntry[];
}

/** What the worker may be asked: every method of the in-thread store. */
type Remote = Omit<SqliteStore, "commits">;
export type Method = keyof Remote;
export type Call = { [M in Method]: [id: number, method: M, args: Parameters<Remote[M]>] }[Method];
export type Reply = [id: number, ok: true, value: unknown] | [id: number, ok: false, error: WireError];
/** The worker's first message: ready, with its store's methods, or why it could not open. */
export type Hello = { methods: Method[] } | { failed: WireError };

/** A call of at most this many rows is sent with the others of its turn of the event loop. */
const SMALL_CALL_ROWS = 10;

/** Rows sent to the storage thread and not yet answered, at most (two full group commits). */
export const MAX_BACKLOG_ROWS = 2 * GROUP_MAX_ROWS;

const SOURCE = import.meta.url.endsWith(".ts");
// Bundled, this module is part of dist/agentmon.mjs and the worker is dist/store-worker.mjs.
const WORKER = new URL(SOURCE ? "./thread-worker.ts" : "./store-worker.mjs", import.meta.url);

export interface ThreadOptions extends StoreThreadData {
  /** Called once if the worker stops on its own (a crash, not close()), with what happened. */
  onFailure?: (error: Error) => void;
}

export interface ThreadedStore extends Store {
  /** The worker: tests stop it to see what its death does. */
  readonly thread: Worker;
}

function startWorker(data: StoreThreadData): Worker {
  const settings = {
    workerData: data,
    // It holds a few calls' rows at a time: a small young generation keeps its memory small.
    resourceLimits: { maxYoungGenerationSizeMb: 8 },
  };
  // The sources (tests, the tsx fallback of bin/agentmon.js) need the TypeScript loader in the
  // worker too, registered from inside it; the bundle needs nothing.
  return SOURCE
    ? new Worker(
        `import(${JSON.stringify(import.meta.resolve("tsx/esm/api"))})
          .then((tsx) => { tsx.register(); return import(${JSON.stringify(WORKER.href)}); })`,
        { ...settings, eval: true },
      )
    : new Worker(WORKER, settings);
}

/** Waits for the worker's first message: the methods of its store, once the database is open. */
async function hello(worker: Worker): Promise<Method[]> {
  try {
    return await new Promise<Method[]>((resolve, reject) => {
      worker.once("error", reject);
      worker.once("exit", (code) => reject(new Error(`the storage thread exited with code ${code}`)));
      worker.once("message", (first: Hello) => {
        worker.off("error", reject);
        worker.removeAllListeners("exit");
        if ("failed" in first) reject(revive(first.failed));
        else resolve(first.methods);
      });
    });
  } catch (error) {
    await worker.terminate();
    throw error;
  }
}

/**
 * The calls in flight to the worker: each is a message, settled by the worker's answer. The rows
 * sent and not yet answered are bounded (O2): past the bound a call fails at once, with nothing
 * stored, instead of queueing without end while the disk cannot keep up. Small calls (reads, one
 * event) made in one turn of the event loop go in one message: a message's fixed cost was a tenth
 * of the main thread's time under B2. A large call goes at once: batching those measured slower,
 * since the worker then waits idle while the next bodies are parsed (issue 3).
 */
class Channel {
  readonly #pending = new Map<
    number,
    { rows: number; resolve: (value: unknown) => void; reject: (e: Error) => void }
  >();
  readonly #worker: Worker;
  readonly #maxBacklog: number;
  #backlog = 0;
  #nextId = 0;
  #outbox: Call[] = [];
  readonly #send = () => {
    if (this.#outbox.length === 0) return;
    const calls = this.#outbox;
    this.#outbox = [];
    this.#worker.postMessage(calls);
  };
  /** Why every call fails from now on, once the worker has stopped. */
  failure: StorageFault | undefined;

  constructor(worker: Worker, maxBacklog: number) {
    this.#worker = worker;
    this.#maxBacklog = maxBacklog;
    worker.on("message", (replies: Reply[]) => {
      for (const [id, ok, value] of replies) this.#settle(id, ok, value);
    });
  }

  call<M extends Method>(method: M, args: Parameters<Remote[M]>, rows = 1): ReturnType<Remote[M]> {
    return new Promise<unknown>((resolve, reject) => {
      if (this.failure !== undefined) return reject(this.failure);
      // A call of no rows (stats) is never refused: it is how a struggling store is watched.
      if (rows > 0 && this.#backlog > 0 && this.#backlog + rows > this.#maxBacklog) {
        return reject(new StorageFault("behind", "writes arrive faster than the disk takes them"));
      }
      const id = this.#nextId++;
      this.#backlog += rows;
      this.#pending.set(id, { rows, resolve, reject });
      // A small call waits for the others of this turn of the event loop: one message for all.
      // A large one goes at once (after those waiting, in order), as the worker would otherwise
      // wait idle while the next large bodies are parsed (issue 3).
      if (rows > SMALL_CALL_ROWS) {
        if (this.#outbox.length > 0) this.#send();
        this.#worker.postMessage([[id, method, args]]);
      } else if (this.#outbox.push([id, method, args] as Call) === 1) setImmediate(this.#send);
    }) as unknown as ReturnType<Remote[M]>;
  }

  /** The calls sent and not answered yet, the rows they carry, and the bound on those rows (O2). */
  load() {
    return { pendingCalls: this.#pending.size, backlogRows: this.#backlog, maxBacklogRows: this.#maxBacklog };
  }

  /**
   * Fails every call in flight and every later one, for `reason` (a client's words, O4); true the
   * first time.
   */
  fail(what: string, reason = "the storage thread stopped"): boolean {
    const first = this.failure === undefined;
    this.failure ??= new StorageFault("unavailable", reason, { message: `the storage thread ${what}` });
    for (const { reject } of this.#pending.values()) reject(this.failure);
    this.#pending.clear();
    this.#outbox = [];
    this.#backlog = 0;
    return first;
  }

  #settle(id: number, ok: boolean, value: unknown) {
    const call = this.#pending.get(id);
    if (call === undefined) return;
    this.#pending.delete(id);
    this.#backlog -= call.rows;
    if (ok) call.resolve(value);
    else call.reject(revive(value as WireError));
  }
}

/** Key lookups on this thread's reader, failing as typed errors as the store's do. */
const typed =
  <A extends unknown[], R>(read: (...args: A) => R) =>
  async (...args: A): Promise<R> => {
    try {
      return read(...args);
    } catch (error) {
      return rethrow(error);
    }
  };

/** Starts the storage thread on `path` and resolves once its database is open and migrated. */
export async function openThreadedStore(options: ThreadOptions): Promise<ThreadedStore> {
  const { onFailure, ...data } = options;
  const worker = startWorker(data);
  const methods = await hello(worker);
  const channel = new Channel(worker, options.maxBacklog ?? MAX_BACKLOG_ROWS);
  let closing = false;
  const fail = (what: string) => {
    if (channel.fail(what) && !closing) onFailure?.(channel.failure as StorageFault);
  };
  worker.on("error", (error) => fail(`failed: ${error.message}`));
  // Once closed, a call fails as it does on a closed in-thread store: the server is stopping.
  worker.on("exit", (code) =>
    closing ? channel.fail("was stopped", "the server is stopping") : fail(`stopped unexpectedly (exit code ${code})`),
  );

  // API-key checks read here, without a round trip (see keyReader): a read of a few pages, and a
  // revoke committed by any process is seen by the next request. (A JWT's key is checked by the
  // worker, inside its write's transaction.)
  let reader: ReturnType<typeof openReader>;
  try {
    reader = openReader(options.path);
  } catch (error) {
    await worker.terminate();
    throw error;
  }
  const keys = keyReader(reader);

  const forwarded = Object.fromEntries(
    methods.map((method) => [method, (...args: Parameters<Remote[typeof method]>) => channel.call(method, args)]),
  ) as unknown as Remote;
  let closed: Promise<void> | undefined;
  return {
    ...forwarded,
    thread: worker,
    apiKeyByHash: typed(keys.byHash),
    apiKeyById: typed(keys.byId),
    // The rows' JSON and the search index's words are made here, on the main thread, from the
    // parsed request, so that the storage thread only writes.
    insertEvents: (projectId, sessionId, events, keyId) =>
      channel.call(
        "insertEventRows",
        [projectId, sessionId, events.map(eventRow), keyId, wordsOf(events)],
        events.length,
      ),
    // The storage thread's own figures (its group commit, the file's size), asked for at each
    // scrape, with this side's queue of calls to it (docs/decisions/012-metrics.md).
    stats: async () => {
      const thread = channel.load();
      return { ...(await channel.call("stats", [], 0)), thread };
    },
    // The same for spans; the call counts its rows toward the backlog bound (O2), as create_events does.
    ingestTraces: (projectId, writes, keyId) => {
      const rows = writes.map(traceRows);
      return channel.call("ingestTraceRows", [projectId, rows, keyId], rowsOf(rows));
    },
    close() {
      closed ??= (async () => {
        // The reader goes first, so that the worker's connection is the last and removes the WAL.
        reader.close();
        // Queued calls are sent first and the worker runs them before closing: none is dropped.
        if (channel.failure === undefined) await channel.call("close", []).catch(() => {});
        closing = true;
        await worker.terminate();
      })();
      return closed;
    },
  };
}
