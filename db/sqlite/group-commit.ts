/**
 * Group commit (docs/decisions/006-group-commit.md). Every write call is queued; the first one
 * schedules a flush (setImmediate, so that the calls of every request handled in this turn of the
 * event loop join it). A flush runs a group of calls in ONE transaction, each in its own
 * savepoint, commits once, and only then settles their promises: a call resolves only when its
 * data is committed (G7). Reads stay direct; a flush is one synchronous run, so no read sees a
 * group half done.
 */

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

export interface GroupCommit {
  /** Queues a write call of `rows` rows; it settles once the group it ran in is committed or not. */
  write<T>(rows: number, run: () => T): Promise<T>;
  /** Runs every queued call now, group by group (close() does, so that no call is dropped). */
  drain(): void;
  /** Group transactions committed so far: lets tests see calls coalesce. */
  readonly commits: number;
}

export function groupCommit(db: Db): GroupCommit {
  const tx = {
    begin: db.prepare("BEGIN IMMEDIATE"),
    commit: db.prepare("COMMIT"),
    rollback: db.prepare("ROLLBACK"),
    savepoint: db.prepare("SAVEPOINT agentmon_call"),
    release: db.prepare("RELEASE agentmon_call"),
    rollbackTo: db.prepare("ROLLBACK TO agentmon_call"),
  };
  const queue: Call[] = [];
  let flushScheduled = false;
  let commits = 0;

  function write<T>(rows: number, run: () => T): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      queue.push({ rows: Math.max(1, rows), run, resolve: resolve as (value: unknown) => void, reject });
      if (!flushScheduled) {
        flushScheduled = true;
        setImmediate(flush);
      }
    });
  }

  /** Commits one group; what is left waits for the next turn, so that I/O is served in between. */
  function flush() {
    flushScheduled = false;
    if (queue.length > 0) commitGroup(nextGroup());
    if (queue.length > 0 && !flushScheduled) {
      flushScheduled = true;
      setImmediate(flush);
    }
  }

  /** The first queued calls, in call order, up to the caps (always at least one). */
  function nextGroup(): Call[] {
    let calls = 0;
    let rows = 0;
    for (const call of queue) {
      if (calls === GROUP_MAX_CALLS || (calls > 0 && rows + call.rows > GROUP_MAX_ROWS)) break;
      calls++;
      rows += call.rows;
    }
    return queue.splice(0, calls);
  }

  function commitGroup(group: Call[]) {
    const outcomes: Outcome[] = [];
    try {
      // Only a ROLLBACK that failed below can leave a transaction open between flushes; end it
      // rather than fail every later group with "cannot start a transaction within a transaction".
      if (db.inTransaction) tx.rollback.run();
      tx.begin.run();
      for (const call of group) outcomes.push(runCall(call));
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
      for (const call of group) call.reject(fault);
      return;
    }
    commits++;
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
  function runCall(call: Call): Outcome {
    tx.savepoint.run();
    try {
      const value = call.run();
      tx.release.run();
      return { ok: true, value };
    } catch (error) {
      if (!db.inTransaction || failsTheGroup(error)) throw error;
      tx.rollbackTo.run();
      tx.release.run();
      return { ok: false, error };
    }
  }

  return {
    write,
    drain() {
      while (queue.length > 0) commitGroup(nextGroup());
    },
    get commits() {
      return commits;
    },
  };
}
