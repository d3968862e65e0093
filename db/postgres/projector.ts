/**
 * The projector of a PostgreSQL database (docs/decisions/033-projections.md, its PostgreSQL part
 * 033-projections-postgres.md): db/sqlite/projector.ts's batches over `pg`, with the same shares
 * (db/projections/share.ts) and projections (db/projections/projections.ts). A write call stores
 * its raw rows and rows of `projection_queue` (migration 010); the projector takes the queue in
 * batches after the writes are committed and answered, on any node, one node at a time.
 *
 * - One at a time: a session-level advisory lock (PROJECTOR_LOCK) around each batch. Not a
 *   transaction-level one: a REPEATABLE READ transaction's snapshot is taken by its first
 *   statement, which would be the lock's own SELECT, taken before the wait; the batch would then
 *   read the shares and rollups as they were before the batch it waited for.
 * - One snapshot: a batch is one REPEATABLE READ transaction that reads the queue entries and the
 *   raw rows in the same snapshot, takes ALL the visible entries of each session it touches and
 *   deletes exactly those (by seq). A write that commits later is invisible to the batch, rows and
 *   queue entries alike, and is the next batch's: nothing is skipped, nothing counted twice.
 * - Reads that use a projection catch up first (`catchUp`): everything queued when the read
 *   started, under the lock, however many nodes write. A node that writes schedules a batch after
 *   its group commits; every node also looks at the queue every WATCH_MS (one read of the queue's
 *   first entry) and projects when entries are left there, so the entries of a node that died
 *   are projected within seconds, whether or not the others write.
 */
import { performance } from "node:perf_hooks";
import { setTimeout as delay } from "node:timers/promises";
import type pg from "pg";
import { type Change, PROJECTIONS, type SessionTable, type SumTable, type Write } from "../projections/projections.ts";
import { indexedResponses, pending, RESPONSE_KEY, responseKey } from "../projections/responses.ts";
import { type EventFacts, fold, type SessionFacts, type Share, shareOf } from "../projections/share.ts";
import type { Change as ChangeOf, Scored, ScoredEvent, ScoreFact } from "../projections/types.ts";
import type { StorageStats } from "../store.ts";
import { isRetryable } from "./errors.ts";

/**
 * How a session changed: its row only; events added (their ids); anything (count it again); its
 * scores (score analytics project it again, even when none is left); scores (their pks in `ids`)
 * may wait for their response's span (under session pk 0, RESOLVE_PK: decision 038); scores
 * (their pks in `ids`) added to the session (when that is all that changed, score analytics add
 * their facts and leave the others). 3 is SQLite's reindex.
 */
export const CHANGE = { row: 0, added: 1, again: 2, scores: 4, resolve: 5, scored: 6 } as const;
const { added: ADDED, again: AGAIN, scores: SCORES, scored: SCORED } = CHANGE;
/** The queue's "session" of the scores to resolve: no session has pk 0. */
export const RESOLVE_PK = 0;

/** The projector's advisory lock key; 0x61676d70 is "agmp" (migrations take "agmn"). */
export const PROJECTOR_LOCK = 0x61676d70;
/** Sessions per batch at most, and queue entries (a session's entries are never split across batches). */
const BATCH_SESSIONS = 500;
const BATCH_ENTRIES = 5_000;
/** How long the projector lets writes gather after a group commit before it runs. */
const DELAY_MS = 20;
/** When another node holds the lock: this node looks again after this long, in case it stopped. */
const BUSY_MS = 250;
/**
 * An idle node looks at the queue this often and projects what it finds: a node that died with
 * entries queued (its batch killed, or its writes committed and not yet projected) is taken over
 * within this long even when no other node writes or reads.
 */
const WATCH_MS = 2_000;
/** A batch is run this many times at most while it fails by a deadlock or serialization failure. */
const RETRIES = 8;

/** The session's end in microseconds, as migration 005's duration trigger read it. */
const END_US = "(extract(epoch FROM end_timestamp::timestamptz) * 1000000)::int8";

/**
 * An event's facts (share.ts EventFacts): a tool's key and an error's trigger as migration 009
 * made them (body's name, '=' before it, '' without; trigger_event_id, else the parent span).
 */
