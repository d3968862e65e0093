/**
 * Per-session totals kept at write time (migration 007, docs/decisions/022-session-totals.md):
 * the counts, tokens, cost, first and last event times and duration on the session's row, and
 * the models of its llm events in session_models. Every write runs inside the caller's
 * transaction, so the totals commit with the events they count.
 *
 * Inserts (create_events, OTLP spans, import) add the sums of the rows really inserted, once per
 * call: one UPDATE of the session's row, one upsert per model. update_events counts the session
 * again from its events (a changed type or time cannot be taken back out of a min or a max).
 * Events are only ever deleted with their session. The event breakdowns' rollups
 * (./event-rollups.ts) are kept here too: added with the rows, out and in again around an update.
 */
import { COLUMN, type EventRow } from "../rows.ts";
import { eventRollupStatements, type SessionOfRows } from "./event-rollups.ts";
import type { Db } from "./open.ts";

const {
  type: TYPE,
  init_us: INIT_US,
  end_us: END_US,
  model: MODEL,
  prompt_tokens: PROMPT,
  completion_tokens: COMPLETION,
  cost: COST,
  cache_read_tokens: CACHE_READ,
  cache_creation_tokens: CACHE_CREATION,
  reasoning_tokens: REASONING,
} = COLUMN;

/** The session's end in microseconds (NULL without one), as migration 002 computes events.end_us. */
const END_OF_SESSION = `(unixepoch(substr(end_timestamp, 1, 19)) * 1000000
  + CASE WHEN length(end_timestamp) > 21
      THEN CAST(substr(substr(end_timestamp, 21, length(end_timestamp) - 21) || '000000', 1, 6) AS INTEGER)
      ELSE 0 END)`;

/** duration_us of a row whose last_us is `last` (SET expressions see the row before the UPDATE). */
const duration = (last: string) => `max(0, coalesce(${END_OF_SESSION}, ${last}, init_us) - init_us)`;

interface Sums {
  pk: number;
  events: number;
  llm: number;
  tool: number;
  action: number;
  error: number;
  prompt_tokens: number;
  completion_tokens: number;
  cache_read_tokens: number;
  cache_creation_tokens: number;
  reasoning_tokens: number;
  cost: number;
  first_us: number;
  last_us: number;
}

const num = (value: unknown) => (typeof value === "number" ? value : 0);

