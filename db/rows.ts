/**
 * Rows and records: how the tables of both adapters (db/sqlite/, db/postgres/) hold what
 * domain/types.ts describes. JSON columns are text on both engines (kept as sent: PostgreSQL's
 * jsonb would reorder keys and drop duplicates); an event's row is an array of column values
 * (EVENT_COLUMNS), cheap to build on one thread and send to another, and the same for either
 * engine. Only the adapters import this file (.dependency-cruiser.mjs).
 */
import { withLogRecords } from "../domain/genai.ts";
import { parseTimestamp } from "../domain/timestamps.ts";
import type {
  AgentRecord,
  CostSource,
  EndState,
  EventRecord,
  JsonObject,
  Kind,
  SessionRecord,
  SessionTotals,
  SpanEventRecord,
  SpanLogRecord,
} from "../domain/types.ts";

export const json = (value: unknown) => JSON.stringify(value);
export const parse = <T>(text: string | null): T | null => (text === null ? null : (JSON.parse(text) as T));

export interface SessionRow extends SessionTotalsColumns {
  pk: number;
  id: string;
  project_id: string;
  init_timestamp: string;
  init_us: number;
  end_timestamp: string | null;
  end_state: string | null;
  end_state_reason: string | null;
  tags: string | null;
  host_env: string | null;
  extra: string;
  root_rank: string | null;
  conversation_id: string | null;
}

/** The totals a session's row keeps (SQLite migration 007, PostgreSQL 005). */
export interface SessionTotalsColumns {
  event_count: number;
  llm_count: number;
  tool_count: number;
  action_count: number;
  error_count: number;
  prompt_tokens: number;
  completion_tokens: number;
  cache_read_tokens: number;
  cache_creation_tokens: number;
  reasoning_tokens: number;
  cost: number;
  first_us: number | null;
  last_us: number | null;
  duration_us: number;
}

/** The names of those columns, for a SELECT. */
export const TOTALS_COLUMNS = [
  "event_count",
  "llm_count",
  "tool_count",
  "action_count",
  "error_count",
  "prompt_tokens",
  "completion_tokens",
  "cache_read_tokens",
  "cache_creation_tokens",
  "reasoning_tokens",
  "cost",
  "first_us",
  "last_us",
  "duration_us",
] as const;

/** A session's totals as its row keeps them. */
export const rowTotals = (row: SessionTotalsColumns): SessionTotals => ({
  events: row.event_count,
  event_counts: { llm: row.llm_count, tool: row.tool_count, action: row.action_count, error: row.error_count },
  prompt_tokens: row.prompt_tokens,
  completion_tokens: row.completion_tokens,
  cache_read_tokens: row.cache_read_tokens,
  cache_creation_tokens: row.cache_creation_tokens,
  reasoning_tokens: row.reasoning_tokens,
  cost: row.cost,
  first_us: row.first_us,
  last_us: row.last_us,
});

export interface StoredEvent {
  id: string;
  type: string;
  init_timestamp: string;
  init_us: number;
  end_timestamp: string | null;
  agent_id: string | null;
  model: string | null;
  prompt_tokens: number | null;
  completion_tokens: number | null;
  cost: number | null;
  cost_source: string;
  body: string;
  aliases: string | null;
  extra: string;
  parent_id: string | null;
  own_agent_id: string | null;
  cache_read_tokens: number | null;
  cache_creation_tokens: number | null;
  reasoning_tokens: number | null;
}

export interface EventPageParams {
  pk: number;
  types: string | null;
  limit: number;
}

export const sessionRecord = (row: SessionRow): SessionRecord => ({
  id: row.id,
  project_id: row.project_id,
  init_timestamp: row.init_timestamp,
  init_us: row.init_us,
  end_timestamp: row.end_timestamp,
  end_state: row.end_state as EndState | null,
  end_state_reason: row.end_state_reason,
  tags: parse<string[]>(row.tags),
  host_env: parse<JsonObject>(row.host_env),
  extra: parse<JsonObject>(row.extra) ?? {},
  ...(row.conversation_id === null ? {} : { conversation_id: row.conversation_id }),
});

export const eventRecord = (row: StoredEvent): EventRecord => ({
  id: row.id,
  type: row.type as Kind,
  ...(row.parent_id === null ? {} : { parent_id: row.parent_id }),
  init_timestamp: row.init_timestamp,
  init_us: row.init_us,
  end_timestamp: row.end_timestamp,
  agent_id: row.agent_id,
  model: row.model,
  prompt_tokens: row.prompt_tokens,
  completion_tokens: row.completion_tokens,
  // The detail counts are absent when not given, as on records made before they existed.
  ...(row.cache_read_tokens === null ? {} : { cache_read_tokens: row.cache_read_tokens }),
  ...(row.cache_creation_tokens === null ? {} : { cache_creation_tokens: row.cache_creation_tokens }),
  ...(row.reasoning_tokens === null ? {} : { reasoning_tokens: row.reasoning_tokens }),
  cost: row.cost,
  cost_source: row.cost_source as CostSource,
  fields: parse<JsonObject>(row.body) ?? {},
  aliases: parse<string[]>(row.aliases) ?? [],
  extra: parse<JsonObject>(row.extra) ?? {},
});

export const agentRecord = (row: { id: string; name: string | null; extra: string }): AgentRecord => ({
  id: row.id,
  name: row.name,
  extra: parse<JsonObject>(row.extra) ?? {},
});

