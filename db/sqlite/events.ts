/** Events and agents of a session: insert, patch, page through; agent upserts. */
import type {
  AgentRecord,
  EventPatch,
  EventRecord,
  JsonObject,
  Kind,
  Page,
  Position,
  UpdateEventsResult,
} from "../../domain/types.ts";
import {
  EVENT_COLUMNS,
  type EventPageParams,
  type EventRow,
  eventParams,
  eventRecord,
  json,
  parse,
  type StoredEvent,
} from "../rows.ts";
import type { Db } from "./open.ts";
import { CHANGE, type SqliteProjector } from "./projector.ts";

/** Applies one update_events entry to a stored event: a pure function, run inside the transaction. */
export type EventPatcher = (stored: EventRecord, patch: EventPatch) => EventRecord;

export function eventStatements(db: Db, projector: SqliteProjector) {
  const q = {
    pageFirst: db.prepare<[EventPageParams], StoredEvent>(
      `SELECT * FROM events
       WHERE session_pk = @pk AND (@types IS NULL OR type IN (SELECT value FROM json_each(@types)))
       ORDER BY init_us, id LIMIT @limit`,
    ),
    pageAfter: db.prepare<[EventPageParams & { after_us: number; after_id: string }], StoredEvent>(
      `SELECT * FROM events
       WHERE session_pk = @pk AND (init_us, id) > (@after_us, @after_id)
         AND (@types IS NULL OR type IN (SELECT value FROM json_each(@types)))
       ORDER BY init_us, id LIMIT @limit`,
    ),
    insert: db.prepare(
      `INSERT INTO events (session_pk, ${EVENT_COLUMNS.join(", ")})
       VALUES (?${", ?".repeat(EVENT_COLUMNS.length)})
       ON CONFLICT (session_pk, id) DO NOTHING`,
    ),
    get: db.prepare<[number, string], StoredEvent>("SELECT * FROM events WHERE session_pk = ? AND id = ?"),
    update: db.prepare(
      `UPDATE events SET type = @type, init_timestamp = @init_timestamp, init_us = @init_us,
         end_timestamp = @end_timestamp, end_us = @end_us, agent_id = @agent_id, model = @model,
         prompt_tokens = @prompt_tokens, completion_tokens = @completion_tokens, cost = @cost,
         cost_source = @cost_source, body = @body, aliases = @aliases, extra = @extra,
         cache_read_tokens = @cache_read_tokens, cache_creation_tokens = @cache_creation_tokens,
         reasoning_tokens = @reasoning_tokens
       WHERE session_pk = @session_pk AND id = @id`,
    ),
    agentGet: db.prepare<[number, string], { name: string | null; extra: string }>(
      "SELECT name, extra FROM agents WHERE session_pk = ? AND id = ?",
    ),
    agentUpsert: db.prepare(
      `INSERT INTO agents (session_pk, id, name, extra) VALUES (?, ?, ?, ?)
       ON CONFLICT (session_pk, id) DO UPDATE SET name = excluded.name, extra = excluded.extra`,
    ),
  };

  return {
    page(pk: number, options: { types?: Kind[]; after?: Position; limit: number }): Page<EventRecord> {
      const types = options.types && options.types.length > 0 ? json(options.types) : null;
      const params = { pk, types, limit: options.limit + 1 };
      const rows = options.after
        ? q.pageAfter.all({ ...params, after_us: options.after.init_us, after_id: options.after.id })
        : q.pageFirst.all(params);
      const page = rows.slice(0, options.limit);
      const last = page[page.length - 1];
      return {
        items: page.map(eventRecord),
        next: rows.length > options.limit && last ? { init_us: last.init_us, id: last.id } : null,
      };
    },
    /**
     * Stores the rows not already stored under their id and answers how many it stored (E3: a
     * retry's rows are there already, G8). `words`, when given, are each row's words for the
     * search index (wordsOf), in the order of `rows`.
     */
    insert(pk: number, rows: EventRow[], words?: string[]): number {
      const added: EventRow[] = [];
      const addedWords: string[] = [];
      let first = 0;
      let last = 0;
      let contiguous = true;
      rows.forEach((row, i) => {
        const { changes, lastInsertRowid } = q.insert.run(pk, row);
        if (changes !== 1) return;
        added.push(row);
        addedWords.push(words?.[i] ?? "");
        const at = Number(lastInsertRowid);
        if (first === 0) first = at;
        else if (at !== last + 1) contiguous = false;
        last = at;
      });
      // The words go with the pks lo..hi in order; rows always take the next pk, but should they
      // not, the index reads the stored bodies instead.
      if (first !== 0) projector.added(pk, first, last, added, words && contiguous ? addedWords : undefined);
      return added.length;
    },
    /** All or nothing, inside the caller's transaction: each event is read once and written once. */
    update(pk: number, patches: EventPatch[], apply: EventPatcher): UpdateEventsResult {
      const events = new Map<string, EventRecord>();
      for (const { id } of patches) {
        const row = events.has(id) ? undefined : q.get.get(pk, id);
        if (row) events.set(id, eventRecord(row));
      }
      const unknown = patches.map(({ id }, index) => ({ index, id })).filter(({ id }) => !events.has(id));
      if (unknown.length > 0) return { status: "unknown", unknown };
      for (const patch of patches) events.set(patch.id, apply(events.get(patch.id) as EventRecord, patch));
      for (const event of events.values()) q.update.run(eventParams(pk, event));
      projector.queue(pk, CHANGE.again);
      return { status: "updated", updated: events.size };
    },
    upsertAgent(pk: number, agent: AgentRecord): true {
      const stored = q.agentGet.get(pk, agent.id);
      const name = agent.name ?? stored?.name ?? null;
      const extra = { ...(stored ? parse<JsonObject>(stored.extra) : {}), ...agent.extra };
      q.agentUpsert.run(pk, agent.id, name, json(extra));
      // A new agent is a group of the session's scores (score analytics, decision 037).
      if (stored === undefined) projector.queue(pk, CHANGE.row);
      return true;
    },
  };
}
