/**
 * The storage thread (db/thread.ts starts it; docs/decisions/008-storage-thread.md). It owns the
 * one SQLite connection of a file database: it runs the calls the main thread sends, in the order
 * sent, writes group-committed as before, and answers each call once it has settled (the answers
 * a commit settles go back together, in one message), so that the event loop that parses HTTP
 * requests never waits for SQLite.
 */
import { parentPort, workerData } from "node:worker_threads";
import { priceTable } from "../lib/prices.ts";
import { openDb, type SqliteStore, sqliteStore } from "./sqlite.ts";
import { SchemaMismatch } from "./store.ts";
import type { Call, Reply, StoreThreadData, WireError } from "./thread.ts";

const port = parentPort;
if (port === null) throw new Error("db/store-worker.ts runs as a worker thread (db/thread.ts)");
const data = workerData as StoreThreadData;

/** An error as plain data: name, message and the SQLite code that says what it means (O4). */
function wire(error: unknown): WireError {
  const e = error as { name?: unknown; message?: unknown; code?: unknown };
  return {
    name: typeof e?.name === "string" ? e.name : "Error",
    message: typeof e?.message === "string" ? e.message : String(error),
    ...(typeof e?.code === "string" ? { code: e.code } : {}),
    ...(error instanceof SchemaMismatch ? { found: error.found, needed: error.needed } : {}),
  };
}

let store: SqliteStore;
try {
  store = sqliteStore(openDb(data.path, { synchronous: data.synchronous }), {
    prices: priceTable(data.prices),
  });
} catch (error) {
  port.postMessage({ failed: wire(error) });
  process.exit(0);
}
port.postMessage({ ready: true });

// Answers go back in batches: every call a group commit settles is answered in one message.
let replies: Reply[] = [];
const send = () => {
  port.postMessage(replies);
  replies = [];
};
const answer = (reply: Reply) => {
  if (replies.push(reply) === 1) queueMicrotask(send);
};

port.on("message", ([id, method, args]: Call) => {
  let result: Promise<unknown>;
  try {
    result = (store[method] as (...a: unknown[]) => Promise<unknown>)(...args);
  } catch (error) {
    answer([id, false, wire(error)]);
    return;
  }
  result.then(
    (value) => answer([id, true, value]),
    (error) => answer([id, false, wire(error)]),
  );
});
