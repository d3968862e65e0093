/**
 * The event breakdowns' rollups (migration 011, docs/decisions/027-event-rollups.md), kept by the
 * code that writes events, in the caller's transaction:
 * - a call's rows added (create_events, OTLP spans, import): their sums per session and group into
 *   session_keys (whose triggers keep event_rollups, reading the session's project, hour and end
 *   state from its row) and their durations into
 *   event_rollup_durations, summed in JS from the rows the call has (a statement per group and
 *   bucket, no read), then the error events that name one of them, or that they name, when the
 *   session has errors (SQL: the pairs need the stored events);
 * - update_events: the session's contribution out before the change, in again after it (SQL);
 * - a delete: the sessions' contributions out before their events go (SQL).
 * A moved start or a changed end state is the triggers' (migration 011).
 *
 * The SQL of a row's groups is migration 011's, word for word; JS finds the same keys (a tool's
 * name that is not a string is asked of SQLite) and the same buckets (one function, registered).
 */
import type Database from "better-sqlite3";
import { histogramBucket } from "../../domain/analytics.ts";
import { COLUMN, type EventRow } from "../rows.ts";

// The type from better-sqlite3, not from ./open.ts, which imports this file (no import cycle).
type Db = Database.Database;

/** The bucket function migration 011 and the SQL below call: the one JS uses. */
export function rollupFunctions(db: Db) {
  db.function("agentmon_duration_bucket", { deterministic: true }, (us) => histogramBucket(Number(us)));
}

const {
  type: TYPE,
  init_us: INIT_US,
  end_us: END_US,
  model: MODEL,
  prompt_tokens: PROMPT,
  completion_tokens: COMPLETION,
  cost: COST,
  body: BODY,
} = COLUMN;

/** The session a call's rows went into, as its totals' UPDATE answers it. */
export interface SessionOfRows {
  project_id: string;
  init_us: number;
  error_count: number;
}

/** A group's sums in a call. */
interface GroupSums {
  dim: string;
  key: string;
  events: number;
  prompt: number;
  completion: number;
  cost: number;
}

/** A group's durations in one bucket in a call. */
interface BucketSums {
  dim: string;
  key: string;
  bucket: number;
  n: number;
  max: number;
}

const num = (value: unknown) => (typeof value === "number" ? value : 0);

const HOUR_US = 3_600_000_000;
const DAY_US = 86_400_000_000;
const hour = (x: string) => `(${x} - ((${x} % ${HOUR_US}) + ${HOUR_US}) % ${HOUR_US})`;
const day = (x: string) => `(${x} - ((${x} % ${DAY_US}) + ${DAY_US}) % ${DAY_US})`;
const bucket = (d: string) => `agentmon_duration_bucket(${d})`;

/** Each event matching `cond` once per group it is in: (dim, key) and what the sums need. */
function keys(cond: string) {
  const cols =
    "e.pk, e.session_pk, e.id, e.type, e.prompt_tokens, e.completion_tokens, e.cost, CASE WHEN e.end_us IS NULL THEN NULL ELSE max(0, e.end_us - e.init_us) END AS dur";
  return `SELECT 'model' AS dim, ifnull('=' || e.model, '') AS key, ${cols} FROM events e WHERE ${cond} AND e.type = 'llm'
      UNION ALL SELECT 'type', '=' || e.type, ${cols} FROM events e WHERE ${cond}
      UNION ALL SELECT 'tool', ifnull('=' || CAST(json_extract(e.body, '$.name') AS TEXT), ''), ${cols} FROM events e WHERE ${cond} AND e.type = 'tool'`;
}

/** The durations of the events matching `cond`, signed, into both levels of their sessions' hour. */
function durations(cond: string, sign: 1 | -1) {
  const slot = hour("s.init_us");
  return `INSERT INTO event_rollup_durations (project_id, dim, level, slot_us, key, bucket, n, max_us)
    SELECT s.project_id, k.dim, l.level, CASE l.level WHEN 0 THEN ${slot} ELSE ${day(slot)} END, k.key,
      ${bucket("k.dur")}, ${sign > 0 ? "count(*)" : "-count(*)"}, ${sign > 0 ? "max(k.dur)" : "0"}
    FROM (${keys(cond)}) k
      CROSS JOIN (SELECT 0 AS level UNION ALL SELECT 1 AS level) l
      JOIN sessions s ON s.pk = k.session_pk
    WHERE k.dur IS NOT NULL
    GROUP BY 1, 2, 3, 4, 5, 6
    ON CONFLICT (project_id, dim, level, slot_us, key, bucket) DO UPDATE SET n = n + excluded.n,
      max_us = max(max_us, excluded.max_us)`;
}

