/**
 * What the two group commits (db/sqlite/group-commit.ts, db/postgres/group-commit.ts) share: how
 * a group is taken from the queue, and the figures GET /metrics shows of them
 * (docs/decisions/012-metrics.md). Only the adapters import this file (.dependency-cruiser.mjs).
 */
import { Histogram } from "../lib/histogram.ts";
import type { StorageStats } from "./store.ts";

/** What a group commit has done and holds: plain numbers, read by the store's stats(). */
export type GroupStats = Omit<StorageStats, "databaseBytes" | "walBytes" | "thread">;

/** Bucket bounds of the group figures. */
const CALL_BOUNDS = [1, 2, 5, 10, 20, 50, 100, 200, 500];
const ROW_BOUNDS = [1, 10, 100, 500, 1000, 2500, 5000, 10_000, 25_000];
const SECOND_BOUNDS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5];

/**
 * The first queued calls, in call order, up to `maxCalls` calls or `maxRows` rows (always at
 * least one: a call is never split, one bigger than the row cap is a group of its own); they
 * leave the queue. Answers them and their rows.
 */
export function takeGroup<C>(queue: C[], rowsOf: (call: C) => number, maxCalls: number, maxRows: number) {
  let calls = 0;
  let rows = 0;
  for (const call of queue) {
    if (calls === maxCalls || (calls > 0 && rows + rowsOf(call) > maxRows)) break;
    calls++;
    rows += rowsOf(call);
  }
  return { group: queue.splice(0, calls), rows };
}

/** Group transactions committed and failed, and the histograms of the committed ones. */
export class GroupFigures {
  commits = 0;
  failed = 0;
  // A few additions per group, not per call.
  readonly #groupCalls = new Histogram(CALL_BOUNDS);
  readonly #groupRows = new Histogram(ROW_BOUNDS);
  readonly #commitSeconds = new Histogram(SECOND_BOUNDS);

  /** A group of `calls` calls and `rows` rows committed, `seconds` from BEGIN to the end of COMMIT. */
  committed(calls: number, rows: number, seconds: number) {
    this.commits++;
    this.#groupCalls.observe(calls);
    this.#groupRows.observe(rows);
    this.#commitSeconds.observe(seconds);
  }

  snapshot(queuedCalls: number, queuedRows: number): GroupStats {
    return {
      queuedCalls,
      queuedRows,
      committedGroups: this.commits,
      failedGroups: this.failed,
      groupCalls: this.#groupCalls.snapshot(),
      groupRows: this.#groupRows.snapshot(),
      commitSeconds: this.#commitSeconds.snapshot(),
    };
  }
}
