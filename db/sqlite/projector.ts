/**
 * The projector of a SQLite database (docs/decisions/033-projections.md). A write call stores its
 * raw rows and one row of `projection_queue` (`queue` below): which session changed, and how (its
 * row; events pks lo..hi added, with their search words; or anything, to be counted again). The
 * projector takes the queue in batches after the writes are committed and answered, folds each
 * session's new rows into its share (db/projections/share.ts), runs every projection's writes
 * (db/projections/projections.ts) and the search index's, and deletes the entries it took, all in
 * one transaction: a crash leaves each projection exactly at the queue. Reads that use a projection
 * call `catchUp()` first, on this same connection, so they see every write acknowledged before.
 */
import { performance } from "node:perf_hooks";
import type Database from "better-sqlite3";
import { histogramBucket } from "../../domain/analytics.ts";
import { type Change, PROJECTIONS, type SessionTable, type SumTable, type Write } from "../projections/projections.ts";
import { type EventFacts, fold, type SessionFacts, type Share, shareOf } from "../projections/share.ts";

// The type from better-sqlite3, not from ./open.ts, which imports this file (no import cycle).
type Db = Database.Database;

/**
 * How a session changed: its row only; events added (pks lo..hi); anything (count it again from
 * its rows); events lo..hi to index again (their body changed: migration 012's trigger queues it).
 */
export const CHANGE = { row: 0, added: 1, again: 2, reindex: 3 } as const;
export type ChangeKind = (typeof CHANGE)[keyof typeof CHANGE];
const { added: ADDED, again: AGAIN, reindex: REINDEX } = CHANGE;

/** Sessions per batch at most, so that a batch holds the connection a bounded time. */
const BATCH_SESSIONS = 500;
/** Queue entries per batch at most (a session's entries are never split across batches). */
const BATCH_ENTRIES = 5_000;
/** How long the projector lets writes gather after the first one before it runs. */
const DELAY_MS = 20;

/** The session's end in microseconds (NULL without one), as migration 002 computes events.end_us. */
const END_OF_SESSION = `(unixepoch(substr(end_timestamp, 1, 19)) * 1000000
  + CASE WHEN length(end_timestamp) > 21
      THEN CAST(substr(substr(end_timestamp, 21, length(end_timestamp) - 21) || '000000', 1, 6) AS INTEGER)
      ELSE 0 END)`;

/** An event's facts (share.ts EventFacts); a tool's key and an error's trigger as migration 011 made them. */
const FACTS = `id, type, init_us, end_us, model, prompt_tokens AS prompt, completion_tokens AS completion,
  cache_read_tokens AS cache_read, cache_creation_tokens AS cache_creation, reasoning_tokens AS reasoning, cost,
  CASE WHEN type = 'tool' THEN ifnull('=' || CAST(json_extract(body, '$.name') AS TEXT), '') END AS tool,
  CASE WHEN type = 'error' THEN coalesce(CAST(json_extract(body, '$.trigger_event_id') AS TEXT), parent_id) END AS target`;

interface Entry {
  seq: number;
  session_pk: number;
  kind: ChangeKind;
  lo: number | null;
  hi: number | null;
  words: string | null;
  at_ms: number;
}

/** The bucket function the migrations' SQL calls (010 and 011 fill the rollups with it): the one JS uses. */
export function projectorFunctions(db: Db) {
  db.function("agentmon_duration_bucket", { deterministic: true }, (us) => histogramBucket(Number(us)));
}

export interface ProjectorStats {
  /** Queue entries not projected yet, and the age of the oldest one in seconds. */
  backlog: number;
  lagSeconds: number;
  batches: number;
  /** The longest batch so far, in seconds: how long the projector held the database at most. */
  longestBatchSeconds: number;
}