/** The events of session @pk with pk in [@lo, @hi]. */
const RANGE = "e.session_pk = @pk AND e.pk BETWEEN @lo AND @hi";
/** The events of the sessions whose pks are the JSON array @pks. */
const SESSIONS = "e.session_pk IN (SELECT value FROM json_each(@pks))";
/** An error event's trigger: body.trigger_event_id, or the span it hangs on (OTLP, T16). */
const TRIGGER = "coalesce(CAST(json_extract(r.body, '$.trigger_event_id') AS TEXT), r.parent_id)";

/** Every pk a session can have, for "all its events". */
const ALL = { lo: Number.MIN_SAFE_INTEGER, hi: Number.MAX_SAFE_INTEGER };

export function eventRollupStatements(db: Db) {
  const q = {
    keysIn: db.prepare<[{ pk: number; lo: number; hi: number }]>(
      `INSERT INTO session_keys (session_pk, dim, key, events, prompt_tokens, completion_tokens, cost)
       SELECT @pk, k.dim, k.key, count(*),
         coalesce(sum(CASE WHEN k.type = 'llm' THEN k.prompt_tokens END), 0),
         coalesce(sum(CASE WHEN k.type = 'llm' THEN k.completion_tokens END), 0),
         total(CASE WHEN k.type = 'llm' THEN k.cost END)
       FROM (${keys(RANGE)}) k
       WHERE true
       GROUP BY k.dim, k.key
       ON CONFLICT (session_pk, dim, key) DO UPDATE SET events = events + excluded.events,
         prompt_tokens = prompt_tokens + excluded.prompt_tokens,
         completion_tokens = completion_tokens + excluded.completion_tokens, cost = cost + excluded.cost`,
    ),
    // The (error, trigger) pairs of the session with either side among the rows just added.
    errorsIn: db.prepare<[{ pk: number; lo: number; hi: number }]>(
      `UPDATE session_keys SET error_events = session_keys.error_events + c.n
       FROM (
         SELECT d.dim, CASE d.dim WHEN 'model' THEN ifnull('=' || e.model, '') WHEN 'type' THEN '=' || e.type
             ELSE ifnull('=' || CAST(json_extract(e.body, '$.name') AS TEXT), '') END AS key, count(*) AS n
         FROM events r JOIN events e ON e.session_pk = r.session_pk AND e.id = ${TRIGGER}
           JOIN (SELECT 'model' AS dim UNION ALL SELECT 'type' UNION ALL SELECT 'tool') d
             ON d.dim = 'type' OR (d.dim = 'model' AND e.type = 'llm') OR (d.dim = 'tool' AND e.type = 'tool')
         WHERE r.session_pk = @pk AND r.type = 'error' AND (r.pk BETWEEN @lo AND @hi OR e.pk BETWEEN @lo AND @hi)
         GROUP BY 1, 2
       ) c
       WHERE session_keys.session_pk = @pk AND session_keys.dim = c.dim AND session_keys.key = c.key`,
    ),
    durationsIn: db.prepare<[{ pk: number; lo: number; hi: number }]>(durations(RANGE, 1)),
    durationsOut: db.prepare<[{ pks: string }]>(durations(SESSIONS, -1)),
    keysOut: db.prepare<[{ pks: string }]>(
      "DELETE FROM session_keys WHERE session_pk IN (SELECT value FROM json_each(@pks))",
    ),
    keyAdd: db.prepare<[number, string, string, number, number, number, number]>(
      `INSERT INTO session_keys (session_pk, dim, key, events, prompt_tokens, completion_tokens, cost)
       VALUES (?, ?, ?, ?, ?, ?, ?)
       ON CONFLICT (session_pk, dim, key) DO UPDATE SET events = events + excluded.events,
         prompt_tokens = prompt_tokens + excluded.prompt_tokens,
         completion_tokens = completion_tokens + excluded.completion_tokens, cost = cost + excluded.cost`,
    ),
    // Both levels in one statement: the hour's row and the day's.
    bucketAdd: db.prepare<
      [{ project: string; dim: string; hour: number; day: number; key: string; bucket: number; n: number; max: number }]
    >(
      `INSERT INTO event_rollup_durations (project_id, dim, level, slot_us, key, bucket, n, max_us)
       VALUES (@project, @dim, 0, @hour, @key, @bucket, @n, @max), (@project, @dim, 1, @day, @key, @bucket, @n, @max)
       ON CONFLICT (project_id, dim, level, slot_us, key, bucket) DO UPDATE SET n = n + excluded.n,
         max_us = max(max_us, excluded.max_us)`,
    ),
    name: db.prepare<[string], string | null>("SELECT CAST(json_extract(?, '$.name') AS TEXT)").pluck(),
  };

  /** A tool's key, as migration 011's SQL makes it: '' without a name, '=' and the name's text. */
  const toolKey = (body: unknown) => {
    if (typeof body !== "string") return "";
    const name = (JSON.parse(body) as { name?: unknown } | null)?.name;
    if (name === undefined || name === null) return "";
    return `=${typeof name === "string" ? name : q.name.get(body)}`;
  };

  /** The events of session pk with pk in [lo, hi] into the rollups. */
  const add = (pk: number, lo: number, hi: number, errors: boolean) => {
    const range = { pk, lo, hi };
    q.keysIn.run(range);
    if (errors) q.errorsIn.run(range);
    q.durationsIn.run(range);
  };

  return {
    /**
     * The rows just added to session pk, pks lo..hi (a call's rows take the next pks, above every
     * stored one), after the session's totals counted them (`session`: its row after that).
     */
    added(pk: number, session: SessionOfRows, rows: readonly EventRow[], lo: number, hi: number) {
      // By dim, then key (then bucket): no composite string keys.
      const sums = new Map<string, Map<string, GroupSums>>();
      const durations = new Map<GroupSums, Map<number, BucketSums>>();
      const count = (dim: string, key: string, row: EventRow, llm: boolean) => {
        let ofDim = sums.get(dim);
        if (ofDim === undefined) {
          ofDim = new Map();
          sums.set(dim, ofDim);
        }
        let sum = ofDim.get(key);
        if (sum === undefined) {
          sum = { dim, key, events: 0, prompt: 0, completion: 0, cost: 0 };
          ofDim.set(key, sum);
        }
        sum.events++;
        if (llm) {
          sum.prompt += num(row[PROMPT]);
          sum.completion += num(row[COMPLETION]);
          sum.cost += num(row[COST]);
        }
        const end = row[END_US];
        if (typeof end !== "number") return;
        const us = Math.max(0, end - (row[INIT_US] as number));
        const bucket = histogramBucket(us);
        let ofGroup = durations.get(sum);
        if (ofGroup === undefined) {
          ofGroup = new Map();
          durations.set(sum, ofGroup);
        }
        const d = ofGroup.get(bucket);
        if (d === undefined) ofGroup.set(bucket, { dim, key, bucket, n: 1, max: us });
        else {
          d.n++;
          if (us > d.max) d.max = us;
        }
      };
      for (const row of rows) {
        const type = row[TYPE] as string;
        const llm = type === "llm";
        count("type", `=${type}`, row, llm);
        if (llm) count("model", row[MODEL] === null ? "" : `=${row[MODEL]}`, row, true);
        else if (type === "tool") count("tool", toolKey(row[BODY]), row, false);
      }
      const hour = session.init_us - (((session.init_us % HOUR_US) + HOUR_US) % HOUR_US);
      const day = hour - (((hour % DAY_US) + DAY_US) % DAY_US);
      const { project_id: project } = session;
      for (const ofDim of sums.values()) {
        for (const s of ofDim.values()) {
          q.keyAdd.run(pk, s.dim, s.key, s.events, s.prompt, s.completion, s.cost);
        }
      }
      for (const ofGroup of durations.values()) {
        for (const d of ofGroup.values()) {
          q.bucketAdd.run({ project, dim: d.dim, hour, day, key: d.key, bucket: d.bucket, n: d.n, max: d.max });
        }
      }
      if (session.error_count > 0) q.errorsIn.run({ pk, lo, hi });
    },
    /** The sessions' events out of the rollups (before their events change or go). */
    out(pks: number[]) {
      if (pks.length === 0) return;
      const params = { pks: JSON.stringify(pks) };
      q.durationsOut.run(params);
      q.keysOut.run(params);
    },
    /** All of the session's events into the rollups (after update_events changed them). */
    in(pk: number) {
      add(pk, ALL.lo, ALL.hi, true);
    },
  };
}

export type EventRollupStatements = ReturnType<typeof eventRollupStatements>;
