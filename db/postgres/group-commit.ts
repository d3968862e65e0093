/**
 * Group commit on PostgreSQL (docs/decisions/016-postgresql.md). Write calls queue as on SQLite
 * (db/sqlite/group-commit.ts); a group of queued calls runs in ONE transaction on one of the
 * writer connections, and the calls settle only once it is committed (G7). Two things differ:
 *
 * - Several writer connections (at least two): while one group commits, the next runs on another
 *   connection, so one slow commit does not stall the queue. Calls of different groups may then
 *   commit in either order; they are concurrent calls (each client waits for its answer before
 *   its next write), and what they touch in common is serialized by row locks.
 * - Round trips cost more than statements: the group's event inserts (the bulk of the traffic) go
 *   to the database as ONE statement (`INSERT ... SELECT FROM unnest(...)`), after one query that
 *   checks every API key of the group (4.3) and one that finds every session. Other calls run one
 *   after the other, each in a savepoint when the group has more than one call.
 *
 * A group that fails as a whole for a reason of one call's own (a session deleted by another node
 * between the check and the insert, a deadlock) is rolled back and its calls are run again one
 * per transaction, so a call fails only for its own reason. A storage fault (connection lost,
 * disk full) fails every call of the group.
 */
import { performance } from "node:perf_hooks";
import { setTimeout as delay } from "node:timers/promises";
import type pg from "pg";
import { isLive } from "../../domain/keys.ts";
import type { ApiKeyRecord } from "../../domain/types.ts";
import { KeyRevoked, StorageFault } from "../errors.ts";
import { GroupFigures, type GroupStats, takeGroup } from "../groups.ts";
import type { EventRow } from "../rows.ts";
import { EVENT_COLUMNS, ROW } from "../rows.ts";
import { isFault, isRetryable, translate } from "./errors.ts";
import { CHANGE } from "./projector.ts";
import { searchWords } from "./search.ts";

/** A group holds at most this many calls, or this many rows; a call is never split. */
export const GROUP_MAX_CALLS = 500;
export const GROUP_MAX_ROWS = 5_000;
/**
 * O2: past this many rows waiting for a writer connection, new writes are refused (StorageFault
 * `behind`: 503 with Retry-After) rather than queued without bound; a call of no rows never is.
 */
export const MAX_QUEUED_ROWS = 4 * GROUP_MAX_ROWS;

/** A call alone is run this many times at most while it fails by a deadlock (40P01, 40001). */
export const RETRIES = 8;

/** A transaction's queries: what a generic call runs with. */
export type Tx = pg.ClientBase;

/** The API key a JWT's write was made through, checked inside the write's transaction (4.3). */
interface KeyCheck {
  keyId: string | undefined;
  projectId: string;
}

/** A create_events call: batched with the others of its group into one INSERT. */
interface EventsCall extends KeyCheck {
  kind: "events";
  sessionId: string;
  rows: EventRow[];
  /** Each row's search_words, made from its record (no need to parse the body's JSON again). */
  words: string[];
}

/** Any other write: run as it is, in the group's transaction. */
interface RunCall<T> extends KeyCheck {
  kind: "run";
  rows: number;
  run: (tx: Tx) => Promise<T>;
}

type Work = EventsCall | RunCall<unknown>;
type Queued = Work & { weight: number; resolve: (value: unknown) => void; reject: (error: unknown) => void };
type Outcome = { ok: true; value: unknown } | { ok: false; error: unknown };

const COLUMN_TYPES: Record<(typeof EVENT_COLUMNS)[number], string> = {
  id: "text",
  type: "text",
  init_timestamp: "text",
  init_us: "int8",
  end_timestamp: "text",
  end_us: "int8",
  agent_id: "text",
  model: "text",
  prompt_tokens: "int8",
  completion_tokens: "int8",
  cost: "float8",
  cost_source: "text",
  body: "text",
  aliases: "text",
  extra: "text",
  parent_id: "text",
  own_agent_id: "text",
  cache_read_tokens: "int8",
  cache_creation_tokens: "int8",
  reasoning_tokens: "int8",
};

