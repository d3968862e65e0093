/**
 * The projector of a SQLite database (docs/decisions/033-projections.md). A write call stores its
 * raw rows and one row of `projection_queue` (`queue` below): which session changed, and how (its
 * row; events pks lo..hi added; or anything, to be counted again). The
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
import { indexedResponses, pending, RESPONSE_KEY, type ResponseEvent, responseKey } from "../projections/responses.ts";
import { type EventFacts, factsOfRow, fold, type SessionFacts, type Share, shareOf } from "../projections/share.ts";
import type { Scored, ScoredEvent, ScoreFact } from "../projections/types.ts";
import { COLUMN, type EventRow } from "../rows.ts";

// The type from better-sqlite3, not from ./open.ts, which imports this file (no import cycle).
type Db = Database.Database;

/**
 * How a session changed: its row only; events added (pks lo..hi); anything (count it again from
 * its rows); events lo..hi to index again (their body changed: migration 012's trigger queues it);
 * its scores changed (score analytics project it again, even when none is left); scores pk lo..hi
 * may wait for their response's span (`resolve`, under session pk 0, RESOLVE_PK: decision 038);
 * scores pk lo..hi added to the session (`scored`: when that is all that changed, score analytics
 * add their facts and leave the session's others as they are).
 */
export const CHANGE = { row: 0, added: 1, again: 2, reindex: 3, scores: 4, resolve: 5, scored: 6 } as const;
export type ChangeKind = (typeof CHANGE)[keyof typeof CHANGE];
const { added: ADDED, again: AGAIN, reindex: REINDEX, scores: SCORES, scored: SCORED } = CHANGE;
/** The queue's "session" of the scores to resolve: no session has pk 0. */
export const RESOLVE_PK = 0;

/** Each projection's version, as the meta table keeps what the database was projected with. */
const VERSIONS = JSON.stringify(Object.fromEntries(PROJECTIONS.map((p) => [p.name, p.version])));

/** Sessions per batch at most, so that a batch holds the connection a bounded time. */
const BATCH_SESSIONS = 500;
/** Queue entries per batch at most (a session's entries are never split across batches). */
const BATCH_ENTRIES = 5_000;
/** How long the projector waits after storage refused a batch (O4) before it tries again. */
const RETRY_MS = 1_000;

/** A fault of the storage, not of the projector: the disk, the file, a lock. */
const storageFault = (error: unknown) =>
  /^SQLITE_(IOERR|FULL|READONLY|BUSY|LOCKED|CANTOPEN|NOMEM)/.test(String((error as { code?: unknown })?.code ?? ""));

/** How long the projector lets writes gather after the first one before it looks again. */
const DELAY_MS = 20;
/**
 * A batch runs once this many rows were handed over, or once its first entry has waited
 * GATHER_MS. Small calls (one event each: B2) then share a batch per session, where at DELAY_MS
 * each call was nearly a batch of its own and paid a session's share (read, fold, write) alone.
 */
const READY_ROWS = 300;
const GATHER_MS = 200;

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
  at_ms: number;
}

/**
 * A call's added rows, their search words and their response ids (when the caller had them),
 * kept until projected.
 */
interface Handed {
  rows: readonly EventRow[];
  words: readonly string[] | undefined;
  responses: readonly (string | null)[] | undefined;
}