const FACTS = `e.session_pk, e.id, e.type, e.init_us, e.end_us, e.model, e.prompt_tokens AS prompt,
  e.completion_tokens AS completion, e.cache_read_tokens AS cache_read, e.cache_creation_tokens AS cache_creation,
  e.reasoning_tokens AS reasoning, e.cost,
  CASE WHEN e.type = 'tool' THEN coalesce('=' || (e.body::json ->> 'name'), '') END AS tool,
  CASE WHEN e.type = 'error' THEN coalesce(e.body::json ->> 'trigger_event_id', e.parent_id) END AS target,
  CASE WHEN strpos(e.extra, '${RESPONSE_KEY}') > 0 THEN e.extra END AS response_extra`;

/** An event's facts, its session's pk, and its `extra` when that may carry a response id (../projections/responses.ts). */
type Facts = EventFacts & { session_pk: number; response_extra: string | null };

/** The facts of the events named by (session, id), by their primary key. */
const byIds = async (db: pg.ClientBase, named: { pk: number; id: string }[]) =>
  (
    await db.query<Facts>(
      `SELECT ${FACTS} FROM unnest($1::int8[], $2::text[]) AS a (session_pk, id)
       JOIN events e ON e.session_pk = a.session_pk AND e.id = a.id COLLATE "C"`,
      [named.map((n) => n.pk), named.map((n) => n.id)],
    )
  ).rows;

interface Entry {
  seq: number;
  session_pk: number;
  kind: number;
  ids: string[] | null;
}

/** The PostgreSQL type of a projection table's column (every other one is a bigint). */
const TYPES: Record<string, string> = {
  project_id: "text",
  dim: "text",
  key: "text",
  model: "text",
  level: "int4",
  bucket: "int4",
  cost: "float8",
  // score_facts (db/projections/scores.ts)
  name: "text",
  data_type: "text",
  num: "float8",
  label: "text",
  source: "text",
  // response_spans (db/projections/responses.ts)
  response_id: "text",
  event_id: "text",
};
const typeOf = (column: string) => TYPES[column] ?? "int8";
/** `unnest` of one array parameter per column, from $1 on. */
const unnest = (columns: readonly string[]) =>
  `unnest(${columns.map((c, i) => `$${i + 1}::${typeOf(c)}[]`).join(", ")}) AS u (${columns.join(", ")})`;
/** Rows as one array per column. */
const byColumn = (rows: unknown[][], width: number) =>
  Array.from({ length: width }, (_, c) => rows.map((row) => row[c] ?? null));

type ProjectorStats = NonNullable<StorageStats["projection"]>;

/**
 * `pool`: the projector's own connection (one is enough: this node projects one batch at a
 * time); `readers`: where the queue's mark and figures are read, without waiting for a batch.
 */