export function totalsStatements(db: Db) {
  const newLast = "max(coalesce(last_us, @last_us), @last_us)";
  const q = {
    add: db.prepare<[Sums], SessionOfRows>(
      `UPDATE sessions SET event_count = event_count + @events, llm_count = llm_count + @llm,
         tool_count = tool_count + @tool, action_count = action_count + @action, error_count = error_count + @error,
         prompt_tokens = prompt_tokens + @prompt_tokens, completion_tokens = completion_tokens + @completion_tokens,
         cache_read_tokens = cache_read_tokens + @cache_read_tokens,
         cache_creation_tokens = cache_creation_tokens + @cache_creation_tokens,
         reasoning_tokens = reasoning_tokens + @reasoning_tokens, cost = cost + @cost,
         first_us = min(coalesce(first_us, @first_us), @first_us), last_us = ${newLast},
         duration_us = ${duration(newLast)}
       WHERE pk = @pk
       RETURNING project_id, init_us, error_count`,
    ),
    addModel: db.prepare<[number, string, number, number, number, number]>(
      `INSERT INTO session_models (session_pk, model, llm_count, prompt_tokens, completion_tokens, cost)
       VALUES (?, ?, ?, ?, ?, ?)
       ON CONFLICT (session_pk, model) DO UPDATE SET llm_count = llm_count + excluded.llm_count,
         prompt_tokens = prompt_tokens + excluded.prompt_tokens,
         completion_tokens = completion_tokens + excluded.completion_tokens, cost = cost + excluded.cost`,
    ),
    recount: db.prepare<[{ pk: number }]>(
      `UPDATE sessions SET (event_count, llm_count, tool_count, action_count, error_count, prompt_tokens,
           completion_tokens, cache_read_tokens, cache_creation_tokens, reasoning_tokens, cost, first_us, last_us) = (
         SELECT count(*), count(*) FILTER (WHERE type = 'llm'), count(*) FILTER (WHERE type = 'tool'),
           count(*) FILTER (WHERE type = 'action'), count(*) FILTER (WHERE type = 'error'),
           coalesce(sum(prompt_tokens) FILTER (WHERE type = 'llm'), 0),
           coalesce(sum(completion_tokens) FILTER (WHERE type = 'llm'), 0),
           coalesce(sum(cache_read_tokens) FILTER (WHERE type = 'llm'), 0),
           coalesce(sum(cache_creation_tokens) FILTER (WHERE type = 'llm'), 0),
           coalesce(sum(reasoning_tokens) FILTER (WHERE type = 'llm'), 0),
           total(cost) FILTER (WHERE type = 'llm'),
           min(init_us), max(max(init_us, coalesce(end_us, init_us)))
         FROM events WHERE session_pk = @pk)
       WHERE pk = @pk`,
    ),
    recountDuration: db.prepare<[number]>(`UPDATE sessions SET duration_us = ${duration("last_us")} WHERE pk = ?`),
    dropModels: db.prepare<[number]>("DELETE FROM session_models WHERE session_pk = ?"),
    recountModels: db.prepare<[number]>(
      `INSERT INTO session_models (session_pk, model, llm_count, prompt_tokens, completion_tokens, cost)
       SELECT session_pk, model, count(*), coalesce(sum(prompt_tokens), 0), coalesce(sum(completion_tokens), 0),
         total(cost)
       FROM events WHERE session_pk = ? AND type = 'llm' AND model IS NOT NULL
       GROUP BY model`,
    ),
  };

  const rollups = eventRollupStatements(db);

  return {
    /**
     * Adds these rows, inserted into the session just now with the pks first..last (a call's rows
     * take the next pks, above every stored one), to its totals and the rollups.
     */
    add(pk: number, rows: EventRow[], first: number, last: number) {
      if (rows.length === 0) return;
      const sums: Sums = {
        pk,
        events: rows.length,
        llm: 0,
        tool: 0,
        action: 0,
        error: 0,
        prompt_tokens: 0,
        completion_tokens: 0,
        cache_read_tokens: 0,
        cache_creation_tokens: 0,
        reasoning_tokens: 0,
        cost: 0,
        first_us: Number.POSITIVE_INFINITY,
        last_us: Number.NEGATIVE_INFINITY,
      };
      let models: Map<string, [number, number, number, number]> | undefined;
      for (const row of rows) {
        const type = row[TYPE] as "llm" | "tool" | "action" | "error";
        sums[type]++;
        const init = row[INIT_US] as number;
        const end = (row[END_US] as number | null) ?? init;
        if (init < sums.first_us) sums.first_us = init;
        const last = end > init ? end : init;
        if (last > sums.last_us) sums.last_us = last;
        if (type !== "llm") continue;
        const prompt = num(row[PROMPT]);
        const completion = num(row[COMPLETION]);
        const cost = num(row[COST]);
        sums.prompt_tokens += prompt;
        sums.completion_tokens += completion;
        sums.cache_read_tokens += num(row[CACHE_READ]);
        sums.cache_creation_tokens += num(row[CACHE_CREATION]);
        sums.reasoning_tokens += num(row[REASONING]);
        sums.cost += cost;
        const model = row[MODEL] as string | null;
        if (model === null) continue;
        models ??= new Map();
        const sum = models.get(model);
        if (sum) {
          sum[0]++;
          sum[1] += prompt;
          sum[2] += completion;
          sum[3] += cost;
        } else models.set(model, [1, prompt, completion, cost]);
      }
      const session = q.add.get(sums);
      if (models) for (const [model, s] of models) q.addModel.run(pk, model, s[0], s[1], s[2], s[3]);
      if (session) rollups.added(pk, session, rows, first, last);
    },
    /** Before the session's stored events change (update_events): its events out of the rollups. */
    changing(pk: number) {
      rollups.out([pk]);
    },
    /** Counts the session's totals again from its events. */
    recount(pk: number) {
      q.recount.run({ pk });
      q.recountDuration.run(pk);
      q.dropModels.run(pk);
      q.recountModels.run(pk);
      rollups.in(pk);
    },
  };
}

export type TotalsStatements = ReturnType<typeof totalsStatements>;