/** Rows handed over in memory at most; past it, the projector reads them from the table. */
const HANDED_MAX_ROWS = 200_000;

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
    queue: db.prepare<[number, ChangeKind, number | null, number | null, number]>(
      "INSERT INTO projection_queue (session_pk, kind, lo, hi, at_ms) VALUES (?, ?, ?, ?, ?)",
    ),
    // One statement for the batch: FTS5 writes its pending terms out as a segment at the end of
    // every statement that writes it inside a transaction (decision 023), so one per event would
    // make a segment per event.
    indexGiven: db.prepare<[string]>(
      "INSERT INTO event_search (rowid, text) SELECT j.value ->> 0, j.value ->> 1 FROM json_each(?) j ORDER BY 1",
    ),
    text: db.prepare<[string, string], string | null>("SELECT CAST(json_extract(?, '$.' || ?) AS TEXT)").pluck(),
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
    // By seq: a batch that resolves scores queues their sessions again, and those entries stay.
    done: db.prepare<[string]>("DELETE FROM projection_queue WHERE seq IN (SELECT value FROM json_each(?))"),
    // Events that may carry a response id (db/projections/responses.ts reads it).
    responsesIn: db.prepare<[number, number, number], { id: string; extra: string }>(
      `SELECT id, extra FROM events WHERE session_pk = ? AND pk BETWEEN ? AND ? AND instr(extra, '${RESPONSE_KEY}') > 0`,
    ),
    responsesOf: db.prepare<[number], { id: string; extra: string }>(
      `SELECT id, extra FROM events WHERE session_pk = ? AND instr(extra, '${RESPONSE_KEY}') > 0`,
    ),
    // The search index (migration 008) takes the batch's new events whose words were not handed
    // over, and those whose body changed, with the words of their stored body (an event the batch
    // names twice is indexed once, and only while it exists).
    index: db.prepare<[string]>(
      `WITH pks AS MATERIALIZED (
         SELECT DISTINCT e.pk FROM json_each(?) j JOIN events e
           ON e.session_pk = j.value ->> '$[0]' AND e.pk BETWEEN j.value ->> '$[1]' AND j.value ->> '$[2]')
       INSERT INTO event_search (rowid, text)
       SELECT pk, text FROM (SELECT e.pk, agentmon_event_words(e.body) AS text FROM pks JOIN events e ON e.pk = pks.pk)
       WHERE text <> '' ORDER BY pk`,
    ),
  };
  const scored = scoredStatements(db);
  const resolve = resolveStatements(db);
  const statements = new Map<string, Database.Statement<unknown[]>>();
  const prepared = (sql: string) => {
    let statement = statements.get(sql);
    if (statement === undefined) {
      statement = db.prepare<unknown[]>(sql);
      statements.set(sql, statement);
    }
    return statement;
  };

  const fieldText = (body: string, field: string) => q.text.get(body, field) ?? null;
  const figures = { batches: 0, longest: 0, failed: 0 };
  let scheduled: NodeJS.Timeout | undefined;
  /** When the timer first looked since the last batch it ran (0: not since then): GATHER_MS counts from it. */
  let gathering = 0;
  let closed = false;

  /** Rows handed over by committed calls, by `${session pk}:${lo}`; and by the calls of the group running now. */
  const handed = new Map<string, Handed>();
  let handedRows = 0;
  let ofCall: [string, Handed][] = [];
  let ofGroup: [string, Handed][] = [];
  /** Queue entries a batch inside the running group projected before their group committed. */
  const projectedEarly = new Set<string>();

  const batch = db.transaction((head: number[]) => {
    const list = JSON.stringify(head);
    const entries = q.entries.all(list);
    const pks = head.filter((pk) => pk !== RESOLVE_PK);
    const facts = new Map(q.sessions.all(list).map((s) => [s.pk, s]));
    const shares = new Map(q.shares.all(list).map((s) => [s.session_pk, JSON.parse(s.share) as Share]));
    const bySession = new Map<number, Entry[]>();
    for (const entry of entries) {
      const of = bySession.get(entry.session_pk);
      if (of) of.push(entry);
      else bySession.set(entry.session_pk, [entry]);
    }
    const changes: Change[] = [];
    /** Sessions whose score facts are made again even when they have no score (left). */
    const rescored: number[] = [];
    /** Sessions that only gained scores: [session pk, lo, hi] of their new scores. */
    const appended: [number, number, number][] = [];
    /** [session pk, lo, hi] of the events to index from their stored bodies. */
    const fromBodies: [number, number, number][] = [];
    /** Events to index with the words their writer gave: pk, words. */
    const withWords: [number, string][] = [];
    for (const pk of pks) {
      const row = facts.get(pk);
      const before = shares.get(pk);
      const mine = bySession.get(pk) ?? [];
      const again = mine.some((e) => e.kind === AGAIN);
      const rows: EventFacts[] = [];
      // Its events that may carry a response id (./responses.ts): all of them when it is counted
      // again, else those added (from the rows handed over, or read back).
      let responses: Change["responses"] =
        row !== undefined && again ? { whole: true, events: q.responsesOf.all(pk) } : undefined;
      const responded = (events: ResponseEvent[]) => {
        if (events.length === 0 || again) return;
        if (responses === undefined) responses = { whole: false, events };
        else responses.events.push(...events);
      };
      for (const e of mine) {
        const key = `${pk}:${e.lo}`;
        const given = e.kind === ADDED ? handed.get(key) : undefined;
        if (given !== undefined) {
          handed.delete(key);
          handedRows -= given.rows.length;
        } else if (e.kind === ADDED) projectedEarly.add(key);
        if (e.kind === ADDED && row !== undefined) {
          if (given === undefined) responded(q.responsesIn.all(pk, e.lo as number, e.hi as number));
          else {
            const events: ResponseEvent[] = [];
            given.rows.forEach((r, i) => {
              const id = r[COLUMN.id] as string;
              if (given.responses === undefined) {
                const extra = r[COLUMN.extra] as string;
                if (extra.includes(RESPONSE_KEY)) events.push({ id, extra });
              } else {
                const response = given.responses[i];
                if (response != null) events.push({ id, response });
              }
            });
            responded(events);
          }
        }
        if (e.kind === REINDEX || (e.kind === ADDED && (given?.words === undefined || again))) {
          fromBodies.push([pk, e.lo as number, e.hi as number]);
        } else if (e.kind === ADDED && given?.words !== undefined) {
          given.words.forEach((text, i) => {
            if (text !== "") withWords.push([(e.lo as number) + i, text]);
          });
        }
        if (e.kind !== ADDED || again || row === undefined || before === undefined) continue;
        if (given !== undefined) for (const r of given.rows) rows.push(factsOfRow(r, fieldText));
        else rows.push(...q.range.all(pk, e.lo as number, e.hi as number));
      }
      let after: Share | undefined;
      if (row !== undefined) {
        const session: SessionFacts = {
          project: row.project,
          init_us: row.init_us,
          end_us: row.end_us,
          failed: row.failed === 1,
        };
        if (before === undefined || again) after = shareOf(session, q.all.all(pk));
        else after = fold(before, session, rows, (ids) => q.lookup.all(pk, JSON.stringify(ids)));
      }
      if (after) q.putShare.run(pk, JSON.stringify(after));
      else if (before) q.dropShare.run(pk);
      if (before || after) changes.push({ pk, before, after, responses });
      if (row !== undefined && before !== undefined && mine.length > 0 && mine.every((e) => e.kind === SCORED)) {
        for (const e of mine) appended.push([pk, e.lo as number, e.hi as number]);
      } else if (row === undefined || mine.some((e) => e.kind === SCORES || e.kind === SCORED)) rescored.push(pk);
    }
    const only = new Set(appended.map(([pk]) => pk));
    const loaded = scored(
      pks.filter((pk) => !only.has(pk)),
      rescored,
      appended,
    );
    for (const change of changes) change.scored = loaded.get(change.pk);
    const writes = PROJECTIONS.flatMap((projection) => projection.apply(changes));
    for (const write of writes) run(write);
    // Scores waiting for a response's span: those the calls queued, those naming a response this
    // batch indexed. Their sessions are queued: the next batch counts them in score analytics.
    const ranges = entries.filter((e) => e.session_pk === RESOLVE_PK).map((e) => [e.lo, e.hi]);
    const now = Date.now();
    for (const pk of resolve(ranges, indexedResponses(writes))) q.queue.run(pk, SCORES, null, null, now);
    // Handed words only for sessions not counted again (their events may have changed or gone).
    if (withWords.length > 0) q.indexGiven.run(JSON.stringify(withWords));
    if (fromBodies.length > 0) q.index.run(JSON.stringify(fromBodies));
    q.done.run(JSON.stringify(entries.map((e) => e.seq)));
  });

  /** One projection's writes, as SQL. */
  const run = (write: Write) => {
    if (write.kind === "add") return add(write.table, write.rows);
    if (write.kind === "replace") return replace(write.table, write.pks, write.rows);
    if (write.kind === "insert") return insert(write.table, write.rows, "OR IGNORE");
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
    insert(table, rows, "");
  };
  const insert = (table: SessionTable, rows: unknown[][], or: "" | "OR IGNORE") => {
    const statement = prepared(
      `INSERT ${or} INTO ${table.name} (${table.columns.join(", ")}) VALUES (${table.columns.map(() => "?").join(", ")})`,
    );
    for (const row of rows) statement.run(...row);
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
    queue(pk: number, kind: ChangeKind) {
      q.queue.run(pk, kind, null, null, Date.now());
    },
    /** Queues scores pk lo..hi added to session `pk` (inside the call's savepoint). */
    scored(pk: number, lo: number, hi: number) {
      q.queue.run(pk, SCORED, lo, hi, Date.now());
    },
    /** Queues scores pk lo..hi to be resolved to their response's span (inside the call's savepoint). */
    resolve(lo: number, hi: number) {
      q.queue.run(RESOLVE_PK, CHANGE.resolve, lo, hi, Date.now());
    },
    /**
     * Queues the rows a call added to session `pk`, pks lo..hi, and hands them (with their search
     * words when the caller has them) to the projector in memory: they count once the group
     * commit says their call's savepoint was released and the group committed (`callEnded`,
     * `groupEnded`), so that rows undone are never projected from memory.
     */
    added(
      pk: number,
      lo: number,
      hi: number,
      rows: readonly EventRow[],
      words?: readonly string[],
      responses?: readonly (string | null)[],
    ) {
      q.queue.run(pk, ADDED, lo, hi, Date.now());
      if (handedRows + rows.length <= HANDED_MAX_ROWS) ofCall.push([`${pk}:${lo}`, { rows, words, responses }]);
    },
    /** The group commit's word on each call: its savepoint released (true) or undone. */
    callEnded(ok: boolean) {
      if (ok) for (const h of ofCall) ofGroup.push(h);
      ofCall = [];
    },
    /** The group commit's word on each group: committed, or rolled back whole. */
    groupEnded(committed: boolean) {
      if (committed) {
        for (const [key, h] of ofGroup) {
          if (projectedEarly.has(key)) continue;
          handed.set(key, h);
          handedRows += h.rows.length;
        }
      }
      ofGroup = [];
      projectedEarly.clear();
      projector.schedule();
    },
    /** Projects everything queued: before a read that needs the projections, and at close. */
    catchUp() {
      // A read-only connection (a reader beside the writer) reads what is projected.
      if (db.readonly) return;
      // Inside a write call (update_session, a bulk delete) a failure is the call's: it fails.
      if (db.inTransaction) {
        while (step()) {}
        return;
      }
      // Before a read: when storage cannot take the batch (a full disk, a read-only file: O4),
      // the read still answers, from what is projected; writes are answering 503 meanwhile.
      try {
        while (step()) {}
      } catch (error) {
        if (!storageFault(error)) throw error;
        figures.failed++;
      }
    },
    /** After a group commit: a batch soon, so that writes gather into it. */
    schedule: () => {
      if (scheduled !== undefined || closed) return;
      scheduled = setTimeout(() => {
        scheduled = undefined;
        if (closed || !db.open) return;
        if (gathering === 0) gathering = performance.now();
        if (handedRows < READY_ROWS && performance.now() - gathering < GATHER_MS) return projector.schedule();
        gathering = 0;
        // One batch per turn, so that requests and group commits run in between.
        try {
          if (step() && q.any.get() !== undefined) projector.schedule();
        } catch (error) {
          // Storage refuses the batch (O4): it is tried again later; nothing was lost, the queue
          // still holds it (its transaction rolled back).
          figures.failed++;
          if (!storageFault(error)) throw error;
          if (!closed) {
            scheduled = setTimeout(() => {
              scheduled = undefined;
              projector.schedule();
            }, RETRY_MS);
            scheduled.unref();
          }
        }
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
    /**
     * At open: a projection whose version differs from the one the database was projected with
     * (a release that changed what it computes) has everything rebuilt from the raw rows, queued
     * now and worked off by the projector; reads catch up first, so answers stay exact meanwhile.
     */
    checkVersions: db.transaction(() => {
      if (db.readonly) return;
      const stored = db.prepare<[], string>("SELECT value FROM meta WHERE key = 'projections'").pluck().get();
      // A projection added since (not in the stored list) is filled by the migration that made its
      // table, which queues the sessions it needs; one whose version changed is rebuilt with all.
      const known = stored === undefined ? {} : (JSON.parse(stored) as Record<string, number>);
      if (PROJECTIONS.some((p) => p.name in known && known[p.name] !== p.version)) projector.rebuild();
      if (stored !== VERSIONS) {
        db.prepare(
          "INSERT INTO meta (key, value) VALUES ('projections', ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value",
        ).run(VERSIONS);
      }
    }),
    close() {
      closed = true;
      if (scheduled !== undefined) clearTimeout(scheduled);
    },
  };
  return projector;
}

export type SqliteProjector = ReturnType<typeof sqliteProjector>;

/**
 * Score analytics' inputs (db/projections/scores.ts): for the sessions of a batch that have
 * scores, and those in `also` (their scores changed, or they are gone), their scores, tags,
 * agents and scored events; one statement each for the whole batch, only the first when no
 * session of the batch has a score.
 */
function scoredStatements(db: Db) {
  const inList = "(SELECT value FROM json_each(?))";
  const q = {
    scores: db.prepare<[string], ScoreFact & { session_pk: number }>(
      `SELECT session_pk, pk, name, data_type, num, label, source, time_us, event_id FROM scores
       WHERE session_pk IN ${inList} ORDER BY pk`,
    ),
    added: db.prepare<[string], ScoreFact & { session_pk: number }>(
      `SELECT s.session_pk, s.pk, s.name, s.data_type, s.num, s.label, s.source, s.time_us, s.event_id
       FROM json_each(?) j JOIN scores s ON s.pk BETWEEN j.value ->> 1 AND j.value ->> 2 AND s.session_pk = j.value ->> 0
       ORDER BY s.pk`,
    ),
    tags: db.prepare<[string], { pk: number; tags: string | null }>(
      `SELECT pk, tags FROM sessions WHERE pk IN ${inList}`,
    ),
    agents: db.prepare<[string, string], { pk: number; agent: string }>(
      `SELECT session_pk AS pk, id AS agent FROM agents WHERE session_pk IN ${inList}
       UNION SELECT session_pk, CAST(agent_id AS TEXT) FROM events WHERE agent_id IS NOT NULL AND session_pk IN ${inList}`,
    ),
    events: db.prepare<[string], ScoredEvent & { pk: number }>(
      `SELECT e.session_pk AS pk, e.id, e.type, e.model, CAST(json_extract(e.body, '$.name') AS TEXT) AS tool,
         e.agent_id AS agent
       FROM json_each(?) j JOIN events e ON e.session_pk = j.value ->> 0 AND e.id = j.value ->> 1`,
    ),
  };
  return (
    pks: number[],
    also: readonly number[],
    appended: readonly [number, number, number][],
  ): Map<number, Scored> => {
    const found = new Map<number, Scored>();
    const of = (pk: number) => {
      let s = found.get(pk);
      if (s === undefined) {
        s = { scores: [], tags: [], agents: [], events: [] };
        found.set(pk, s);
      }
      return s;
    };
    for (const pk of also) of(pk);
    const named: [number, string][] = [];
    const take = ({ session_pk, ...score }: ScoreFact & { session_pk: number }) => {
      of(session_pk).scores.push(score);
      if (score.event_id !== null) named.push([session_pk, score.event_id]);
    };
    for (const row of q.scores.all(JSON.stringify(pks))) take(row);
    if (appended.length > 0) {
      for (const [pk] of appended) of(pk).appended = true;
      for (const row of q.added.all(JSON.stringify(appended))) take(row);
    }
    const scoredPks = [...found.entries()].filter(([, s]) => s.scores.length > 0).map(([pk]) => pk);
    if (scoredPks.length === 0) return found;
    const list = JSON.stringify(scoredPks);
    for (const { pk, tags } of q.tags.all(list)) {
      const parsed = tags === null ? [] : (JSON.parse(tags) as unknown[]);
      of(pk).tags = parsed.filter((tag): tag is string => typeof tag === "string");
    }
    for (const { pk, agent } of q.agents.all(list, list)) of(pk).agents.push(agent);
    if (named.length > 0) {
      for (const { pk, type, tool, ...event } of q.events.all(JSON.stringify(named))) {
        of(pk).events.push({ ...event, type, tool: type === "tool" ? tool : null });
      }
    }
    return found;
  };
}

/**
 * Resolution (decision 038): the scores waiting for their response's span among scores pk
 * `ranges` and those naming one of `indexed` (project, response id) get the span that
 * `response_spans` holds for their response (the first by session, then span id; within their
 * session when they name one). Answers the sessions of the scores resolved.
 */
function resolveStatements(db: Db) {
  const q = {
    any: db.prepare(`SELECT 1 FROM scores s WHERE ${pending("s.")} LIMIT 1`).pluck(),
    inRanges: db.prepare<[string], Waiting>(
      `SELECT s.pk, s.project_id, s.response_id, s.session_pk FROM json_each(?) j
       JOIN scores s ON s.pk BETWEEN j.value ->> 0 AND j.value ->> 1 WHERE ${pending("s.")}`,
    ),
    naming: db.prepare<[string], Waiting>(
      `SELECT s.pk, s.project_id, s.response_id, s.session_pk FROM json_each(?) j
       JOIN scores s ON s.project_id = j.value ->> 0 AND s.response_id = j.value ->> 1 WHERE ${pending("s.")}`,
    ),
    span: db.prepare<
      { key: number; project: string; response: string; session: number | null },
      { session_pk: number; event_id: string }
    >(
      `SELECT session_pk, event_id FROM response_spans
       WHERE response_key = @key AND project_id = @project AND response_id = @response
         AND (@session IS NULL OR session_pk = @session)
       ORDER BY session_pk, event_id LIMIT 1`,
    ),
    settle: db.prepare<[number, string, number]>("UPDATE scores SET session_pk = ?, event_id = ? WHERE pk = ?"),
  };
  return (ranges: unknown[][], indexed: [string, string][]): Set<number> => {
    const sessions = new Set<number>();
    if (ranges.length === 0 && (indexed.length === 0 || q.any.get() === undefined)) return sessions;
    const waiting = new Map<number, Waiting>();
    if (ranges.length > 0) for (const w of q.inRanges.all(JSON.stringify(ranges))) waiting.set(w.pk, w);
    if (indexed.length > 0) for (const w of q.naming.all(JSON.stringify(indexed))) waiting.set(w.pk, w);
    for (const w of waiting.values()) {
      const span = q.span.get({
        key: responseKey(w.project_id, w.response_id),
        project: w.project_id,
        response: w.response_id,
        session: w.session_pk,
      });
      if (span === undefined) continue;
      q.settle.run(span.session_pk, span.event_id, w.pk);
      sessions.add(span.session_pk);
    }
    return sessions;
  };
}

interface Waiting {
  pk: number;
  project_id: string;
  response_id: string;
  session_pk: number | null;
}