export function postgresProjector(pool: pg.Pool, readers: pg.Pool) {
  const figures = { batches: 0, longest: 0 };
  /** Batches that queued sessions again (scores resolved): a catch-up projects those too. */
  let requeued = 0;
  let scheduled: NodeJS.Timeout | undefined;
  let closed = false;
  /** This node's projecting, one job at a time (a catch-up waits for a batch in progress). */
  let turn: Promise<unknown> = Promise.resolve();
  const exclusive = <T>(job: () => Promise<T>): Promise<T> => {
    const run = turn.then(job, job);
    turn = run.catch(() => undefined);
    return run;
  };

  /**
   * `work` on a connection holding the lock; with `wait` false, undefined when another node
   * holds it. A connection that failed (the unlock among others) is closed, which frees the lock.
   */
  const locked = async <T>(wait: boolean, work: (db: pg.ClientBase) => Promise<T>): Promise<T | undefined> => {
    const db = await pool.connect();
    let broken: Error | undefined;
    try {
      if (wait) await db.query("SELECT pg_advisory_lock($1)", [PROJECTOR_LOCK]);
      else {
        const { rows } = await db.query<{ got: boolean }>("SELECT pg_try_advisory_lock($1) AS got", [PROJECTOR_LOCK]);
        if (!rows[0]?.got) return undefined;
      }
      try {
        return await work(db);
      } finally {
        await db.query("SELECT pg_advisory_unlock($1)", [PROJECTOR_LOCK]);
      }
    } catch (error) {
      broken = error as Error;
      throw error;
    } finally {
      db.release(broken);
    }
  };

  /** One batch in its own transaction, run again after a deadlock; false when the queue was empty. */
  const step = async (db: pg.ClientBase): Promise<boolean> => {
    for (let attempt = 1; ; attempt++) {
      const started = performance.now();
      try {
        await db.query("BEGIN ISOLATION LEVEL REPEATABLE READ");
        const done = await batch(db);
        await db.query("COMMIT");
        if (!done) return false;
        const seconds = (performance.now() - started) / 1000;
        figures.batches++;
        if (seconds > figures.longest) figures.longest = seconds;
        return true;
      } catch (error) {
        await db.query("ROLLBACK").catch(() => undefined);
        // A writer changed a session's row under the batch (its totals are on it): a new snapshot.
        if (!isRetryable(error) || attempt >= RETRIES) throw error;
        await delay(Math.random() * 5 * attempt);
      }
    }
  };

  /** The oldest sessions of the queue, with all their visible entries, projected in one snapshot. */
  const batch = async (db: pg.ClientBase): Promise<boolean> => {
    const { rows: head } = await db.query<{ session_pk: number }>(
      `SELECT DISTINCT session_pk FROM (SELECT session_pk FROM projection_queue ORDER BY seq LIMIT $1) h LIMIT $2`,
      [BATCH_ENTRIES, BATCH_SESSIONS],
    );
    if (head.length === 0) return false;
    const { rows: entries } = await db.query<Entry>(
      "SELECT seq, session_pk, kind, ids FROM projection_queue WHERE session_pk = ANY($1::int8[])",
      [head.map((h) => h.session_pk)],
    );
    const pks = head
      .map((h) => h.session_pk)
      .filter((pk) => pk !== RESOLVE_PK)
      .sort((a, b) => a - b);
    const { rows: sessions } = await db.query<{
      pk: number;
      project: string;
      init_us: number;
      end_us: number | null;
      failed: boolean;
    }>(
      `SELECT pk, project_id AS project, init_us, ${END_US} AS end_us, end_state IS NOT DISTINCT FROM 'Fail' AS failed
       FROM sessions WHERE pk = ANY($1::int8[])`,
      [pks],
    );
    const { rows: stored } = await db.query<{ session_pk: number; share: string }>(
      "SELECT session_pk, share FROM session_shares WHERE session_pk = ANY($1::int8[])",
      [pks],
    );
    const sessionFacts = new Map(sessions.map((s) => [s.pk, s]));
    const shares = new Map(stored.map((s) => [s.session_pk, JSON.parse(s.share) as Share]));
    const bySession = new Map<number, Entry[]>();
    for (const entry of entries) {
      const of = bySession.get(entry.session_pk);
      if (of) of.push(entry);
      else bySession.set(entry.session_pk, [entry]);
    }
    // Which sessions are counted again from all their rows, which fold the rows added.
    const again = new Set<number>();
    const added: { pk: number; id: string }[] = [];
    for (const pk of pks) {
      if (!sessionFacts.has(pk)) continue;
      const mine = bySession.get(pk) ?? [];
      if (!shares.has(pk) || mine.some((e) => e.kind === AGAIN)) again.add(pk);
      else for (const e of mine) if (e.kind === ADDED) for (const id of e.ids ?? []) added.push({ pk, id });
    }
    const rows = new Map<number, Facts[]>();
    const put = (list: Facts[]) => {
      for (const row of list) {
        const of = rows.get(row.session_pk);
        if (of) of.push(row);
        else rows.set(row.session_pk, [row]);
      }
    };
    if (again.size > 0) {
      put(
        (await db.query<Facts>(`SELECT ${FACTS} FROM events e WHERE e.session_pk = ANY($1::int8[])`, [[...again]]))
          .rows,
      );
    }
    if (added.length > 0) put(await byIds(db, added));
    // Events that may carry a response id (db/projections/responses.ts reads it): all of a
    // session counted again, the added ones of the others (read with their facts above).
    const responses = new Map<number, NonNullable<ChangeOf["responses"]>>();
    for (const [pk, list] of rows) {
      const events = list.flatMap((r) => (r.response_extra === null ? [] : [{ id: r.id, extra: r.response_extra }]));
      if (again.has(pk) || events.length > 0) responses.set(pk, { whole: again.has(pk), events });
    }
    for (const pk of again) if (!responses.has(pk)) responses.set(pk, { whole: true, events: [] });
    // The stored triggers of the folded errors (fold's lookup is synchronous): one query for all.
    const wanted: { pk: number; id: string }[] = [];
    for (const pk of new Set(added.map((a) => a.pk))) {
      const mine = rows.get(pk) ?? [];
      const ids = new Set(mine.map((r) => r.id));
      for (const r of mine)
        if (r.type === "error" && r.target !== null && !ids.has(r.target)) wanted.push({ pk, id: r.target });
    }
    const triggers = new Map<string, EventFacts>();
    if (wanted.length > 0) {
      for (const row of await byIds(db, wanted)) triggers.set(`${row.session_pk}\u0000${row.id}`, row);
    }

    const changes: Change[] = [];
    /** Sessions whose score facts are made again even when they have no score (left). */
    const rescored: number[] = [];
    /** Sessions that only gained scores, and the pks of those scores. */
    const appended = new Map<number, string[]>();
    const kept: [number, string][] = [];
    const dropped: number[] = [];
    for (const pk of pks) {
      const row = sessionFacts.get(pk);
      const before = shares.get(pk);
      let after: Share | undefined;
      if (row !== undefined) {
        const session: SessionFacts = {
          project: row.project,
          init_us: row.init_us,
          end_us: row.end_us,
          failed: row.failed,
        };
        const mine = rows.get(pk) ?? [];
        if (before === undefined || again.has(pk)) after = shareOf(session, mine);
        else {
          after = fold(before, session, mine, (ids) => ids.flatMap((id) => triggers.get(`${pk}\u0000${id}`) ?? []));
        }
      }
      if (after) kept.push([pk, JSON.stringify(after)]);
      else if (before) dropped.push(pk);
      if (before || after) changes.push({ pk, before, after, responses: row && responses.get(pk) });
      const mine = bySession.get(pk) ?? [];
      if (row !== undefined && before !== undefined && mine.length > 0 && mine.every((e) => e.kind === SCORED)) {
        appended.set(
          pk,
          mine.flatMap((e) => e.ids ?? []),
        );
      } else if (row === undefined || mine.some((e) => e.kind === SCORES || e.kind === SCORED)) rescored.push(pk);
    }
    const loaded = await scoredOf(
      db,
      pks.filter((pk) => !appended.has(pk)),
      rescored,
      [...appended.values()].flat(),
    );
    for (const pk of appended.keys()) {
      const scored = loaded.get(pk);
      if (scored) scored.appended = true;
    }
    for (const change of changes) change.scored = loaded.get(change.pk);
    if (kept.length > 0) {
      await db.query(
        `INSERT INTO session_shares (session_pk, share) SELECT * FROM unnest($1::int8[], $2::text[])
         ON CONFLICT (session_pk) DO UPDATE SET share = excluded.share`,
        byColumn(kept, 2),
      );
    }
    if (dropped.length > 0) await db.query("DELETE FROM session_shares WHERE session_pk = ANY($1::int8[])", [dropped]);
    const writes = PROJECTIONS.flatMap((projection) => projection.apply(changes));
    for (const write of writes) await run(db, write);
    // Scores waiting for a response's span: those the calls queued, those naming a response this
    // batch indexed. Their sessions are queued: the next batch counts them in score analytics.
    const waiting = entries.filter((e) => e.session_pk === RESOLVE_PK).flatMap((e) => e.ids ?? []);
    const resolved = await resolve(db, waiting, indexedResponses(writes));
    if (resolved.length > 0) {
      await db.query(
        `INSERT INTO projection_queue (session_pk, kind) SELECT pk, ${SCORES} FROM unnest($1::int8[]) AS u (pk) ORDER BY pk`,
        [resolved],
      );
      requeued++;
    }
    await db.query("DELETE FROM projection_queue WHERE seq = ANY($1::int8[])", [entries.map((e) => e.seq)]);
    return true;
  };

  const watch = setInterval(() => {
    if (scheduled !== undefined || closed) return;
    readers.query("SELECT 1 FROM projection_queue LIMIT 1").then(
      ({ rowCount }) => {
        if ((rowCount ?? 0) > 0) projector.schedule(0);
      },
      () => undefined, // the database is away: the next look, or a read's catch-up, tries again
    );
  }, WATCH_MS);
  watch.unref();

  const projector = {
    /** One batch (`agentmon rebuild` shows its progress between them): the queue entries left. */
    async step(): Promise<number> {
      await exclusive(() => locked(true, step));
      const { rows } = await readers.query<{ n: number }>("SELECT count(*) AS n FROM projection_queue");
      return rows[0]?.n ?? 0;
    },
    /**
     * Before a read that uses a projection: everything queued when it started (the writes
     * acknowledged before it, on any node) is projected, by this node under the lock or by the
     * node it waited for. Entries queued after are not waited for, so a read ends under ingest.
     */
    async catchUp(): Promise<void> {
      const { rows } = await readers.query<{ mark: number | null }>("SELECT max(seq) AS mark FROM projection_queue");
      let mark = rows[0]?.mark ?? null;
      if (mark === null) return;
      const left = async (db: pg.ClientBase) =>
        ((await db.query("SELECT 1 FROM projection_queue WHERE seq <= $1 LIMIT 1", [mark])).rowCount ?? 0) > 0;
      await exclusive(() =>
        locked(true, async (db) => {
          for (;;) {
            const seen = requeued;
            while ((await left(db)) && (await step(db))) {}
            // A batch resolved scores and queued their sessions after the mark: those too.
            if (requeued === seen) return;
            mark = (await db.query<{ mark: number | null }>("SELECT max(seq) AS mark FROM projection_queue")).rows[0]
              ?.mark as number | null;
            if (mark === null) return;
          }
        }),
      );
    },
    /** After a group commit: a batch soon, so that writes gather into it; more while there are. */
    schedule(after = DELAY_MS) {
      if (scheduled !== undefined || closed) return;
      scheduled = setTimeout(() => {
        scheduled = undefined;
        if (closed) return;
        // One batch per turn, so that this node's catch-ups run in between.
        exclusive(() => locked(false, step)).then(
          (more) => {
            if (more === undefined) projector.schedule(BUSY_MS);
            else if (more) projector.schedule(0);
          },
          // A batch that failed (a lost connection) is tried again later; reads catch up meanwhile.
          () => projector.schedule(BUSY_MS),
        );
      }, after);
      scheduled.unref();
    },
    async stats(): Promise<ProjectorStats> {
      const { rows } = await readers.query<{ n: number; lag: number | null }>(
        `SELECT count(*) AS n, (extract(epoch FROM clock_timestamp()) * 1000 - min(at_ms)) / 1000 AS lag
         FROM projection_queue`,
      );
      return {
        backlog: rows[0]?.n ?? 0,
        lagSeconds: Math.max(0, rows[0]?.lag ?? 0),
        batches: figures.batches,
        longestBatchSeconds: figures.longest,
      };
    },
    /**
     * `agentmon rebuild`: every projection emptied and every session queued to be counted again
     * from its rows, in one transaction under the lock; batches then work the queue off (a crash
     * meanwhile resumes where it was: the queue is durable).
     */
    rebuild: () =>
      exclusive(() =>
        locked(true, async (db) => {
          await db.query("BEGIN");
          try {
            for (const projection of PROJECTIONS)
              for (const table of projection.tables) await db.query(`DELETE FROM ${table}`);
            await db.query("DELETE FROM session_shares");
            await db.query(
              `INSERT INTO projection_queue (session_pk, kind) SELECT pk, ${AGAIN} FROM sessions ORDER BY pk`,
            );
            await db.query("COMMIT");
          } catch (error) {
            await db.query("ROLLBACK").catch(() => undefined);
            throw error;
          }
        }),
      ),
    /** Stops scheduling, and waits for a batch in progress. */
    async close() {
      closed = true;
      clearInterval(watch);
      if (scheduled !== undefined) clearTimeout(scheduled);
      await turn;
    },
  };
  return projector;
}

