/**
 * The records agentmon keeps, as every layer sees them: what a client sent, canonicalised
 * (domain/records.ts), what a Store keeps and gives back (db/store.ts), and what the views make
 * replies from (domain/views.ts).
 */
import type { Timestamp } from "./timestamps.ts";

export type Kind = "llm" | "tool" | "action" | "error";
/** Where an event's `cost` comes from: the client, the model price table, or nowhere (it is null). */
export type CostSource = "client" | "table" | "unknown";
export type EndState = "Success" | "Fail" | "Indeterminate";
export type JsonObject = Record<string, unknown>;

export interface SessionRecord {
  id: string;
  project_id: string;
  init_timestamp: string;
  init_us: number;
  end_timestamp: string | null;
  end_state: EndState | null;
  end_state_reason: string | null;
  tags: string[] | null;
  host_env: JsonObject | null;
  /** Fields the contract does not name, as sent (G5). */
  extra: JsonObject;
}

/** A session as a client creates it. */
export type NewSession = Omit<SessionRecord, "project_id">;

/** What an update changes: only the keys present; `extra` is merged into the stored extras. */
export interface SessionChanges {
  init_timestamp?: string;
  init_us?: number;
  end_timestamp?: string;
  end_state?: EndState;
  end_state_reason?: string;
  tags?: string[];
  host_env?: JsonObject;
  extra: JsonObject;
}

export interface EventRecord {
  id: string;
  type: Kind;
  init_timestamp: string;
  init_us: number;
  end_timestamp: string | null;
  agent_id: string | null;
  model: string | null;
  prompt_tokens: number | null;
  completion_tokens: number | null;
  /** The client's cost, or the price table's (see cost_source); null when not known. */
  cost: number | null;
  /**
   * Absent means: `client` when `cost` is set, else `unknown` (what migration 002 gives rows
   * written before prices existed). Services always set it (domain/prices.ts priceEvent).
   */
  cost_source?: CostSource;
  /** Every other field the contract names that was given (prompt, completion, name, input, ...). */
  fields: JsonObject;
  /** The alias names the client used (`event_type`, `timestamp`, `tool_name`, ...), echoed on read. */
  aliases: string[];
  /** Fields the contract does not name, as sent (G5). */
  extra: JsonObject;
}

/** One event of a create_events or update_events body, before it meets a stored event. */
export interface EventInput {
  id: string | undefined;
  type: Kind | undefined;
  session_id: string | undefined;
  init: Timestamp | undefined;
  /** Every other named field given, canonical names, columns included. */
  fields: JsonObject;
  aliases: string[];
  extra: JsonObject;
}

/** One update_events entry: the fields it changes (domain/records.ts readEvent) and the event's id. */
export type EventPatch = EventInput & { id: string };

export interface AgentRecord {
  id: string;
  name: string | null;
  extra: JsonObject;
}

export interface ApiKeyRecord {
  id: string;
  project_id: string;
  project_name: string;
  prefix: string;
  created_at: string;
  revoked_at: string | null;
}

/** Where a page of sessions or events starts: after this row in the page order. */
export interface Position {
  init_us: number;
  id: string;
}

/** The filters of GET /v2/sessions; every one given must match. */
export interface SessionFilter {
  /** Every one of these tags. */
  tags?: string[];
  end_state?: EndState;
  /** init_us >= from_us */
  from_us?: number;
  /** init_us < to_us */
  to_us?: number;
  /** A registered agent with this id, or an event with this agent_id. */
  agent_id?: string;
  /** A case-insensitive substring of end_state_reason. */
  q?: string;
}

/** The figures of a session's events that Stats are made of (zeros when it has none). */
export interface SessionTotals {
  events: number;
  event_counts: Record<Kind, number>;
  /** Sums over llm events. */
  prompt_tokens: number;
  completion_tokens: number;
  cost: number;
  /** Earliest event init, and latest event init or end, in microseconds; null when no events. */
  first_us: number | null;
  last_us: number | null;
}

/** A session with the totals of its events, read together. */
export interface SessionWithTotals {
  session: SessionRecord;
  totals: SessionTotals;
}

export interface SessionSnapshot extends SessionWithTotals {
  agents: AgentRecord[];
  events: EventRecord[];
}

export interface Page<T> {
  items: T[];
  /** Where the next page starts; null when this is the last one. */
  next: Position | null;
}

export type UpdateEventsResult =
  | { status: "updated"; updated: number }
  | { status: "unknown"; unknown: { index: number; id: string }[] }
  | { status: "no-session" };

/** What a session's JWT says (contract 4.4): whose session, through which API key, until when. */
export interface Claims {
  session_id: string;
  project_id: string;
  key_id: string;
  iat: number;
  exp: number;
}