/** One statement inserts any number of event rows: one array parameter per column. */
export const INSERT_EVENTS = `INSERT INTO events (session_pk, ${EVENT_COLUMNS.join(", ")}, search_words)
  SELECT * FROM unnest($1::int8[], ${EVENT_COLUMNS.map((c, i) => `$${i + 2}::${COLUMN_TYPES[c]}[]`).join(", ")},
    $${EVENT_COLUMNS.length + 2}::text[])
  ON CONFLICT (session_pk, id) DO NOTHING`;

/**
 * INSERT_EVENTS and the projection queue's entry of what it stored (docs/decisions/033-projections.md):
 * the ids of each session's new events. Answers their ids.
 */
export const INSERT_QUEUED_EVENTS = `WITH added AS (${INSERT_EVENTS} RETURNING session_pk, id), queued AS (
    INSERT INTO projection_queue (session_pk, kind, ids)
    SELECT session_pk, ${CHANGE.added}, array_agg(id) FROM added GROUP BY session_pk ORDER BY session_pk
  )
  SELECT id FROM added`;

/**
 * The create_events calls of a group, as ONE statement: each call's session looked up in its
 * project and its API key checked (4.3), and the rows of the calls that pass inserted in the
 * order of their session and id (two groups that share rows then wait for one another rather
 * than deadlock), and in call order for two copies of one id (the first stays: E3), all in the
 * statement's own atomic
 * snapshot. Answers one row per call: its session's pk (null: not a session of the project),
 * whether its key is live, and how many rows its session got (`stored`: a retry's rows are there
 * already and are not counted, G8), with their ids when another call of the group names the same
 * session (then eventsStored tells whose they are). The same statement queues each session's new
 * events for the projector (projector.ts, by their ids). A group of nothing but create_events is
 * this one round trip, with no BEGIN or COMMIT of its own.
 */
const GROUP_EVENTS = `WITH calls AS (
    SELECT * FROM unnest($1::int4[], $2::text[], $3::text[], $4::text[]) AS c (call, session_id, project_id, key_id)
  ), verdicts AS (
    SELECT c.call, s.pk, c.key_id IS NULL OR EXISTS (
        SELECT 1 FROM api_keys k WHERE k.id = c.key_id AND k.project_id = c.project_id AND k.revoked_at IS NULL
      ) AS live
    FROM calls c LEFT JOIN sessions s ON s.id = c.session_id AND s.project_id = c.project_id
  ), added AS (
    INSERT INTO events (session_pk, ${EVENT_COLUMNS.join(", ")}, search_words)
    SELECT v.pk, ${EVENT_COLUMNS.map((c) => `r.${c}`).join(", ")}, r.search_words
    FROM unnest($5::int4[], ${EVENT_COLUMNS.map((c, i) => `$${i + 6}::${COLUMN_TYPES[c]}[]`).join(", ")},
        $${EVENT_COLUMNS.length + 6}::text[])
      WITH ORDINALITY AS r (call, ${EVENT_COLUMNS.join(", ")}, search_words, ord)
    JOIN verdicts v ON v.call = r.call AND v.live AND v.pk IS NOT NULL
    ORDER BY v.pk, r.id, r.ord
    ON CONFLICT (session_pk, id) DO NOTHING
    RETURNING session_pk, id
  ), stored AS (
    SELECT session_pk, count(*)::int4 AS n, array_agg(id) AS ids FROM added GROUP BY session_pk
  ), queued AS (
    INSERT INTO projection_queue (session_pk, kind, ids)
    SELECT session_pk, ${CHANGE.added}, ids FROM stored ORDER BY session_pk
  )
  SELECT v.call, v.pk, v.live, coalesce(s.n, 0) AS stored,
    CASE WHEN count(*) OVER (PARTITION BY v.pk) > 1 THEN s.ids END AS ids
  FROM verdicts v LEFT JOIN stored s ON s.session_pk = v.pk`;