/** One projection's writes, as multi-row statements (unnest), in key order. */
async function run(db: pg.ClientBase, write: Write) {
  if (write.kind === "add") return add(db, write.table, write.rows);
  if (write.kind === "replace") return replace(db, write.table, write.pks, write.rows);
  if (write.kind === "insert") {
    await db.query(
      `INSERT INTO ${write.table.name} (${write.table.columns.join(", ")}) SELECT * FROM ${unnest(write.table.columns)}
       ON CONFLICT DO NOTHING`,
      byColumn(write.rows, write.table.columns.length),
    );
    return;
  }
  const columns = ["pk", ...write.columns];
  await db.query(
    `UPDATE sessions s SET ${write.columns.map((c) => `${c} = u.${c}`).join(", ")}
     FROM ${unnest(columns)} WHERE s.pk = u.pk`,
    byColumn(write.rows, columns.length),
  );
}

/** Signed sums added, the larger max kept; a row whose count falls to 0 removed. */
async function add(db: pg.ClientBase, table: SumTable, rows: unknown[][]) {
  const columns = [...table.keys, ...table.sums, ...(table.max ? [table.max] : [])];
  const sums = table.sums.map((c) => `${c} = r.${c} + excluded.${c}`);
  if (table.max) sums.push(`${table.max} = greatest(r.${table.max}, excluded.${table.max})`);
  const keys = table.keys.join(", ");
  await db.query(
    `INSERT INTO ${table.name} AS r (${columns.join(", ")}) SELECT * FROM ${unnest(columns)} ORDER BY ${keys}
     ON CONFLICT (${keys}) DO UPDATE SET ${sums.join(", ")}`,
    byColumn(rows, columns.length),
  );
  // Only a row whose count went down can be empty now.
  const count = table.keys.length + table.sums.indexOf(table.count);
  const lower = rows.filter((row) => (row[count] as number) < 0);
  if (lower.length === 0) return;
  await db.query(
    `DELETE FROM ${table.name} r USING ${unnest(table.keys)}
     WHERE ${table.keys.map((k) => `r.${k} = u.${k}`).join(" AND ")} AND r.${table.count} = 0`,
    byColumn(lower, table.keys.length),
  );
}

