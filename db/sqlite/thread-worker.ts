/**
 * The storage thread (thread.ts starts it; docs/decisions/008-storage-thread.md). It owns the one
 * SQLite connection of a file database: it runs the calls the main thread sends, in the order
 * sent, writes group-committed as in-thread, and answers each call once it has settled (the
 * answers a commit settles go back together, in one message), so that the event loop that
 * parses HTTP requests never waits for SQLite.
 */
import { parentPort, workerData } from "node:worker_threads";
import { wire } from "../errors.ts";
import { openDb } from "./open.ts";
import { type SqliteStore, sqliteStore } from "./store.ts";
import type { Call, Hello, Method, Reply, StoreThreadData } from "./thread.ts";

const port = parentPort;
if (port === null) throw new Error("db/sqlite/thread-worker.ts runs as a worker thread (db/sqlite/thread.ts)");
const data = workerData as StoreThreadData;

let store: SqliteStore;
try {
  store = sqliteStore(openDb(data.path, { synchronous: data.synchronous }), { priceOverrides: data.prices });
} catch (error) {
  port.postMessage({ failed: wire(error) } satisfies Hello);
  process.exit(0);
}
const methods = Object.keys(store).filter((name) => typeof store[name as Method] === "function") as Method[];
port.postMessage({ methods } satisfies Hello);

// Answers go back in batches: every call a group commit settles is answered in one message.
let replies: Reply[] = [];
const send = () => {
  port.postMessage(replies);
  replies = [];
};
const answer = (reply: Reply) => {
  if (replies.push(reply) === 1) queueMicrotask(send);
};

port.on("message", (calls: Call[]) => {
  for (const call of calls) run(call);
});
function run([id, method, args]: Call) {
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
}
