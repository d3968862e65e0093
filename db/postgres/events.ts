/** Events and agents of a session on PostgreSQL: page through, patch under row locks, agent upserts. */
import type pg from "pg";
import { fieldWords } from "../../domain/search.ts";
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
import { EVENT_COLUMNS, eventRecord, eventRow, json, parse, type StoredEvent } from "../rows.ts";
import { CHANGE } from "./projector.ts";

type Queryable = pg.Pool | pg.ClientBase;

/** Applies one update_events entry to a stored event: a pure function, run inside the transaction. */
export type EventPatcher = (stored: EventRecord, patch: EventPatch) => EventRecord;

export async function eventsPage(
  db: Queryable,
  pk: number,
  options: { types?: Kind[]; after?: Position; limit: number },
): Promise<Page<EventRecord>> {
  const params: unknown[] = [pk];
  const p = (value: unknown) => `$${params.push(value)}`;
  const where = ["session_pk = $1"];
  if (options.after) where.push(`(init_us, id) > (${p(options.after.init_us)}, ${p(options.after.id)})`);
  if (options.types && options.types.length > 0) where.push(`type = ANY(${p(options.types)}::text[])`);
  const { rows } = await db.query<StoredEvent>(
    `SELECT * FROM events WHERE ${where.join(" AND ")} ORDER BY init_us, id LIMIT ${p(options.limit + 1)}`,
    params,
  );
  const page = rows.slice(0, options.limit);
  const last = page[page.length - 1];
  return {
    items: page.map(eventRecord),
    next: rows.length > options.limit && last ? { init_us: last.init_us, id: last.id } : null,
  };
}

const UPDATE_COLUMNS = EVENT_COLUMNS.filter((column) => column !== "id");
const UPDATE_EVENT = `UPDATE events SET ${UPDATE_COLUMNS.map((c, i) => `${c} = $${i + 3}`).join(", ")},
    search_words = $${UPDATE_COLUMNS.length + 3}
  WHERE session_pk = $1 AND id = $2`;

/**
 * All or nothing, inside the caller's transaction: the events are locked (FOR UPDATE, so two
 * nodes patching one event apply one after the other), each read once and written once.
 */
export async function updateEvents(
  tx: pg.ClientBase,
  pk: number,
  patches: EventPatch[],
  apply: EventPatcher,
): Promise<UpdateEventsResult> {
  const ids = [...new Set(patches.map((patch) => patch.id))];
  const { rows } = await tx.query<StoredEvent>(
    "SELECT * FROM events WHERE session_pk = $1 AND id = ANY($2::text[]) ORDER BY id FOR UPDATE",
    [pk, ids],
  );
  const events = new Map(rows.map((row) => [row.id, eventRecord(row)]));
  const unknown = patches.map(({ id }, index) => ({ index, id })).filter(({ id }) => !events.has(id));
  if (unknown.length > 0) return { status: "unknown", unknown };
  for (const patch of patches) events.set(patch.id, apply(events.get(patch.id) as EventRecord, patch));
  for (const event of events.values()) {
    const row = eventRow(event);
    await tx.query(UPDATE_EVENT, [pk, event.id, ...row.slice(1), fieldWords(event.fields)]);
  }
  // The session's share is counted again from its rows (a change of type or time cannot be subtracted).
  await tx.query("INSERT INTO projection_queue (session_pk, kind) VALUES ($1, $2)", [pk, CHANGE.again]);
  return { status: "updated", updated: events.size };
}

/** Inserts the agent or merges its name and extras into the stored one, under a row lock. */
export async function upsertAgent(tx: pg.ClientBase, pk: number, agent: AgentRecord): Promise<true> {
  const added = await tx.query(
    "INSERT INTO agents (session_pk, id, name, extra) VALUES ($1, $2, $3, $4) ON CONFLICT (session_pk, id) DO NOTHING",
    [pk, agent.id, agent.name, json(agent.extra)],
  );
  if (added.rowCount === 1) {
    // A new agent is a group of the session's scores (score analytics, decision 037).
    await tx.query("INSERT INTO projection_queue (session_pk, kind) VALUES ($1, $2)", [pk, CHANGE.row]);
    return true;
  }
  const { rows } = await tx.query<{ name: string | null; extra: string }>(
    "SELECT name, extra FROM agents WHERE session_pk = $1 AND id = $2 FOR UPDATE",
    [pk, agent.id],
  );
  const stored = rows[0] as { name: string | null; extra: string };
  const extra = { ...(parse<JsonObject>(stored.extra) ?? {}), ...agent.extra };
  await tx.query("UPDATE agents SET name = $3, extra = $4 WHERE session_pk = $1 AND id = $2", [
    pk,
    agent.id,
    agent.name ?? stored.name,
    json(extra),
  ]);
  return true;
}
