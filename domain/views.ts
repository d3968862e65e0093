/**
 * From records to replies: what clients read of a session, an event, an agent and a session's
 * stats (S6, G5: the fields as they were sent, with the aliases they were sent under).
 */

import { KINDS } from "./records.ts";
import { parseTimestamp } from "./timestamps.ts";
import type {
  AgentRecord,
  CostSource,
  EventRecord,
  JsonObject,
  Kind,
  SessionRecord,
  SessionSnapshot,
  SessionTotals,
} from "./types.ts";

/**
 * The session as clients see it (S6): named fields, then the unknown ones as sent, then the
 * conversation an OTLP trace named (T13), on the sessions that have one: the value the
 * `conversation_id` filter matches, so it wins over an unknown field of that name.
 */
export function sessionView(session: SessionRecord) {
  return {
    id: session.id,
    init_timestamp: session.init_timestamp,
    end_timestamp: session.end_timestamp,
    end_state: session.end_state,
    end_state_reason: session.end_state_reason,
    tags: session.tags,
    host_env: session.host_env,
    ...session.extra,
    ...(session.conversation_id === undefined || session.conversation_id === null
      ? {}
      : { conversation_id: session.conversation_id }),
  };
}

/** The fields every event view carries, whatever was sent. */
const namedView = (event: EventRecord, sessionId: string) => ({
  id: event.id,
  type: event.type,
  session_id: sessionId,
  init_timestamp: event.init_timestamp,
  end_timestamp: event.end_timestamp,
  agent_id: event.agent_id,
  // A span's parent span (otlp.md T14); absent on roots and on v2 events.
  ...(event.parent_id === undefined || event.parent_id === null ? {} : { parent_id: event.parent_id }),
});

/** The columns an event view shows when known (the token details also when read from `usage`). */
const COUNTED = [
  "model",
  "prompt_tokens",
  "completion_tokens",
  "cache_read_tokens",
  "cache_creation_tokens",
  "reasoning_tokens",
] as const;

/** The event as clients read it: canonical fields, the aliases it was sent with, its unknown fields. */
export function eventView(event: EventRecord, sessionId: string) {
  const view: JsonObject = namedView(event, sessionId);
  for (const key of COUNTED) {
    const value = event[key];
    if (value !== null && value !== undefined) view[key] = value;
  }
  // Only a cost the client sent is a field it sent; a table price is shown by readEventView.
  if (event.cost !== null && (event.cost_source ?? "client") === "client") view.cost = event.cost;
  Object.assign(view, event.fields);
  const echo: Record<string, unknown> = {
    event_type: KINDS[event.type],
    timestamp: event.init_timestamp,
    tool_name: event.fields.name,
    params: event.fields.input,
    returns: event.fields.output,
  };
  for (const alias of event.aliases) view[alias] = echo[alias];
  return { ...view, ...event.extra };
}

/** What every event the read API answers carries; the other fields are the ones it was sent with (G5). */
export interface StoredEventView {
  id: string;
  type: Kind;
  session_id: string;
  init_timestamp: string;
  end_timestamp: string | null;
  agent_id: string | null;
  cost?: number;
  cost_source?: CostSource;
  [field: string]: unknown;
}

/**
 * An event as the read API answers it: eventView, plus for llm events `cost_source` and `cost`
 * when it is known (the client's or the table's). `cost_source` is the server's on llm events:
 * an unknown field of that name sent by a client is stored but not shown there.
 */
export function readEventView(event: EventRecord, sessionId: string): StoredEventView {
  const view = eventView(event, sessionId);
  const fixed = namedView(event, sessionId);
  if (event.type !== "llm") return { ...view, ...fixed };
  const { cost: _cost, cost_source: _source, ...rest } = view;
  const source = event.cost_source ?? (event.cost === null ? "unknown" : "client");
  return { ...rest, ...fixed, ...(event.cost === null ? {} : { cost: event.cost }), cost_source: source };
}

// ---------------------------------------------------------------- read API

/** An agent as the read API answers it: id, name, then its unknown fields as sent. */
export const agentView = (agent: AgentRecord) => ({ id: agent.id, name: agent.name, ...agent.extra });

/** An instant in microseconds as a stored timestamp (G6): UTC, `Z`, the fraction without trailing zeros. */
export function isoFromMicros(us: number): string {
  const ms = Math.floor(us / 1000);
  const base = new Date(ms).toISOString(); // YYYY-MM-DDTHH:MM:SS.mmmZ
  const fraction = `${base.slice(20, 23)}${String(us - ms * 1000).padStart(3, "0")}`.replace(/0+$/, "");
  return `${base.slice(0, 19)}${fraction === "" ? "" : `.${fraction}`}Z`;
}

/**
 * A session's Stats: its totals, with `cost` as token_cost writes it (S6) and `duration_ms` from
 * the session's end, or while it has none from its latest event (0 without events).
 */
export function statsView(session: SessionRecord, totals: SessionTotals) {
  const end = session.end_timestamp === null ? undefined : parseTimestamp(session.end_timestamp)?.us;
  const until = end ?? totals.last_us ?? session.init_us;
  return {
    events: totals.events,
    event_counts: totals.event_counts,
    prompt_tokens: totals.prompt_tokens,
    completion_tokens: totals.completion_tokens,
    cache_read_tokens: totals.cache_read_tokens,
    cache_creation_tokens: totals.cache_creation_tokens,
    reasoning_tokens: totals.reasoning_tokens,
    cost: formatCost(totals.cost),
    // A clock set wrong on the client can put the end before the start: a duration is never negative.
    duration_ms: Math.max(0, until - session.init_us) / 1000,
    error_count: totals.event_counts.error,
    first_event_at: totals.first_us === null ? null : isoFromMicros(totals.first_us),
    last_event_at: totals.last_us === null ? null : isoFromMicros(totals.last_us),
  };
}

/** token_cost (S6): plain decimal, at most 12 places, trailing zeros trimmed to at least two. */
export function formatCost(total: number): string {
  // toFixed switches to exponent notation from 1e21 on, where a double has no fraction left anyway.
  const fixed = total < 1e21 ? total.toFixed(12).replace(/0+$/, "") : `${BigInt(total)}.`;
  const [whole, decimals = ""] = fixed.split(".");
  return `${whole}.${decimals.padEnd(2, "0")}`;
}

/** What getSession and exportSession both answer of a session: itself, its stats, its agents. */
export const sessionDocument = (found: Omit<SessionSnapshot, "events">) => ({
  session: sessionView(found.session),
  stats: statsView(found.session, found.totals),
  agents: found.agents.map(agentView),
});

/** What exportSession answers of a session, and one line of GET /v2/export?format=ndjson: all of it. */
export const exportDocument = (found: SessionSnapshot) => ({
  ...sessionDocument(found),
  events: found.events.map((event) => readEventView(event, found.session.id)),
});