/**
 * The parameters of INSERT_EVENTS for these rows, each with its session's pk, then their
 * search_words (`words`, else made from the body).
 */
export function eventColumns(rows: { pk: number; row: EventRow; words?: string | undefined }[]): unknown[][] {
  const columns: unknown[][] = [rows.map((r) => r.pk)];
  for (let c = 0; c < EVENT_COLUMNS.length; c++) columns.push(rows.map((r) => r.row[c]));
  columns.push(rows.map((r) => r.words ?? searchWords(r.row[ROW.body])));
  return columns;
}

export class PgGroupCommit {
  readonly #pool: pg.Pool;
  readonly #writers: number;
  readonly #queue: Queued[] = [];
  #busy = 0;
  #scheduled = false;
  #queuedRows = 0;
  readonly #figures = new GroupFigures();
  #idle: (() => void)[] = [];

  /** Runs after each committed transaction (the projector's turn: projector.ts schedule). */
  readonly #afterCommit: () => void;

  /** `pool` holds the writer connections; `writers` groups run at once (its size). */
  constructor(pool: pg.Pool, writers: number, afterCommit: () => void = () => {}) {
    this.#pool = pool;
    this.#writers = Math.max(1, writers);
    this.#afterCommit = afterCommit;
  }

  get commits() {
    return this.#figures.commits;
  }

  stats(): GroupStats {
    return this.#figures.snapshot(this.#queue.length, this.#queuedRows);
  }

  /**
   * Queues create_events rows for a session; once committed, answers how many rows it stored (the
   * others were stored already, E3), false: not a session of the project. `words`: each row's
   * search_words (db/postgres/search.ts fieldWords of its record).
   */
  events(
    projectId: string,
    sessionId: string,
    rows: EventRow[],
    words: string[],
    keyId?: string,
  ): Promise<number | false> {
    const call = { kind: "events" as const, projectId, sessionId, rows, words, keyId };
    return this.#enqueue(call, rows.length) as Promise<number | false>;
  }

  /** Queues any other write; it runs in the group's transaction and settles once that commits. */
  write<T>(rows: number, check: KeyCheck | undefined, run: (tx: Tx) => Promise<T>): Promise<T> {
    const work: RunCall<T> = { kind: "run", rows, run, keyId: check?.keyId, projectId: check?.projectId ?? "" };
    return this.#enqueue(work as RunCall<unknown>, rows) as Promise<T>;
  }

  /** Resolves once nothing is queued or running (close() waits for it, so no call is dropped). */
  drained(): Promise<void> {
    if (this.#queue.length === 0 && this.#busy === 0) return Promise.resolve();
    return new Promise((resolve) => this.#idle.push(resolve));
  }

  #enqueue(work: Work, rows: number): Promise<unknown> {
    return new Promise((resolve, reject) => {
      const weight = Math.max(1, rows);
      if (this.#queuedRows > 0 && this.#queuedRows + weight > MAX_QUEUED_ROWS) {
        reject(new StorageFault("behind", "writes arrive faster than the database takes them"));
        return;
      }
      this.#queue.push({ ...work, weight, resolve, reject });
      this.#queuedRows += weight;
      this.#schedule();
    });
  }

  /** The next turn of the event loop takes a group, so that the calls of this turn join it. */
  #schedule() {
    if (this.#scheduled || this.#busy >= this.#writers || this.#queue.length === 0) return;
    this.#scheduled = true;
    setImmediate(() => {
      this.#scheduled = false;
      while (this.#busy < this.#writers && this.#queue.length > 0) {
        const group = this.#nextGroup();
        this.#busy++;
        void this.#run(group).finally(() => {
          this.#busy--;
          this.#schedule();
          if (this.#queue.length === 0 && this.#busy === 0) for (const resolve of this.#idle.splice(0)) resolve();
        });
      }
    });
  }