export function sqliteProjector(db: Db) {
  const q = {
    queue: db.prepare<[number, ChangeKind, number | null, number | null, string | null, number]>(
      "INSERT INTO projection_queue (session_pk, kind, lo, hi, words, at_ms) VALUES (?, ?, ?, ?, ?, ?)",
    ),
    any: db.prepare("SELECT 1 FROM projection_queue LIMIT 1").pluck(),
    backlog: db.prepare<[], { n: number; oldest: number | null }>(
      "SELECT count(*) AS n, min(at_ms) AS oldest FROM projection_queue",
    ),
    head: db
      .prepare<[number, number]>(
        `SELECT DISTINCT session_pk FROM (SELECT session_pk FROM projection_queue ORDER BY seq LIMIT ?) LIMIT ?`,
      )
      .pluck(),
    entries: db.prepare<[string], Entry>(
      "SELECT * FROM projection_queue WHERE session_pk IN (SELECT value FROM json_each(?)) ORDER BY seq",
    ),
    sessions: db.prepare<
      [string],
      { pk: number; project: string; init_us: number; end_us: number | null; failed: number }
    >(
      `SELECT pk, project_id AS project, init_us, ${END_OF_SESSION} AS end_us, end_state IS 'Fail' AS failed
       FROM sessions WHERE pk IN (SELECT value FROM json_each(?))`,
    ),
    shares: db.prepare<[string], { session_pk: number; share: string }>(
      "SELECT session_pk, share FROM session_shares WHERE session_pk IN (SELECT value FROM json_each(?))",
    ),
    range: db.prepare<[number, number, number], EventFacts>(
      `SELECT ${FACTS} FROM events WHERE session_pk = ? AND pk BETWEEN ? AND ?`,
    ),
    all: db.prepare<[number], EventFacts>(`SELECT ${FACTS} FROM events WHERE session_pk = ?`),
    lookup: db.prepare<[number, string], EventFacts>(
      `SELECT ${FACTS} FROM events WHERE session_pk = ? AND id IN (SELECT value FROM json_each(?))`,
    ),
    putShare: db.prepare<[number, string]>(
      "INSERT INTO session_shares (session_pk, share) VALUES (?, ?) ON CONFLICT (session_pk) DO UPDATE SET share = excluded.share",
    ),
    dropShare: db.prepare<[number]>("DELETE FROM session_shares WHERE session_pk = ?"),
    done: db.prepare<[string]>("DELETE FROM projection_queue WHERE session_pk IN (SELECT value FROM json_each(?))"),
    // The search index (migration 008) takes the batch's new events, with the words their call
    // gave or read from the stored bodies; an event queued twice gets its last words.
    index: db.prepare<[string]>(
      `WITH batch AS MATERIALIZED (SELECT * FROM projection_queue WHERE kind IN (${ADDED}, ${REINDEX})
         AND session_pk IN (SELECT value FROM json_each(?))),
       queued AS MATERIALIZED (
         SELECT p.seq AS turn, p.lo + j.key AS pk, j.value AS text
         FROM batch p, json_each(p.words) j WHERE p.words IS NOT NULL
         UNION ALL
         SELECT p.seq, e.pk, agentmon_event_words(e.body)
         FROM batch p JOIN events e ON e.pk BETWEEN p.lo AND p.hi AND e.session_pk = p.session_pk WHERE p.words IS NULL),
       latest AS (SELECT pk, text, max(turn) FROM queued GROUP BY pk)
       INSERT INTO event_search (rowid, text)
       SELECT l.pk, l.text FROM latest l WHERE l.text <> '' AND EXISTS (SELECT 1 FROM events e WHERE e.pk = l.pk)
       ORDER BY l.pk`,
    ),
  };
  const statements = new Map<string, Database.Statement<unknown[]>>();
  const prepared = (sql: string) => {
    let statement = statements.get(sql);
    if (statement === undefined) {
      statement = db.prepare<unknown[]>(sql);
      statements.set(sql, statement);
    }
    return statement;
  };

  const figures = { batches: 0, longest: 0 };
  let scheduled: NodeJS.Timeout | undefined;
  let closed = false;

  const batch = db.transaction((pks: number[]) => {
    const list = JSON.stringify(pks);
    const entries = q.entries.all(list);
    const facts = new Map(q.sessions.all(list).map((s) => [s.pk, s]));
    const shares = new Map(q.shares.all(list).map((s) => [s.session_pk, JSON.parse(s.share) as Share]));
    const bySession = new Map<number, Entry[]>();
    for (const entry of entries) {
      const of = bySession.get(entry.session_pk);
      if (of) of.push(entry);
      else bySession.set(entry.session_pk, [entry]);
    }
    const changes: Change[] = [];
    for (const pk of pks) {
      const row = facts.get(pk);
      const before = shares.get(pk);
      let after: Share | undefined;
      if (row !== undefined) {
        const session: SessionFacts = {
          project: row.project,
          init_us: row.init_us,
          end_us: row.end_us,
          failed: row.failed === 1,
        };
        const mine = bySession.get(pk) ?? [];
        if (before === undefined || mine.some((e) => e.kind === AGAIN)) after = shareOf(session, q.all.all(pk));
        else {
          const rows = mine.flatMap((e) => (e.kind === ADDED ? q.range.all(pk, e.lo as number, e.hi as number) : []));
          after = fold(before, session, rows, (ids) => q.lookup.all(pk, JSON.stringify(ids)));
        }
      }
      if (after) q.putShare.run(pk, JSON.stringify(after));
      else if (before) q.dropShare.run(pk);
      if (before || after) changes.push({ pk, before, after });
    }
    for (const projection of PROJECTIONS) for (const write of projection.apply(changes)) run(write);
    q.index.run(list);
    q.done.run(list);
  });

  /** One projection's writes, as SQL. */
  const run = (write: Write) => {
    if (write.kind === "add") return add(write.table, write.rows);
    if (write.kind === "replace") return replace(write.table, write.pks, write.rows);
    const set = write.columns.map((c) => `${c} = ?`).join(", ");
    const update = prepared(`UPDATE sessions SET ${set} WHERE pk = ?`);
    for (const [pk, ...values] of write.rows) update.run(...values, pk);
  };
  const add = (table: SumTable, rows: unknown[][]) => {
    const columns = [...table.keys, ...table.sums, ...(table.max ? [table.max] : [])];
    const sums = table.sums.map((c) => `${c} = ${c} + excluded.${c}`);
    if (table.max) sums.push(`${table.max} = max(${table.max}, excluded.${table.max})`);
    const upsert = prepared(
      `INSERT INTO ${table.name} (${columns.join(", ")}) VALUES (${columns.map(() => "?").join(", ")})
       ON CONFLICT (${table.keys.join(", ")}) DO UPDATE SET ${sums.join(", ")} RETURNING ${table.count}`,
    );
    const remove = prepared(`DELETE FROM ${table.name} WHERE ${table.keys.map((k) => `${k} = ?`).join(" AND ")}`);
    const keys = table.keys.length;
    for (const row of rows) {
      if ((upsert.get(...row) as Record<string, number>)[table.count] === 0) remove.run(...row.slice(0, keys));
    }
  };
  const replace = (table: SessionTable, pks: number[], rows: unknown[][]) => {
    const remove = prepared(`DELETE FROM ${table.name} WHERE session_pk = ?`);
    for (const pk of pks) remove.run(pk);
    const insert = prepared(
      `INSERT INTO ${table.name} (${table.columns.join(", ")}) VALUES (${table.columns.map(() => "?").join(", ")})`,
    );
    for (const row of rows) insert.run(...row);
  };

  /** Projects the oldest batch of the queue; false when it was empty. */
  const step = (): boolean => {
    if (!db.open) return false;
    const pks = q.head.all(BATCH_ENTRIES, BATCH_SESSIONS) as number[];
    if (pks.length === 0) return false;
    const started = performance.now();
    batch(pks);
    const seconds = (performance.now() - started) / 1000;
    figures.batches++;
    if (seconds > figures.longest) figures.longest = seconds;
    return true;
  };

  const projector = {
    /** One batch (`agentmon rebuild` shows its progress between them): the queue entries left. */
    step(): number {
      step();
      return (q.backlog.get() as { n: number }).n;
    },
    /** Queues a change of session `pk` (inside the writing call's savepoint). */
    queue(
      pk: number,
      kind: ChangeKind,
      lo: number | null = null,
      hi: number | null = null,
      words: string | null = null,
    ) {
      q.queue.run(pk, kind, lo, hi, words, Date.now());
    },
    /** Projects everything queued: before a read that needs the projections, and at close. */
    catchUp() {
      // A read-only connection (a reader beside the writer) reads what is projected.
      if (db.readonly) return;
      while (step()) {}
    },
    /** After a group commit: a batch soon, so that writes gather into it. */
    schedule: () => {
      if (scheduled !== undefined || closed) return;
      scheduled = setTimeout(() => {
        scheduled = undefined;
        if (closed || !db.open) return;
        // One batch per turn, so that requests and group commits run in between.
        if (step() && q.any.get() !== undefined) projector.schedule();
      }, DELAY_MS);
      scheduled.unref();
    },
    stats(): ProjectorStats {
      const { n, oldest } = q.backlog.get() as { n: number; oldest: number | null };
      return {
        backlog: n,
        lagSeconds: oldest === null ? 0 : Math.max(0, (Date.now() - oldest) / 1000),
        batches: figures.batches,
        longestBatchSeconds: figures.longest,
      };
    },
    /**
     * `agentmon rebuild`: every projection emptied and every session queued to be counted again
     * from its rows, in one transaction; the projector then works the queue off in batches (a
     * crash meanwhile resumes where it was: the queue is durable).
     */
    rebuild: db.transaction(() => {
      for (const projection of PROJECTIONS) for (const table of projection.tables) db.exec(`DELETE FROM ${table}`);
      db.exec("DELETE FROM session_shares");
      db.exec("INSERT INTO event_search (event_search) VALUES ('delete-all')");
      const now = Date.now();
      db.exec(`INSERT INTO projection_queue (session_pk, kind, at_ms) SELECT pk, ${AGAIN}, ${now} FROM sessions`);
      db.exec(
        `INSERT INTO projection_queue (session_pk, kind, lo, hi, at_ms)
         SELECT session_pk, ${REINDEX}, min(pk), max(pk), ${now} FROM events GROUP BY session_pk`,
      );
    }),
    close() {
      closed = true;
      if (scheduled !== undefined) clearTimeout(scheduled);
    },
  };
  return projector;
}

export type SqliteProjector = ReturnType<typeof sqliteProjector>;
