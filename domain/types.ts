/**
 * The records agentmon keeps, as every layer sees them: what a client sent, canonicalised
 * (domain/records.ts), what a Store keeps and gives back (db/store.ts), and what the views make
 * replies from (domain/views.ts).
 */

import type { SearchMatch, SearchQuery } from "./search.ts";
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
  /**
   * The conversation an OTLP trace belongs to (otlp.md T13: `gen_ai.conversation.id`,
   * `session.id`, ...), a filter of GET /v2/sessions; absent or null for v2 sessions.
   */
  conversation_id?: string | null;
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
  /** The event this one is nested under (an OTLP span's parent span, T14); absent or null: none. */
  parent_id?: string | null;
  init_timestamp: string;
  init_us: number;
  end_timestamp: string | null;
  agent_id: string | null;
  model: string | null;
  /** Every input token of the call, cache reads and writes included (docs/decisions/015-prices.md). */
  prompt_tokens: number | null;
  /** Every output token of the call, reasoning tokens included. */
  completion_tokens: number | null;
  /** The part of prompt_tokens read from the provider's prompt cache; absent or null: not given. */
  cache_read_tokens?: number | null;
  /** The part of prompt_tokens written to the provider's prompt cache; absent or null: not given. */
  cache_creation_tokens?: number | null;
  /** The part of completion_tokens spent on reasoning; absent or null: not given. */
  reasoning_tokens?: number | null;
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

/** An event made from an OTLP span (otlp.md T14), or an error event of one (T16). */
export interface SpanEventRecord extends EventRecord {
  parent_id: string | null;
  /** The agent this span registers (an agent span), else null; its descendants inherit it. */
  own_agent_id: string | null;
}

/**
 * What one OTLP request brings to one trace (a session, T12): written in one transaction with the
 * rest of its request. The store creates the session when it is new, lowers its init to the
 * earliest span start, lets the best root so far set the root's fields (T13), stores the events
 * not already stored (T17), registers the agents, and gives every event the agent of its nearest
 * agent ancestor, across requests (T14).
 */
export interface TraceWrite {
  /** The trace id as a UUID. */
  session_id: string;
  /** The earliest start of these spans. */
  init_timestamp: string;
  init_us: number;
  /** A conversation id that a span of this request names, if any (the root's wins). */
  conversation_id: string | null;
  /** The best root span of this request, if it has one. */
  root: RootCandidate | null;
  events: SpanEventRecord[];
  agents: AgentRecord[];
}

/**
 * A root span's claim on its session's fields. Roots are ranked so that every order of arrival
 * ends with the same one (T13, T17): a root marked `agentops.span.kind = session` first, then the
 * earliest start, then the smallest span id; `rank` sorts that way as a string.
 */
export interface RootCandidate {
  rank: string;
  /** The fields the root sets; the ones it does not give are cleared. */
  fields: {
    end_timestamp: string | null;
    end_state: EndState | null;
    end_state_reason: string | null;
    tags: string[] | null;
    host_env: JsonObject | null;
    conversation_id: string | null;
    /** Kept under the session's extra, replacing what an earlier root put there (G5). */
    extra: JsonObject;
  };
}

/** A GenAI event, from a span event or a log record, with plain values. */
export interface GenAiEvent {
  name: string;
  attributes: JsonObject;
  /** A log record's body (plain); span events have none. */
  body?: unknown;
  /** A log record's other fields, kept (G5): times, severity, flags, scope. */
  record?: JsonObject;
}

/** A GenAI log record of a span (otlp.md T3), as the store keeps it until and after its span arrives. */
export interface SpanLogRecord {
  /** The record's time in microseconds (its timestamp, else when it was observed). */
  time_us: number;
  /** A digest of the record: the same record sent twice is kept once. */
  digest: string;
  event: GenAiEvent;
}

/** A GenAI log record of a span (otlp.md T3), on its way to the store. */
export interface SpanRecordWrite {
  /** The trace id as a UUID. */
  session_id: string;
  span_id: string;
  /** When the record happened: a session made by it starts then. */
  init_timestamp: string;
  init_us: number;
  record: SpanLogRecord;
}

/** How a TraceWrite went: stored (or already stored), or refused: the trace is another project's session. */
/** What a trace of a write came to: stored into a session it made (`created`) or one that existed, or refused (another project's). */
export type TraceOutcome = "created" | "stored" | "foreign";

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

/**
 * What an API key may do (issue 16 part 4): `ingest` the write API and OTLP, `read` the read API
 * and the UI, `admin` deleting and managing, `annotate` scoring alone (issue 25).
 * openapi.yaml's `x-agentmon-scope` says which ones each operation takes.
 */
export type Scope = "ingest" | "read" | "admin" | "annotate";

