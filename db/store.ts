/**
 * The storage boundary. Handlers reach storage only through `Store`; every method is async so
 * that an adapter over a network database can implement the same interface. Every write method
 * is one transaction (contract G7).
 */

export type Kind = "llm" | "tool" | "action" | "error";
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
  cost: number | null;
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

/** Applies one update_events entry to a stored event (a pure function, run inside the transaction). */
export type EventPatcher<P> = (stored: EventRecord, patch: P) => EventRecord;

export type UpdateEventsResult<P> =
  | { status: "updated"; updated: number }
  | { status: "unknown"; unknown: { index: number; id: string; patch: P }[] }
  | { status: "no-session" };

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
  /** Undefined when the session does not exist in that project. */
  updateSession(projectId: string, id: string, changes: SessionChanges): Promise<SessionRecord | undefined>;
  /** The sum of the `cost` of the session's llm events. */
  tokenCost(sessionId: string): Promise<number>;

  /** Stores the events not already stored under their id; false when the session is not in the project. */
  insertEvents(projectId: string, sessionId: string, events: EventRecord[]): Promise<boolean>;
  updateEvents<P extends { id: string }>(
    projectId: string,
    sessionId: string,
    patches: P[],
    apply: EventPatcher<P>,
  ): Promise<UpdateEventsResult<P>>;
  listEvents(sessionId: string): Promise<EventRecord[]>;

  /** Inserts the agent or updates its name and extras; false when the session is not in the project. */
  upsertAgent(projectId: string, sessionId: string, agent: AgentRecord): Promise<boolean>;
  listAgents(sessionId: string): Promise<AgentRecord[]>;

  /**
   * Readiness (GET /readyz): proves the database answers, is at the schema version this code
   * needs, and takes a committed write. Resolves to the schema version; rejects otherwise.
   */
  ping(now: string): Promise<number>;

  close(): Promise<void>;
}
