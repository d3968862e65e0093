/**
 * The agentmon client: `agentmon({ baseUrl, apiKey })` gives the ergonomic API (sessions that
 * keep their JWT, the read API with the key), and `createAgentmonClient` the raw openapi-fetch
 * client typed by openapi.yaml, which the ergonomic API is built on.
 */
import createClient, { type Client, type ClientOptions } from "openapi-fetch";
import { AgentmonError, isInvalidJwt } from "./errors.ts";
import type { paths } from "./generated/api.ts";
import type {
  AgentInput,
  EndState,
  EventChange,
  EventInput,
  ExportSessionResponse,
  GetSessionResponse,
  ListEventsQuery,
  ListScoresQuery,
  ListSessionEventsResponse,
  ListSessionsQuery,
  ListSessionsResponse,
  OtlpJsonExport,
  Score,
  ScoreInput,
  ScorePage,
  SessionInput,
  SessionListItem,
  Stats,
  StoredEvent,
  UpdateSessionResponse,
} from "./types.ts";

/** The raw client: every operation of openapi.yaml, its path, parameters, body and answers typed. */
export type AgentmonClient = Client<paths>;

export interface AgentmonOptions {
  /** Where agentmon listens, e.g. `http://127.0.0.1:3000`. */
  baseUrl: string;
  /**
   * An API key (a UUID) of the project to record into and read from. Without one, only a session
   * resumed with its JWT can write, and it cannot reauthorize when the JWT expires.
   */
  apiKey?: string | undefined;
  /** A fetch to send requests with (a proxy's, a test's); the global fetch by default. */
  fetch?: ClientOptions["fetch"] | undefined;
  /** Headers sent with every request (e.g. a reverse proxy's credentials). */
  headers?: Record<string, string> | undefined;
}

const KEY_HEADER = "X-Agentmon-Api-Key";

/**
 * The raw openapi-fetch client. With `apiKey` it sends the key on every request (the API-key
 * operations need it; operations judged by a JWT ignore it, 4.2). Answers are not thrown: each
 * call gives `{ data, error, response }`.
 */
export function createAgentmonClient(options: AgentmonOptions): AgentmonClient {
  const headers: Record<string, string> = { ...options.headers };
  if (options.apiKey !== undefined) headers[KEY_HEADER] = options.apiKey;
  return createClient<paths>({
    baseUrl: options.baseUrl,
    headers,
    ...(options.fetch === undefined ? {} : { fetch: options.fetch }),
  });
}

/** The ergonomic client. */
export function agentmon(options: AgentmonOptions): Agentmon {
  return new Agentmon(options);
}

/** One openapi-fetch answer, either member of its union. */
interface Answer<T> {
  data?: T;
  error?: unknown;
  response: Response;
}

/** The body of a success, or the call's AgentmonError. */
function unwrap<T>(answer: Answer<T>): T {
  if (!answer.response.ok) throw AgentmonError.fromResponse(answer.response, answer.error);
  return answer.data as T;
}

export class Agentmon {
  /** The raw typed client, with the API key (see createAgentmonClient). */
  readonly raw: AgentmonClient;
  readonly #apiKey: string | undefined;

  constructor(options: AgentmonOptions) {
    this.raw = createAgentmonClient(options);
    this.#apiKey = options.apiKey;
  }