  #nextGroup(): Queued[] {
    const { group, rows } = takeGroup(this.#queue, (call) => call.weight, GROUP_MAX_CALLS, GROUP_MAX_ROWS);
    this.#queuedRows -= rows;
    return group;
  }

  /** Commits the group, or its calls one by one when it fails for a reason of one call's own. */
  async #run(group: Queued[]) {
    const started = performance.now();
    let outcomes: Outcome[];
    try {
      outcomes = await this.#transaction(group);
    } catch (error) {
      // A deadlock or a serialization failure is a fault (busy) to a client, but the same calls
      // may succeed when run again: they are, one at a time, before any is answered busy.
      const retry = isRetryable(error);
      if (!retry && (isFault(error) || group.length === 1)) {
        if (isFault(error)) this.#figures.failed++;
        for (const call of group) call.reject(translate(error));
        return;
      }
      // One call's rows broke the group's statement, or a deadlock: each call on its own.
      await Promise.all(group.map((call) => this.#alone(call)));
      return;
    }
    this.#observe(group, started);
    group.forEach((call, index) => {
      const outcome = outcomes[index] as Outcome;
      if (outcome.ok) call.resolve(outcome.value);
      else call.reject(translate(outcome.error));
    });
  }

  /** One call in a transaction of its own, tried again after a deadlock or serialization failure. */
  async #alone(call: Queued) {
    for (let attempt = 1; ; attempt++) {
      const started = performance.now();
      try {
        const [outcome] = (await this.#transaction([call])) as [Outcome];
        this.#observe([call], started);
        if (outcome.ok) call.resolve(outcome.value);
        else call.reject(translate(outcome.error));
        return;
      } catch (error) {
        if (isRetryable(error) && attempt < RETRIES) {
          // The other transaction of the deadlock is let through first, at a moment of chance.
          await delay(Math.random() * 5 * attempt);
          continue;
        }
        if (isFault(error)) this.#figures.failed++;
        call.reject(translate(error));
        return;
      }
    }
  }

  #observe(group: Queued[], started: number) {
    const rows = group.reduce((sum, call) => sum + call.weight, 0);
    this.#figures.committed(group.length, rows, (performance.now() - started) / 1000);
    this.#afterCommit();
  }

  /**
   * The group's calls: its create_events calls as one statement (GROUP_EVENTS), then the other
   * calls, each after its key check, in one transaction (a group of nothing but create_events
   * needs none: its one statement is atomic). Throws when the transaction as a whole failed
   * (nothing of it is committed); answers each call's outcome.
   */
  async #transaction(group: Queued[]): Promise<Outcome[]> {
    const client = await this.#pool.connect();
    let broken: unknown;
    const outcomes: (Outcome | undefined)[] = new Array(group.length);
    const others = group.some((call) => call.kind === "run");
    try {
      if (others) await client.query("BEGIN");
      await insertEvents(client, group, outcomes);
      if (others) {
        await checkKeys(client, group, outcomes);
        const alone = group.length === 1;
        for (const [index, call] of group.entries()) {
          if (outcomes[index] !== undefined || call.kind !== "run") continue;
          outcomes[index] = await runCall(client, call, alone);
        }
        await client.query("COMMIT");
      }
      return outcomes as Outcome[];
    } catch (error) {
      broken = isFault(error) ? error : undefined;
      if (!broken && others) await client.query("ROLLBACK").catch((e) => (broken = e));
      throw error;
    } finally {
      // A connection that failed is not given back to the pool for reuse.
      client.release(broken instanceof Error ? broken : undefined);
    }
  }
}