/** The columns of an event's row after `session_pk`, in the order of `EventRow`. */
export const EVENT_COLUMNS = [
  "id",
  "type",
  "init_timestamp",
  "init_us",
  "end_timestamp",
  "end_us",
  "agent_id",
  "model",
  "prompt_tokens",
  "completion_tokens",
  "cost",
  "cost_source",
  "body",
  "aliases",
  "extra",
  "parent_id",
  "own_agent_id",
  "cache_read_tokens",
  "cache_creation_tokens",
  "reasoning_tokens",
] as const;

/** Each column's index in an `EventRow`: `row[COLUMN.model]`. */
export const COLUMN = Object.fromEntries(EVENT_COLUMNS.map((name, i) => [name, i])) as Record<
  (typeof EVENT_COLUMNS)[number],
  number
>;

type Column = string | number | null;
/**
 * An event as the values of its row's columns (EVENT_COLUMNS), without the session: what
 * `insertEventRows` takes. Building it (mostly JSON.stringify) is CPU work that a caller may do
 * on another thread than the writer's; an array of strings and numbers is cheap to send there.
 */
export type EventRow = Column[] & { length: typeof EVENT_COLUMNS.length };

export const eventRow = (e: EventRecord): EventRow =>
  [
    e.id,
    e.type,
    e.init_timestamp,
    e.init_us,
    e.end_timestamp,
    // Stored end_timestamps are UTC ISO strings, so they always parse.
    e.end_timestamp === null ? null : (parseTimestamp(e.end_timestamp)?.us ?? null),
    e.agent_id,
    e.model,
    e.prompt_tokens,
    e.completion_tokens,
    e.cost,
    e.cost_source ?? (e.cost === null ? "unknown" : "client"),
    json(e.fields),
    e.aliases.length === 0 ? null : json(e.aliases),
    json(e.extra),
    e.parent_id ?? null,
    (e as Partial<SpanEventRecord>).own_agent_id ?? null,
    e.cache_read_tokens ?? null,
    e.cache_creation_tokens ?? null,
    e.reasoning_tokens ?? null,
  ] as EventRow;

/** An event's row as named parameters, for the UPDATE. */
export const eventParams = (sessionPk: number, e: EventRecord) => {
  const row = eventRow(e);
  return Object.fromEntries([["session_pk", sessionPk], ...EVENT_COLUMNS.map((column, i) => [column, row[i]])]);
};

/** Where an event row keeps what the trace writer reads (EVENT_COLUMNS order). */
export const ROW = {
  id: 0,
  agent_id: EVENT_COLUMNS.indexOf("agent_id"),
  body: EVENT_COLUMNS.indexOf("body"),
  extra: EVENT_COLUMNS.indexOf("extra"),
  parent_id: EVENT_COLUMNS.indexOf("parent_id"),
  own_agent_id: EVENT_COLUMNS.indexOf("own_agent_id"),
} as const;

/** An event row back as its record (the rare path that must re-read one: T3 log records). */
export function recordOfRow(row: EventRow): EventRecord {
  const named = Object.fromEntries(EVENT_COLUMNS.map((column, i) => [column, row[i]])) as unknown as StoredEvent;
  return eventRecord(named);
}

/** The deepest parent chain followed within one request; a longer one is cut (its agent left unknown). */
const MAX_DEPTH = 1000;

/**
 * T14: the agent of each span row of a request: its own, else its nearest agent ancestor's,
 * looked for among the request's rows first, then with `stored` (a stored parent's agent).
 */
export function agentResolver(rows: EventRow[], stored: (parentId: string) => string | null) {
  const byId = new Map(rows.map((row) => [row[ROW.id] as string, row]));
  const resolved = new Map<string, string | null>();
  const agentOf = (row: EventRow, depth: number): string | null => {
    const own = row[ROW.agent_id] as string | null;
    if (own !== null) return own;
    const id = row[ROW.id] as string;
    const known = resolved.get(id);
    if (known !== undefined) return known;
    const parentId = row[ROW.parent_id] as string | null;
    let agent: string | null = null;
    if (parentId !== null && depth < MAX_DEPTH) {
      const parent = byId.get(parentId);
      agent = parent ? agentOf(parent, depth + 1) : stored(parentId);
    }
    resolved.set(id, agent);
    return agent;
  };
  return (row: EventRow) => agentOf(row, 0);
}

/** A span's row with its GenAI log records applied (T3), when it has any. */
export function rowWithRecords(row: EventRow, records: SpanLogRecord[]): EventRow {
  if (records.length === 0) return row;
  const event = { ...recordOfRow(row), parent_id: row[ROW.parent_id], own_agent_id: row[ROW.own_agent_id] };
  return eventRow(withLogRecords(event as SpanEventRecord, records));
}

/** A candidate of a delete batch (Store.deleteSessions): its row key, its list position, its events. */
export interface Picked {
  pk: number;
  init_us: number;
  id: string;
  events: number;
}

/**
 * The sessions of one delete batch: the candidates in list order, at most `maxSessions`, and no
 * more events than `maxEvents` unless the first session alone has more (a session is never split).
 */
export function takeBatch(rows: Picked[], batch: { maxSessions: number; maxEvents: number }) {
  const taken: Picked[] = [];
  let events = 0;
  for (const row of rows) {
    if (taken.length === batch.maxSessions) break;
    if (taken.length > 0 && events + row.events > batch.maxEvents) break;
    taken.push(row);
    events += row.events;
  }
  return { rows: taken, events };
}