/** The rows of the sessions `pks` replaced by `rows`. */
async function replace(db: pg.ClientBase, table: SessionTable, pks: number[], rows: unknown[][]) {
  await db.query(`DELETE FROM ${table.name} WHERE session_pk = ANY($1::int8[])`, [pks]);
  if (rows.length === 0) return;
  await db.query(
    `INSERT INTO ${table.name} (${table.columns.join(", ")}) SELECT * FROM ${unnest(table.columns)}`,
    byColumn(rows, table.columns.length),
  );
}

export type PostgresProjector = ReturnType<typeof postgresProjector>;

/**
 * Score analytics' inputs (db/projections/scores.ts), as db/sqlite/projector.ts reads them: for
 * the sessions of a batch that have scores, and those in `also`, their scores, tags, agents and
 * scored events; only the first statement when no session of the batch has a score.
 */
async function scoredOf(
  db: pg.ClientBase,
  pks: number[],
  also: readonly number[],
  added: readonly string[],
): Promise<Map<number, Scored>> {
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
  const { rows: scores } = await db.query<ScoreFact & { session_pk: number }>(
    `SELECT session_pk, pk, name, data_type, num, label, source, time_us, event_id FROM scores
     WHERE session_pk = ANY($1::int8[]) OR pk = ANY($2::int8[]) ORDER BY pk`,
    [pks, added],
  );
  const named: { pk: number; id: string }[] = [];
  for (const { session_pk, ...score } of scores) {
    of(session_pk).scores.push(score);
    if (score.event_id !== null) named.push({ pk: session_pk, id: score.event_id });
  }
  const scored = [...found.entries()].filter(([, s]) => s.scores.length > 0).map(([pk]) => pk);
  if (scored.length === 0) return found;
  const { rows: tags } = await db.query<{ pk: number; tags: string[] | null }>(
    "SELECT pk, tags FROM sessions WHERE pk = ANY($1::int8[])",
    [scored],
  );
  for (const row of tags) of(row.pk).tags = row.tags ?? [];
  const { rows: agents } = await db.query<{ pk: number; agent: string }>(
    `SELECT session_pk AS pk, id AS agent FROM agents WHERE session_pk = ANY($1::int8[])
     UNION SELECT session_pk, agent_id FROM events WHERE agent_id IS NOT NULL AND session_pk = ANY($1::int8[])`,
    [scored],
  );
  for (const row of agents) of(row.pk).agents.push(row.agent);
  if (named.length > 0) {
    const { rows: events } = await db.query<ScoredEvent & { pk: number }>(
      `SELECT e.session_pk AS pk, e.id, e.type, e.model, CASE WHEN e.type = 'tool' THEN e.body::json ->> 'name' END AS tool,
         e.agent_id AS agent
       FROM unnest($1::int8[], $2::text[]) AS n (pk, id) JOIN events e ON e.session_pk = n.pk AND e.id = n.id`,
      [named.map((n) => n.pk), named.map((n) => n.id)],
    );
    for (const { pk, ...event } of events) of(pk).events.push(event);
  }
  return found;
}