/** 4.3: a JWT's write fails (KeyRevoked) when its key is revoked, gone or of another project. */
async function checkKeys(client: Tx, group: Queued[], outcomes: (Outcome | undefined)[]) {
  const ids = [
    ...new Set(
      group.flatMap((call, index) => (call.keyId === undefined || outcomes[index] !== undefined ? [] : [call.keyId])),
    ),
  ];
  if (ids.length === 0) return;
  const { rows } = await client.query<Pick<ApiKeyRecord, "id" | "project_id" | "revoked_at">>(
    "SELECT id, project_id, revoked_at FROM api_keys WHERE id = ANY($1::text[])",
    [ids],
  );
  const keys = new Map(rows.map((row) => [row.id, row as ApiKeyRecord]));
  group.forEach((call, index) => {
    if (outcomes[index] === undefined && call.keyId !== undefined && !isLive(keys.get(call.keyId), call.projectId)) {
      outcomes[index] = { ok: false, error: new KeyRevoked() };
    }
  });
}

/** Every create_events call of the group, in one statement (GROUP_EVENTS). */
async function insertEvents(client: Tx, group: Queued[], outcomes: (Outcome | undefined)[]) {
  const calls = group.flatMap((call, index) => (call.kind === "events" ? [{ call, index }] : []));
  if (calls.length === 0) return;
  const rows = calls.flatMap(({ call, index }) =>
    call.rows.map((row, i) => ({ pk: index, row, words: call.words[i] })),
  );
  const columns = eventColumns(rows);
  const { rows: verdicts } = await client.query<Verdict>({
    name: "agentmon_group_events",
    text: GROUP_EVENTS,
    values: [
      calls.map(({ index }) => index),
      calls.map(({ call }) => call.sessionId),
      calls.map(({ call }) => call.projectId),
      calls.map(({ call }) => call.keyId ?? null),
      ...columns,
    ],
  });
  const stored = eventsStored(group, verdicts);
  for (const { call, pk, live } of verdicts) {
    outcomes[call] = !live
      ? { ok: false, error: new KeyRevoked() }
      : { ok: true, value: pk !== null && (stored[call] ?? 0) };
  }
}

interface Verdict {
  call: number;
  pk: number | null;
  live: boolean;
  /** Rows stored for the call's session by the statement. */
  stored: number;
  /** Their ids, when more than one call of the group names that session. */
  ids: string[] | null;
}

/**
 * How many rows each call stored, by call index. A session named by one call of the group: the
 * session's count. Named by several: GROUP_EVENTS inserts in call order within a session and id,
 * so each stored id belongs to the first of those calls that sent it.
 */
function eventsStored(group: Queued[], verdicts: Verdict[]): number[] {
  const stored: number[] = new Array(group.length).fill(0);
  const shared = new Map<number, Set<string>>();
  for (const { call, pk, stored: n, ids } of [...verdicts].sort((a, b) => a.call - b.call)) {
    if (pk === null) continue;
    if (ids === null) {
      stored[call] = n;
      continue;
    }
    const left = shared.get(pk) ?? new Set(ids);
    shared.set(pk, left);
    const work = group[call];
    if (work?.kind !== "events") continue;
    stored[call] = work.rows.filter((row) => left.delete(row[ROW.id] as string)).length;
  }
  return stored;
}

/** A call of the group in a savepoint of its own (unless it is alone): its own error undoes it alone. */
async function runCall(client: Tx, call: RunCall<unknown>, alone: boolean): Promise<Outcome> {
  if (alone) return { ok: true, value: await call.run(client) };
  await client.query("SAVEPOINT agentmon_call");
  try {
    const value = await call.run(client);
    await client.query("RELEASE agentmon_call");
    return { ok: true, value };
  } catch (error) {
    if (isFault(error) || isRetryable(error)) throw error;
    await client.query("ROLLBACK TO agentmon_call");
    await client.query("RELEASE agentmon_call");
    return { ok: false, error };
  }
}
