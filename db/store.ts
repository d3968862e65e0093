/**
 * The storage boundary. Handlers reach storage only through `Store`; every method is async so
 * that an adapter over a network database can implement the same interface. Every write method
 * is atomic, and its promise settles only once its data is committed (contract G7); an adapter
 * may commit several calls in one transaction (db/sqlite.ts groups them, each in a savepoint).
 */

import type { EventInput } from "../lib/records.ts";

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
   * written before prices existed). Handlers always set it (lib/prices.ts priceEvent).
   */
  cost_source?: CostSource;
  /** Every other field the contract names that was given (prompt, completion, name, input, ...). */
  fields: JsonObject;
  /** The alias names the client used (`event_type`, `timestamp`, `tool_name`, ...), echoed on read. */
  aliases: string[];
  /** Fields the contract does not name, as sent (G5). */
  extra: JsonObject;
}

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

export interface SessionSnapshot {
  session: SessionRecord;
  totals: SessionTotals;
  agents: AgentRecord[];
  events: EventRecord[];
}

export interface Page<T> {
  items: T[];
  /** Where the next page starts; null when this is the last one. */
  next: Position | null;
}

/** Applies one update_events entry to a stored event (a pure function, run inside the transaction). */
export type EventPatcher<P> = (stored: EventRecord, patch: P) => EventRecord;

/** One update_events entry: the fields it changes (lib/records.ts readEvent) and the event's id. */
export type EventPatch = EventInput & { id: string };

export type UpdateEventsResult<P> =
  | { status: "updated"; updated: number }
  | { status: "unknown"; unknown: { index: number; id: string; patch: P }[] }
  | { status: "no-session" };

/** The code of `KeyRevoked`, which crosses threads (db/thread.ts) with it. */
export const KEY_REVOKED = "AGENTMON_KEY_REVOKED";

/** Thrown by a JWT's write when the API key the token was issued through is revoked or gone. */
export class KeyRevoked extends Error {
  readonly code = KEY_REVOKED;
  constructor() {
    super("the API key this JWT was issued through is revoked");
  }
}

/** Thrown by Store.ping when the database is not at the schema version this code needs. */
export class SchemaMismatch extends Error {
  constructor(
    readonly found: number,
    readonly needed: number,
  ) {
    super(`the database is at schema version ${found}; this server needs ${needed}`);
  }
}

export interface Store {
  /** A value of the meta table, set to `fallback` first if there is none. */
  metaValue(key: string, fallback: string): Promise<string>;

  createApiKey(keyHash: string, prefix: string, projectName: string, now: string): Promise<ApiKeyRecord>;
  apiKeyByHash(keyHash: string): Promise<ApiKeyRecord | undefined>;
  apiKeyById(id: string): Promise<ApiKeyRecord | undefined>;
  listApiKeys(): Promise<ApiKeyRecord[]>;
  revokeApiKey(id: string, now: string): Promise<void>;

  /** Creates the session unless its id exists; says who owns it now. */
  createSession(projectId: string, session: NewSession): Promise<{ created: boolean; projectId: string }>;
  getSession(id: string): Promise<SessionRecord | undefined>;
  /**
   * Undefined when the session does not exist in that project.
   *
   * The four writes a JWT makes (updateSession, insertEvents, updateEvents, upsertAgent) take the
   * id of the API key the token was issued through: the write then fails with `KeyRevoked`, and
   * stores nothing, if that key is revoked (or gone) when it runs, whoever revoked it (4.3).
   */
  updateSession(
    projectId: string,
    id: string,
    changes: SessionChanges,
    keyId?: string,
  ): Promise<SessionRecord | undefined>;
  /** The sum of the `cost` of the session's llm events (the same sum as `sessionTotals(...).cost`). */
  tokenCost(sessionId: string): Promise<number>;

  /**
   * A page of the project's sessions, newest first (init_us desc, then id desc), after `after`,
   * each with its totals.
   */
  listSessions(
    projectId: string,
    filter: SessionFilter,
    after: Position | undefined,
    limit: number,
  ): Promise<Page<{ session: SessionRecord; totals: SessionTotals }>>;
  /**
   * The session with its totals, and its agents and all its events when asked (else empty), read
   * in one transaction, so they agree; undefined when the session is not in the project.
   */
  readSession(
    projectId: string,
    sessionId: string,
    parts: { agents: boolean; events: boolean },
  ): Promise<SessionSnapshot | undefined>;
  /**
   * A page of the session's events in (init_us, id) order after `after`, only these kinds when
   * given; undefined when the session is not in the project.
   */
  listEventsPage(
    projectId: string,
    sessionId: string,
    options: { types?: Kind[]; after?: Position; limit: number },
  ): Promise<Page<EventRecord> | undefined>;
  /** Removes the session with its events and agents, in one transaction; false when it is not in the project. */
  deleteSession(projectId: string, sessionId: string): Promise<boolean>;

  /** Stores the events not already stored under their id; false when the session is not in the project. */
  insertEvents(projectId: string, sessionId: string, events: EventRecord[], keyId?: string): Promise<boolean>;
  /**
   * Applies update_events entries in one transaction, each with lib/records.ts patchEvent, and
   * re-prices a table cost with the store's price table; all or nothing.
   */
  updateEvents(
    projectId: string,
    sessionId: string,
    patches: EventPatch[],
    keyId?: string,
  ): Promise<UpdateEventsResult<EventPatch>>;
  listEvents(sessionId: string): Promise<EventRecord[]>;

  /** Inserts the agent or updates its name and extras; false when the session is not in the project. */
  upsertAgent(projectId: string, sessionId: string, agent: AgentRecord, keyId?: string): Promise<boolean>;
  listAgents(sessionId: string): Promise<AgentRecord[]>;

  /**
   * Readiness (GET /readyz): proves the database answers, is at the schema version this code
   * needs, and takes a committed write. Resolves to the schema version; rejects otherwise.
   */
  ping(now: string): Promise<number>;

  close(): Promise<void>;
}