export interface ApiKeyRecord {
  id: string;
  project_id: string;
  project_name: string;
  prefix: string;
  created_at: string;
  revoked_at: string | null;
  /** Never empty; in the order of SCOPES (domain/keys.ts); fixed when the key is created. */
  scopes: Scope[];
}

/** Where a page of sessions or events starts: after this row in the page order. */
export interface Position {
  /** For a list in another order than start time (SessionSort): the sort key's value. */
  init_us: number;
  id: string;
}

/** The orders of GET /v2/sessions: start time (init_us), duration_us, cost, prompt+completion tokens, events. */
export interface SessionSort {
  by: "start_time" | "duration" | "cost" | "tokens" | "events";
  order: "desc" | "asc";
}
export const DEFAULT_SORT: SessionSort = { by: "start_time", order: "desc" };

/** The filters of GET /v2/sessions; every one given must match. */
/**
 * A session filter by a score (GET /v2/sessions `score.<name>=…`): the session (or one of its
 * events) has a score of `name` that passes every bound given; or, `missing`, has none of that
 * name. What storage matches it with: domain/scores.ts scoreFilterJson.
 */
export interface ScoreCondition {
  name: string;
  /** Numeric bounds, both included. */
  lo?: number;
  hi?: number;
  label?: string;
  bool?: boolean;
  missing?: boolean;
}

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
  /** Full-text search (domain/search.ts): every term in one event's searched fields, or in the session's own. */
  q?: SearchQuery;
  /** The conversation of an OTLP trace (otlp.md T13). */
  conversation_id?: string;
  /** An llm event of this model (session_models). */
  model?: string;
  /**
   * Top-level fields of the session's extra (each key a name, never a path), each matching its
   * text as domain/extra.ts says: a string holding it exactly, a number of the same value when it
   * is a JSON number, the boolean when it is true or false; null, objects and arrays never.
   */
  extra?: Record<string, string>;
  /** Scores the session (or its events) has, or lacks (issue 25; domain/scores.ts ScoreCondition). */
  scores?: ScoreCondition[];
  /** The session's cost, rounded to 12 decimals as token_cost shows it, within [min_cost, max_cost]. */
  min_cost?: number;
  max_cost?: number;
  /** duration_us within [min_duration_us, max_duration_us]. */
  min_duration_us?: number;
  max_duration_us?: number;
  /** error_count > 0 (true) or = 0 (false). */
  has_errors?: boolean;
  /**
   * Retention (docs/decisions/020-retention.md): the session's last activity, the latest of its
   * start, its end_timestamp and its events' init and end times, is before this instant.
   */
  idle_before_us?: number;
}

/** A project, with its retention: days, 0 to keep its sessions forever, null for the server's default. */
export interface ProjectRecord {
  id: string;
  name: string;
  created_at: string;
  retention_days: number | null;
}

/** One batch of a bulk delete or a retention sweep (Store.deleteSessions). */
export interface DeleteBatch {
  /** Start after this session, in list order (newest first); the first batch: undefined. */
  after?: Position | undefined;
  /** The most sessions in the batch, and the most events (a session over it is a batch alone). */
  maxSessions: number;
  maxEvents: number;
  /** Count only: nothing is deleted. */
  dryRun: boolean;
}

/** What one batch removed (or, dry, would remove), and where the next starts (null: the last). */
export interface DeletedBatch {
  sessions: number;
  events: number;
  next: Position | null;
}

/** The figures of a session's events that Stats are made of (zeros when it has none). */
export interface SessionTotals {
  events: number;
  event_counts: Record<Kind, number>;
  /** Sums over llm events. */
  prompt_tokens: number;
  completion_tokens: number;
  cache_read_tokens: number;
  cache_creation_tokens: number;
  reasoning_tokens: number;
  cost: number;
  /** Earliest event init, and latest event init or end, in microseconds; null when no events. */
  first_us: number | null;
  last_us: number | null;
}

/** A session with the totals of its events, read together. */
export interface SessionWithTotals {
  session: SessionRecord;
  totals: SessionTotals;
  /** Where the session matched the list's `q`, when one was given. */
  match?: SearchMatch;
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

/** What a credential of the OTLP and v4 endpoints says (otlp.md T7): whose project, through which API key. */
export interface OtlpClaims {
  project_id: string;
  key_id: string;
}

/** A model of llm events that have no cost (cost_source `unknown`): what `agentmon prices check` lists. */
export interface UnpricedModel {
  model: string;
  /** How many such events, in every project. */
  events: number;
  /** How many of them have a token count (the others could not be priced by tokens anyway). */
  with_tokens: number;
  /** The earliest and latest init_us of those events. */
  first_us: number;
  last_us: number;
}

/** A price table imported into the database (`agentmon prices import`), as the store keeps it. */
export interface ImportedPrices {
  /** The file's text, as it was checked and imported. */
  text: string;
  /** The file it was read from. */
  source: string;
  imported_at: string;
}
