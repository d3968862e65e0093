/**
 * WAL checkpoints off the request path (issue 3). SQLite's automatic checkpoint runs inside the
 * commit that crosses the threshold, so every few thousand pages one unlucky group commit also
 * copies the WAL into the database file and syncs it. Here a worker thread
 * (checkpoint-worker.mjs), with its own connection to the same file, runs a PASSIVE checkpoint
 * every `intervalMs` instead: it never blocks the writer, and the writer never checkpoints unless
 * the worker falls far behind (the connection keeps a large automatic threshold as a safety net).
 */
import { Worker } from "node:worker_threads";
import { fromRoot } from "../../lib/paths.ts";

// From the repository root, so that the sources and the bundle (dist/) find the same file.
const WORKER = fromRoot("db/sqlite/checkpoint-worker.mjs");

export interface Checkpointer {
  /** Stops the worker and closes its connection; resolves once it has. */
  stop(): Promise<void>;
}

/**
 * The worker starts `delayMs` after this call, not with it: its thread's start (a Node instance
 * of its own, better-sqlite3 loaded again) would otherwise compete for the CPU with the server's
 * own start and its first requests (B4, docs/decisions/034-cold-start.md). Until then the writer
 * keeps its automatic checkpoint, at the large threshold startCheckpointing sets.
 */
export function startCheckpointer(path: string, intervalMs = 100, delayMs = 1000): Checkpointer {
  let worker: Worker | undefined;
  let exited: Promise<void> = Promise.resolve();
  const start = () => {
    // It allocates next to nothing: a small heap keeps its share of the process's memory small.
    const started = new Worker(WORKER, {
      workerData: { path, intervalMs },
      // Plain JavaScript: none of the loaders the process may run under (a test runner's) is needed.
      execArgv: [],
      resourceLimits: { maxYoungGenerationSizeMb: 1, maxOldGenerationSizeMb: 16 },
    });
    started.unref();
    exited = new Promise<void>((resolve) => started.once("exit", () => resolve()));
    started.on("error", () => {}); // it can only fail to open the file; the writer then checkpoints
    worker = started;
  };
  const timer = setTimeout(start, delayMs).unref();
  let stopping: Promise<void> | undefined;
  return {
    stop() {
      stopping ??= (async () => {
        clearTimeout(timer);
        if (worker === undefined) return;
        const running = worker;
        const stopped = new Promise<void>((resolve) => running.once("message", () => resolve()));
        running.postMessage("stop");
        await Promise.race([stopped, exited, new Promise((resolve) => setTimeout(resolve, 2000).unref())]);
        await running.terminate();
      })();
      return stopping;
    },
  };
}
