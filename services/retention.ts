/**
 * Retention and bulk delete (issue 16 parts 1 and 2, docs/decisions/020-retention.md). Both remove
 * whole sessions in small batches (Store.deleteSessions): each batch is one short write
 * transaction of the group commit, and the next one waits as long as that one took, so request
 * writes get the writer at least half the time. A batch is atomic: an interrupted run has removed
 * whole sessions only, and running it again finishes it.
 */
import { setTimeout as sleep } from "node:timers/promises";
import type { Store } from "../db/store.ts";
import type { Position, SessionFilter } from "../domain/types.ts";

/** At most this many sessions, or (past the first session) this many events, per transaction. */
export const BATCH = { maxSessions: 100, maxEvents: 10_000 };
/** Pages (4 KiB) given back to the file system per step after a sweep. */
const RECLAIM_PAGES = 2048;
const DAY_US = 86_400_000_000;

export interface Removed {
  sessions: number;
  events: number;
}

export interface BatchOptions {
  /** As BATCH. */
  maxSessions?: number;
  maxEvents?: number;
  /** Stops between batches when it answers true (the server is closing). */
  stopped?: () => boolean;
  /** Called after each batch with what it removed. */
  onBatch?: (removed: Removed) => void;
}

/** Waits about as long as the last step took (at least a turn of the event loop). */
const yieldAfter = (started: number) => sleep(Math.min(1000, performance.now() - started));

/**
 * The project's sessions matching `filter` (as listSessions matches them), removed batch by batch
 * with their events, agents, logs and span records; with `dryRun`, counted the same way and kept.
 */
export async function deleteSessions(
  store: Store,
  projectId: string,
  filter: SessionFilter,
  dryRun: boolean,
  options: BatchOptions = {},
): Promise<Removed> {
  const batch = {
    maxSessions: options.maxSessions ?? BATCH.maxSessions,
    maxEvents: options.maxEvents ?? BATCH.maxEvents,
    dryRun,
  };
  const total = { sessions: 0, events: 0 };
  let after: Position | null = null;
  do {
    const started = performance.now();
    const done = await store.deleteSessions(projectId, filter, { ...batch, after: after ?? undefined });
    total.sessions += done.sessions;
    total.events += done.events;
    options.onBatch?.({ sessions: done.sessions, events: done.events });
    after = done.next;
    if (after !== null && !dryRun) await yieldAfter(started);
  } while (after !== null && !options.stopped?.());
  return total;
}

/** The filter of the sessions a retention of `days` removes at `nowMs`: idle since before the cutoff. */
export const expiredFilter = (days: number, nowMs: number): SessionFilter => ({
  idle_before_us: nowMs * 1000 - days * DAY_US,
});

export interface SweepOptions extends BatchOptions {
  store: Store;
  /** AGENTMON_RETENTION_DAYS: the days of a project that has no retention of its own; undefined: forever. */
  defaultDays: number | undefined;
  /** The clock, in milliseconds since the epoch. */
  now?: () => number;
  /** Counts what the sweep removes (GET /metrics). */
  metrics?: { swept(kind: "sessions" | "events", n: number): void };
}

/**
 * One sweep: every project's sessions idle for longer than its retention (its own, else the
 * default; 0 or none: kept forever), removed in batches; then the freed pages are given back to
 * the file system in small steps (SQLite with incremental auto-vacuum). Answers what it removed.
 */
export async function sweep(options: SweepOptions): Promise<Removed> {
  const { store, now = Date.now } = options;
  const total = { sessions: 0, events: 0 };
  for (const project of await store.listProjects()) {
    if (options.stopped?.()) break;
    const days = project.retention_days ?? options.defaultDays;
    if (days === undefined || days === 0) continue;
    const removed = await deleteSessions(store, project.id, expiredFilter(days, now()), false, {
      ...options,
      onBatch: (batch) => {
        options.metrics?.swept("sessions", batch.sessions);
        options.metrics?.swept("events", batch.events);
        options.onBatch?.(batch);
      },
    });
    total.sessions += removed.sessions;
    total.events += removed.events;
  }
  if (total.sessions > 0) await reclaim(store, options.stopped);
  return total;
}

/** Gives the free pages back, a few MB per short transaction, while there are any. */
async function reclaim(store: Store, stopped?: () => boolean) {
  while (!stopped?.()) {
    const started = performance.now();
    const { freed, left } = await store.reclaimSpace(RECLAIM_PAGES);
    if (freed === 0 || left === 0) return;
    await yieldAfter(started);
  }
}

export interface Sweeper {
  /** Runs a sweep now (after the one running, if any); answers what it removed. */
  runNow(): Promise<Removed>;
  /** Stops the timer and waits for the sweep running, which stops after its current batch. */
  stop(): Promise<void>;
}

export interface SweeperOptions extends SweepOptions {
  /** Between sweeps; default 10 minutes. */
  intervalMs?: number;
  /** Before the first sweep; default 30 seconds. */
  firstDelayMs?: number;
  /** A sweep that failed (storage unavailable, ...): the next one tries again. */
  onError?: (error: unknown) => void;
  /** A sweep that removed something. */
  onSwept?: (removed: Removed, ms: number) => void;
}

/** The background sweep of `agentmon serve`: shortly after start, then every interval. */
export function startSweeper(options: SweeperOptions): Sweeper {
  let stopping = false;
  let running: Promise<Removed> = Promise.resolve({ sessions: 0, events: 0 });
  let timer: NodeJS.Timeout | undefined;
  const stopped = () => stopping || options.stopped?.() === true;
  const run = () => {
    running = running.then(async () => {
      const started = performance.now();
      const removed = await sweep({ ...options, stopped });
      if (removed.sessions > 0) options.onSwept?.(removed, performance.now() - started);
      return removed;
    });
    const result = running;
    running = running.catch((error: unknown) => {
      if (!stopping) options.onError?.(error);
      return { sessions: 0, events: 0 };
    });
    return result;
  };
  const schedule = (ms: number) => {
    if (stopping) return;
    timer = setTimeout(() => {
      run()
        .catch(() => undefined)
        .finally(() => schedule(options.intervalMs ?? 600_000));
    }, ms);
    timer.unref();
  };
  schedule(options.firstDelayMs ?? 30_000);
  return {
    runNow: run,
    async stop() {
      stopping = true;
      clearTimeout(timer);
      await running;
    },
  };
}
