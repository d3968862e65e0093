/**
 * Group commit (docs/decisions/006-group-commit.md). Every write call is queued; the first one
 * schedules a flush (setImmediate, so that the calls of every request handled in this turn of the
 * event loop join it). A flush runs a group of calls in ONE transaction, each in its own
 * savepoint, commits once, and only then settles their promises: a call resolves only when its
 * data is committed (G7). Reads stay direct; a flush is one synchronous run, so no read sees a
 * group half done.
 */

import { performance } from "node:perf_hooks";
import { GroupFigures, type GroupStats, takeGroup } from "../groups.ts";
import { failsTheGroup } from "./errors.ts";
import type { Db } from "./open.ts";

/**
 * A group holds at most this many calls, or this many rows (events or patches; one for any other
 * call), so that a flush, which holds the event loop while it runs, stays short. A call is never
 * split: one bigger than the row cap is a group of its own. The rest wait for the next flush.
 */
export const GROUP_MAX_CALLS = 500;
export const GROUP_MAX_ROWS = 10_000;

/** A queued write call. */
interface Call {
  rows: number;
  run: () => unknown;
  resolve: (value: unknown) => void;
  reject: (error: unknown) => void;
}

type Outcome = { ok: true; value: unknown } | { ok: false; error: unknown };

export interface GroupObserver {
  callEnded(ok: boolean): void;
  groupEnded(committed: boolean): void;
}
const IGNORED: GroupObserver = { callEnded() {}, groupEnded() {} };

/** The queue of write calls of one connection, and its group transactions. */
export class GroupCommit {
  readonly #db: Db;
  readonly #tx;
  readonly #queue: Call[] = [];
  #flushScheduled = false;
  #queuedRows = 0;
  /** What GET /metrics shows of the group commit. */
  readonly #figures = new GroupFigures();

  /**
   * Told each call's end (its savepoint released or undone) and each group's (committed or not):
   * the projector (projector.ts) takes what calls hand it only once their data is committed, and
   * runs after each group.
   */
  readonly #observer: GroupObserver;

  constructor(db: Db, observer: GroupObserver = IGNORED) {
    this.#db = db;
    this.#observer = observer;
    this.#tx = {
      begin: db.prepare("BEGIN IMMEDIATE"),
      commit: db.prepare("COMMIT"),
      rollback: db.prepare("ROLLBACK"),
      savepoint: db.prepare("SAVEPOINT agentmon_call"),
      release: db.prepare("RELEASE agentmon_call"),
      rollbackTo: db.prepare("ROLLBACK TO agentmon_call"),
    };
  }

  /** Group transactions committed so far: lets tests see calls coalesce. */
  get commits() {
    return this.#figures.commits;
  }

  /** The queue now, and the groups so far. */
  stats(): GroupStats {
    return this.#figures.snapshot(this.#queue.length, this.#queuedRows);
  }

  /** Queues a write call of `rows` rows; it settles once the group it ran in is committed or not. */
  write<T>(rows: number, run: () => T): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      const call = { rows: Math.max(1, rows), run, resolve: resolve as (value: unknown) => void, reject };
      this.#queue.push(call);
      this.#queuedRows += call.rows;
      this.#schedule();
    });
  }

  /** Runs every queued call now, group by group (close() does, so that no call is dropped). */
  drain() {
    while (this.#queue.length > 0) this.#commitGroup(this.#nextGroup());
  }

  #schedule() {
    if (this.#flushScheduled) return;
    this.#flushScheduled = true;
    setImmediate(() => this.#flush());
  }

  /** Commits one group; what is left waits for the next turn, so that I/O is served in between. */
  #flush() {
    this.#flushScheduled = false;
    if (this.#queue.length > 0) this.#commitGroup(this.#nextGroup());
    if (this.#queue.length > 0) this.#schedule();
  }

  /** The first queued calls, in call order, up to the caps (always at least one). */
  #nextGroup(): Call[] {
    const { group, rows } = takeGroup(this.#queue, (call) => call.rows, GROUP_MAX_CALLS, GROUP_MAX_ROWS);
    this.#queuedRows -= rows;
    return group;
  }

  #commitGroup(group: Call[]) {
    const db = this.#db;
    const tx = this.#tx;
    const outcomes: Outcome[] = [];
    const started = performance.now();
    try {
      // Only a ROLLBACK that failed below can leave a transaction open between flushes; end it
      // rather than fail every later group with "cannot start a transaction within a transaction".
      if (db.inTransaction) tx.rollback.run();
      tx.begin.run();
      for (const call of group) outcomes.push(this.#runCall(call));
      tx.commit.run();
    } catch (fault) {
      // A storage fault, an error that ended the transaction, or a failed BEGIN or COMMIT: nothing
      // of the group is committed, so every call of it fails, those whose savepoint was released
      // too. Never resolve a call whose data is not committed.
      if (db.open && db.inTransaction) {
        try {
          tx.rollback.run();
        } catch {
          // The next flush tries again (above); these calls fail with the first error either way.
        }
      }
      this.#figures.failed++;
      this.#observer.groupEnded(false);
      for (const call of group) call.reject(fault);
      return;
    }
    this.#observer.groupEnded(true);
    let rows = 0;
    for (const call of group) rows += call.rows;
    this.#figures.committed(group.length, rows, (performance.now() - started) / 1000);
    group.forEach((call, index) => {
      const outcome = outcomes[index] as Outcome;
      if (outcome.ok) call.resolve(outcome.value);
      else call.reject(outcome.error);
    });
  }

  /**
   * Runs one call in its own savepoint. An error of the call's own (a constraint, a bug) undoes
   * that call alone, which then fails alone; a storage fault, or any error after which SQLite has
   * ended the transaction, is thrown on to fail the whole group.
   */
  #runCall(call: Call): Outcome {
    const tx = this.#tx;
    tx.savepoint.run();
    try {
      const value = call.run();
      tx.release.run();
      this.#observer.callEnded(true);
      return { ok: true, value };
    } catch (error) {
      this.#observer.callEnded(false);
      if (!this.#db.inTransaction || failsTheGroup(error)) throw error;
      tx.rollbackTo.run();
      tx.release.run();
      return { ok: false, error };
    }
  }
}
