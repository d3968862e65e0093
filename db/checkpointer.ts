/**
 * WAL checkpoints off the request path (issue 3). SQLite's automatic checkpoint runs inside the
 * commit that crosses the threshold, so every few thousand pages one unlucky group commit also
 * copies the WAL into the database file and syncs it, on the event loop. Here a worker thread,
 * with its own connection to the same file, runs a PASSIVE checkpoint every `intervalMs`
 * instead: it never blocks the writer, and the writer never checkpoints unless the worker falls
 * far behind (the connection keeps a large automatic threshold as a safety net).
 */
import { createRequire } from "node:module";
import { Worker } from "node:worker_threads";

const WORKER = `
const { workerData, parentPort } = require("node:worker_threads");
const Database = require(workerData.module);
const db = new Database(workerData.path, { fileMustExist: true });
db.pragma("busy_timeout = 1000");
db.pragma("cache_size = -64");
const checkpoint = () => {
  try {
    db.pragma("wal_checkpoint(PASSIVE)");
  } catch {
    // a full or read-only disk: the next round tries again, and writes report the fault
  }
};
const timer = setInterval(checkpoint, workerData.intervalMs);
parentPort.on("message", () => {
  clearInterval(timer);
  try {
    db.close();
  } finally {
    parentPort.postMessage("stopped");
  }
});
`;

export interface Checkpointer {
  /** Stops the worker and closes its connection; resolves once it has. */
  stop(): Promise<void>;
}

export function startCheckpointer(path: string, intervalMs = 100): Checkpointer {
  const module = createRequire(import.meta.url).resolve("better-sqlite3");
  // It allocates next to nothing: a small heap keeps its share of the process's memory small.
  const worker = new Worker(WORKER, {
    eval: true,
    workerData: { path, module, intervalMs },
    resourceLimits: { maxYoungGenerationSizeMb: 1, maxOldGenerationSizeMb: 16 },
  });
  worker.unref();
  const exited = new Promise<void>((resolve) => worker.once("exit", () => resolve()));
  worker.on("error", () => {}); // it can only fail to open the file; the writer then checkpoints
  let stopping: Promise<void> | undefined;
  return {
    stop() {
      stopping ??= (async () => {
        const stopped = new Promise<void>((resolve) => worker.once("message", () => resolve()));
        worker.postMessage("stop");
        await Promise.race([stopped, exited, new Promise((resolve) => setTimeout(resolve, 2000).unref())]);
        await worker.terminate();
      })();
      return stopping;
    },
  };
}
