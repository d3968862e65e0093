// @ts-check
/**
 * The checkpointer's thread (checkpointer.ts starts it). Plain JavaScript, checked by tsc
 * (`// @ts-check`, JSDoc types) and Biome like the rest, so that the same file runs from the
 * sources and beside the bundle without a TypeScript loader in the thread.
 */
import { createRequire } from "node:module";
import { parentPort, workerData } from "node:worker_threads";

/** @type {{ path: string, intervalMs: number }} */
const { path, intervalMs } = workerData;
/** @type {typeof import("better-sqlite3")} */
const Database = createRequire(import.meta.url)("better-sqlite3");
const db = new Database(path, { fileMustExist: true });
db.pragma("busy_timeout = 1000");
db.pragma("cache_size = -64");

const checkpoint = () => {
  try {
    db.pragma("wal_checkpoint(PASSIVE)");
  } catch {
    // a full or read-only disk: the next round tries again, and writes report the fault
  }
};
const timer = setInterval(checkpoint, intervalMs);
parentPort?.on("message", () => {
  clearInterval(timer);
  try {
    db.close();
  } finally {
    parentPort?.postMessage("stopped");
  }
});