/**
 * Resolution (decision 038), as db/sqlite/projector.ts's: the scores waiting for their response's
 * span among scores `pks` and those naming one of `indexed` (project, response id) get the span
 * that `response_spans` holds for their response (the first by session, then span id; within
 * their session when they name one). Answers the sessions of the scores resolved.
 */
async function resolve(db: pg.ClientBase, pks: string[], indexed: [string, string][]): Promise<number[]> {
  if (pks.length === 0 && indexed.length === 0) return [];
  if (pks.length === 0) {
    const any = await db.query(`SELECT 1 FROM scores s WHERE ${pending("s.")} LIMIT 1`);
    if ((any.rowCount ?? 0) === 0) return [];
  }
  const { rows: waiting } = await db.query<{
    pk: string;
    project_id: string;
    response_id: string;
    session_pk: string | null;
  }>(
    `SELECT s.pk, s.project_id, s.response_id, s.session_pk FROM scores s WHERE s.pk = ANY($1::int8[]) AND ${pending("s.")}
     UNION
     SELECT s.pk, s.project_id, s.response_id, s.session_pk FROM unnest($2::text[], $3::text[]) AS n (project_id, response_id)
     JOIN scores s ON s.project_id = n.project_id AND s.response_id = n.response_id WHERE ${pending("s.")}`,
    [pks, indexed.map((i) => i[0]), indexed.map((i) => i[1])],
  );
  if (waiting.length === 0) return [];
  const { rows } = await db.query<{ session_pk: number }>(
    `WITH found AS (
       SELECT w.pk, r.session_pk, r.event_id
       FROM unnest($1::int8[], $2::int8[], $3::text[], $4::text[], $5::int8[]) AS w (pk, key, project_id, response_id, session_pk)
       CROSS JOIN LATERAL (SELECT r.session_pk, r.event_id FROM response_spans r
         WHERE r.response_key = w.key AND r.project_id = w.project_id AND r.response_id = w.response_id
           AND (w.session_pk IS NULL OR r.session_pk = w.session_pk)
         ORDER BY r.session_pk, r.event_id LIMIT 1) r)
     UPDATE scores s SET session_pk = f.session_pk, event_id = f.event_id FROM found f WHERE s.pk = f.pk
     RETURNING s.session_pk`,
    [
      waiting.map((w) => w.pk),
      waiting.map((w) => responseKey(w.project_id, w.response_id)),
      waiting.map((w) => w.project_id),
      waiting.map((w) => w.response_id),
      waiting.map((w) => w.session_pk),
    ],
  );
  return [...new Set(rows.map((r) => Number(r.session_pk)))];
}