  /**
   * Opens a session (S1) and keeps its JWT. The id is yours to choose (a random UUID when not
   * given); opening an id that exists in the key's project again gives a fresh JWT and changes
   * nothing (S3).
   */
  async startSession(fields: SessionInput = {}): Promise<AgentmonSession> {
    const { id = globalThis.crypto.randomUUID(), ...rest } = fields;
    const created = unwrap(await this.raw.POST("/v2/create_session", { body: { session: { id, ...rest } } }));
    return new AgentmonSession(this.raw, this.#apiKey, created.session_id, created.jwt, created.session_url);
  }

  /**
   * A session that already exists, to write to: with its JWT when you have one (from another
   * process), else one is obtained with the API key at the first call.
   */
  session(id: string, options: { jwt?: string } = {}): AgentmonSession {
    return new AgentmonSession(this.raw, this.#apiKey, id, options.jwt, undefined);
  }

  /** One page of the project's sessions, newest first, with their stats. */
  async listSessions(query: ListSessionsQuery = {}): Promise<ListSessionsResponse> {
    return unwrap(await this.raw.GET("/v2/sessions", { params: { query } }));
  }

  /** Every session the filters match, newest first, page after page (`query.limit` is the page size). */
  async *sessions(query: Omit<ListSessionsQuery, "cursor"> = {}): AsyncGenerator<SessionListItem> {
    let cursor: string | null = null;
    do {
      const page: ListSessionsResponse = await this.listSessions(cursor === null ? query : { ...query, cursor });
      yield* page.sessions;
      cursor = page.next_cursor;
    } while (cursor !== null);
  }

  /** One session with its stats, its agents and its session_url. */
  async getSession(id: string): Promise<GetSessionResponse> {
    return unwrap(await this.raw.GET("/v2/sessions/{session_id}", { params: { path: { session_id: id } } }));
  }

  /** One page of a session's events, in time order. */
  async listEvents(id: string, query: ListEventsQuery = {}): Promise<ListSessionEventsResponse> {
    return unwrap(
      await this.raw.GET("/v2/sessions/{session_id}/events", { params: { path: { session_id: id }, query } }),
    );
  }

  /** Every event of a session (of the kinds asked for), in time order, page after page. */
  async *events(id: string, query: Omit<ListEventsQuery, "cursor"> = {}): AsyncGenerator<StoredEvent> {
    let cursor: string | null = null;
    do {
      const page: ListSessionEventsResponse = await this.listEvents(id, cursor === null ? query : { ...query, cursor });
      yield* page.events;
      cursor = page.next_cursor;
    } while (cursor !== null);
  }

  /** A session's totals. */
  async getStats(id: string): Promise<Stats> {
    const answer = await this.raw.GET("/v2/sessions/{session_id}/stats", { params: { path: { session_id: id } } });
    return unwrap(answer).stats;
  }

  /** The whole session (session, stats, agents, every event) as one document, read in one snapshot. */
  async exportSession(id: string): Promise<ExportSessionResponse> {
    const answer = await this.raw.GET("/v2/sessions/{session_id}/export", {
      params: { path: { session_id: id }, query: { format: "json" } },
    });
    return unwrap(answer) as ExportSessionResponse;
  }

  /** The session's spans as OTLP/JSON (an ExportTraceServiceRequest), as OTLP clients sent them (T15). */
  async exportSessionOtlp(id: string): Promise<OtlpJsonExport> {
    const answer = await this.raw.GET("/v2/sessions/{session_id}/export", {
      params: { path: { session_id: id }, query: { format: "otlp" } },
    });
    return unwrap(answer) as OtlpJsonExport;
  }

  /** Deletes a session with its events and agents. */
  async deleteSession(id: string): Promise<void> {
    unwrap(await this.raw.DELETE("/v2/sessions/{session_id}", { params: { path: { session_id: id } } }));
  }

  /**
   * Records scores of sessions, events or conversations with the API key (scope `ingest` or
   * `annotate`), all or none (SC1); answers their ids in order. Give `id`s to make a retry safe (SC6).
   */
  async score(scores: ScoreInput | ScoreInput[]): Promise<string[]> {
    const body = { scores: Array.isArray(scores) ? scores : [scores] };
    return unwrap(await this.raw.POST("/v2/scores", { body })).score_ids;
  }

  /** One page of the project's scores, newest first. */
  async listScores(query: ListScoresQuery = {}): Promise<ScorePage> {
    return unwrap(await this.raw.GET("/v2/scores", { params: { query } }));
  }

  /** Every score the filters match, newest first, page after page. */
  async *scores(query: Omit<ListScoresQuery, "cursor"> = {}): AsyncGenerator<Score> {
    let cursor: string | null = null;
    do {
      const page: ScorePage = await this.listScores(cursor === null ? query : { ...query, cursor });
      yield* page.scores;
      cursor = page.next_cursor;
    } while (cursor !== null);
  }
}

/**
 * One session, written with its JWT. The JWT is sent as a bearer token; when agentmon answers 401
 * "Invalid or expired JWT" (4.1: it expired after 24 h, or the session was opened elsewhere), the
 * session gets a new one with the API key (`/v2/reauthorize_jwt`, 4.5) and sends the call once
 * more. Every other refusal throws an AgentmonError.
 */
export class AgentmonSession {
  readonly id: string;
  readonly #raw: AgentmonClient;
  readonly #apiKey: string | undefined;
  #jwt: string | undefined;
  #url: string | undefined;
  /** The reauthorization in flight, shared by the calls that were refused together. */
  #renewing: Promise<string> | undefined;

  constructor(raw: AgentmonClient, apiKey: string | undefined, id: string, jwt?: string, url?: string) {
    this.#raw = raw;
    this.#apiKey = apiKey;
    this.id = id;
    this.#jwt = jwt;
    this.#url = url;
  }

  /** The JWT in use (undefined until the first call of a session resumed without one). */
  get jwt(): string | undefined {
    return this.#jwt;
  }

  /** The session's page in the web UI (S2), once known. */
  get url(): string | undefined {
    return this.#url;
  }

  /** Records events, all or none (G7); answers their ids in order (E3). Send `id`s to make a retry safe (G8). */
  async recordEvents(events: EventInput[]): Promise<string[]> {
    const answer = await this.#withJwt((headers) => this.#raw.POST("/v2/create_events", { body: { events }, headers }));
    return answer.event_ids;
  }

  /** Records one event; answers its id. */
  async recordEvent(event: EventInput): Promise<string> {
    const [id] = await this.recordEvents([event]);
    return id as string;
  }

  /** Changes recorded events: only the fields given (E6). Answers how many events were updated. */
  async updateEvents(changes: EventChange[]): Promise<number> {
    const body = { events: changes };
    const answer = await this.#withJwt((headers) => this.#raw.POST("/v2/update_events", { body, headers }));
    return answer.updated;
  }

  /**
   * Scores this session or one of its events with the session's JWT (SC2): `session_id` is this
   * session; answers the scores' ids in order.
   */
  async score(
    scores: Omit<ScoreInput, "session_id" | "conversation_id"> | Omit<ScoreInput, "session_id" | "conversation_id">[],
  ): Promise<string[]> {
    const body = { scores: (Array.isArray(scores) ? scores : [scores]).map((s) => ({ ...s, session_id: this.id })) };
    const answer = await this.#withJwt((headers) => this.#raw.POST("/v2/scores", { body, headers }));
    return answer.score_ids;
  }

  /** Registers an agent, or renames it (E7); answers its id. */
  async registerAgent(agent: AgentInput): Promise<string> {
    const answer = await this.#withJwt((headers) => this.#raw.POST("/v2/create_agent", { body: agent, headers }));
    return answer.agent_id;
  }

  /** Changes the session's fields (S4): only those given; `tags` replaces the list. */
  async update(fields: Omit<SessionInput, "id">): Promise<UpdateSessionResponse> {
    const answer = await this.#withJwt((headers) =>
      this.#raw.POST("/v2/update_session", { body: { session: fields }, headers }),
    );
    this.#url = answer.session_url;
    return answer;
  }

  /**
   * Ends the session (S4, S5): its end state, a reason, and the end time (now, unless given).
   * Answers the stored session and its `token_cost`.
   */
  async end(state: EndState, options: { reason?: string; endTimestamp?: string } = {}): Promise<UpdateSessionResponse> {
    const fields: Omit<SessionInput, "id"> = {
      end_state: state,
      end_timestamp: options.endTimestamp ?? new Date().toISOString(),
    };
    if (options.reason !== undefined) fields.end_state_reason = options.reason;
    return this.update(fields);
  }

  /** Gets a new JWT with the API key (4.5) and keeps it. */
  async reauthorize(): Promise<string> {
    this.#renewing ??= this.#reauthorize().finally(() => {
      this.#renewing = undefined;
    });
    return this.#renewing;
  }

  async #reauthorize(): Promise<string> {
    if (this.#apiKey === undefined) {
      throw new AgentmonError(401, "Invalid or expired JWT", "No API key to reauthorize this session's JWT with");
    }
    const answer = await this.#raw.POST("/v2/reauthorize_jwt", {
      body: { session_id: this.id },
      headers: { [KEY_HEADER]: this.#apiKey },
    });
    this.#jwt = unwrap(answer).jwt;
    return this.#jwt;
  }

  /**
   * Sends a call with the JWT (and without the API key, which a JWT call does not need); on a 401
   * for the JWT, reauthorizes and sends it once more.
   */
  async #withJwt<T>(send: (headers: Record<string, string | null>) => Promise<Answer<T>>): Promise<T> {
    const jwt = this.#jwt ?? (await this.reauthorize());
    let answer = await send({ Authorization: `Bearer ${jwt}`, [KEY_HEADER]: null });
    if (isInvalidJwt(answer.response.status, answer.error)) {
      // Another call may have renewed it meanwhile: renew only a JWT that is still the current one.
      const renewed = this.#jwt !== jwt && this.#jwt !== undefined ? this.#jwt : await this.reauthorize();
      answer = await send({ Authorization: `Bearer ${renewed}`, [KEY_HEADER]: null });
    }
    return unwrap(answer);
  }
}
