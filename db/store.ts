/**
 * The storage boundary. Services reach storage only through `Store`; every method is async so
 * that an adapter over a network database implements the same interface. Every write method is
 * atomic, and its promise settles only once its data is committed (contract G7); an adapter may
 * commit several calls in one transaction (db/sqlite/group-commit.ts). Every method that touches
 * a session is scoped by project: another project's session is answered as if it did not exist.
 * Failures are the typed errors of db/errors.ts. test/db/store.contract.ts holds every adapter
 * to this.
 */

import type { Breakdown, BreakdownRequest, Measures, Range } from "../domain/analytics.ts";
import type {
  AuditRecord,
  BrowserSessionRecord,
  MemberRecord,
  NewAudit,
  NewUser,
  Role,
  UserRecord,
  UserToken,
  UserWithPassword,
} from "../domain/people.ts";
import type {
  ScoreChanges,
  ScoreConfigRecord,
  ScoreDimension,
  ScoreFilter,
  ScoreRecord,
  ScoreSums,
  TraceScoresWrite,
} from "../domain/scores.ts";
import type {
  AgentRecord,
  ApiKeyRecord,
  DeleteBatch,
  DeletedBatch,
  EventPatch,
  EventRecord,
  ImportedPrices,
  Kind,
  NewSession,
  Page,
  Position,
  ProjectRecord,
  Scope,
  SessionChanges,
  SessionFilter,
  SessionRecord,
  SessionSnapshot,
  SessionSort,
  SessionWithTotals,
  SpanRecordWrite,
  TraceOutcome,
  TraceWrite,
  UnpricedModel,
  UpdateEventsResult,
} from "../domain/types.ts";
import type { HistogramSnapshot } from "../lib/histogram.ts";

export interface Store {
  /** A value of the meta table, set to `fallback` first if there is none. */
  metaValue(key: string, fallback: string): Promise<string>;

  /**
   * Creates the key, and its project when no project has that name. `scopes` (not empty) are what
   * it may do, for good: no method changes them; absent, domain/keys.ts DEFAULT_SCOPES.
   */
  createApiKey(
    keyHash: string,
    prefix: string,
    projectName: string,
    now: string,
    scopes?: readonly Scope[],
  ): Promise<ApiKeyRecord>;
  apiKeyByHash(keyHash: string): Promise<ApiKeyRecord | undefined>;
  apiKeyById(id: string): Promise<ApiKeyRecord | undefined>;
  listApiKeys(): Promise<ApiKeyRecord[]>;
  revokeApiKey(id: string, now: string): Promise<void>;

  /** Makes a project without a key (issue 26: an owner's act); Conflict when a project has that name. */
  createProject(name: string, now: string): Promise<ProjectRecord>;
  /** Every project, by name, with its retention. */
  listProjects(): Promise<ProjectRecord[]>;
  /**
   * Sets the project's retention: days, 0 (keep forever) or null (the server's default);
   * answers the project, or undefined when no project has that name (none is made).
   */
  setRetention(projectName: string, days: number | null): Promise<ProjectRecord | undefined>;

  /**
   * People (docs/decisions/035-people.md). Emails come lower-cased (domain/people.ts normalEmail).
   * createUser: Conflict when a person has that email; with `member`, the membership is made in
   * the same transaction.
   */
  createUser(user: NewUser, member?: { projectId: string; role: Role }): Promise<UserRecord>;
  userById(id: string): Promise<UserRecord | undefined>;
  /** The person with that email, with their password hash (sign-in only). */
  userByEmail(email: string): Promise<UserWithPassword | undefined>;
  /** Every person, oldest first. */
  listUsers(): Promise<UserRecord[]>;
  /**
   * Disables the person (`at`) and removes every browser session of theirs in the same
   * transaction, so that no node lets them in from then on; null enables them again. Undefined
   * when there is no such person.
   */
  setUserDisabled(userId: string, at: string | null): Promise<UserRecord | undefined>;
  /** Keeps a one-time link (its hash). */
  createUserToken(token: UserToken): Promise<void>;
  /**
   * Signs up through a one-time link, in one transaction: the token (of that kind, unused, not
   * expired at `now`; an invitation's email must be `user.email`) is marked used, the person is
   * made (the owner for an `owner` link) and an invitation's membership given. `invalid` when
   * the token is not so; Conflict when a person has that email.
   */
  signUp(tokenHash: string, kind: "owner" | "invite", user: NewUser, now: string): Promise<UserRecord | "invalid">;
  /**
   * Sets a password through a `reset` link, in one transaction: the token is marked used, the
   * hash stored and every browser session of the person removed. Undefined when the token is not
   * live (used, expired, of another kind) or its person is disabled.
   */
  resetPassword(tokenHash: string, passwordHash: string, now: string): Promise<UserRecord | undefined>;
  /** Sets, changes (role) or removes (null) a person's membership; answers the role they had before. */
  setMember(projectId: string, userId: string, role: Role | null, now: string): Promise<Role | undefined>;
  /** The members of a project (every project's when undefined), by project name then email. */
  listMembers(projectId?: string): Promise<MemberRecord[]>;
  /** A person's memberships, by project name. */
  membershipsOf(userId: string): Promise<MemberRecord[]>;
  /** Keeps a browser session (the hash of the cookie's random id). */
  createBrowserSession(session: BrowserSessionRecord): Promise<void>;
  /**
   * The session and its person, read in one statement, when the session exists, has not expired
   * at `now`, and its person is not disabled; else undefined. Every cookie request asks, on
   * every node: nothing is cached, so a removal is seen by the next request.
   */
  browserSession(idHash: string, now: string): Promise<{ session: BrowserSessionRecord; user: UserRecord } | undefined>;
  /** Removes one browser session (logout). */
  deleteBrowserSession(idHash: string): Promise<void>;
  /** Removes every browser session of the person (logout everywhere); answers how many. */
  deleteUserSessions(userId: string): Promise<number>;
  /** Appends to the audit trail (never changed or removed); answers the record with its seq. */
  appendAudit(record: NewAudit): Promise<AuditRecord>;
  /**
   * A page of the audit trail, newest first, after `beforeSeq` when given; oldest first when
   * `afterSeq` is given instead (the records whose seq is greater; 0 from the first, as the export
   * reads it); only the project's acts when `projectId` is given (the instance's own acts too
   * when `withInstance`).
   */
  listAudit(options: {
    projectId?: string | undefined;
    withInstance?: boolean;
    beforeSeq?: number | undefined;
    afterSeq?: number | undefined;
    limit: number;
  }): Promise<AuditRecord[]>;

  /** Creates the session unless its id exists (in any project); says which project owns it now. */
  createSession(projectId: string, session: NewSession): Promise<{ created: boolean; projectId: string }>;
  /** The session, when it is in the project. */
  getSession(projectId: string, id: string): Promise<SessionRecord | undefined>;
  /**
   * Reads the session, merges the changes and writes it, in one transaction, so that two
   * concurrent updates cannot lose each other's fields; answers the stored session with its
   * totals, or undefined when it is not in the project.
   *
   * The four writes a JWT makes (updateSession, insertEvents, updateEvents, upsertAgent) take the
   * id of the API key the token was issued through: the write then fails with `KeyRevoked`, and
   * stores nothing, if that key is revoked (or gone, or of another project) when it runs,
   * whoever revoked it (4.3).
   */
  updateSession(
    projectId: string,
    id: string,
    changes: SessionChanges,
    keyId?: string,
  ): Promise<SessionWithTotals | undefined>;

  /**
   * A page of the project's sessions, newest first (init_us desc, then id desc) or in `sort`'s
   * order (its key, then id, both in that direction), after `after` (whose init_us is the sort
   * key's value: init_us, duration_us, cost, prompt + completion tokens or the event count), each
   * with its totals.
   */
  listSessions(
    projectId: string,
    filter: SessionFilter,
    after: Position | undefined,
    limit: number,
    sort?: SessionSort,
  ): Promise<Page<SessionWithTotals>>;
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
  /**
   * One batch of a bulk delete or a retention sweep: the project's sessions that match the filter
   * (as listSessions matches them), in list order after `batch.after`, at most `maxSessions` of
   * them and, past the first, no more than `maxEvents` events in all; removed whole, with their
   * events, agents, logs and span records, in one write transaction of the group commit, where
   * the filter is checked too (so a session that became active meanwhile is not removed). With
   * `dryRun`, the same batch is counted and nothing is removed. The service calls it again from
   * `next` until it is null.
   */
  deleteSessions(projectId: string, filter: SessionFilter, batch: DeleteBatch): Promise<DeletedBatch>;
  /**
   * Gives free pages back to the file system after deletes, at most `maxPages` of them in one
   * short write (SQLite with auto_vacuum = INCREMENTAL: PRAGMA incremental_vacuum); answers the
   * pages freed and the free pages left. An engine that reuses its free space itself (PostgreSQL,
   * by autovacuum), or a SQLite file made before auto_vacuum (until `agentmon vacuum`), answers
   * zeros.
   */
  reclaimSpace(maxPages: number): Promise<{ freed: number; left: number }>;

  /**
   * Analytics (docs/decisions/024-analytics.md): for each range [lo, hi) of init_us, in order,
   * the measures of the project's sessions in it that match the filter (its from_us and to_us
   * too): their count, failures, the sums of their totals, and nearest-rank percentiles of
   * their durations (statsView's duration_ms, in microseconds); zeros and nulls for a range
   * without sessions. Read from one snapshot.
   */
  analyticsSeries(projectId: string, filter: SessionFilter, ranges: Range[]): Promise<Measures[]>;
  /**
   * Analytics: the measures of the project's sessions that match the filter, grouped by
   * `request.by` (session groupings: a session in each group it belongs to; event groupings:
   * the group's events, as openapi.yaml getAnalyticsBreakdown defines them), ranked with
   * domain/analytics.ts rankGroups; the groups past the top `limit` together as `other`, its
   * percentiles over their rows together. Read from one snapshot.
   */
  analyticsBreakdown(projectId: string, filter: SessionFilter, request: BreakdownRequest): Promise<Breakdown>;

  /**
   * Stores the events not already stored under their id (E3) and answers how many it stored: 0
   * when every one was there already (a retry, G8), so that agentmon_ingested_total counts each
   * event once. False when the session is not in the project.
   */
  insertEvents(projectId: string, sessionId: string, events: EventRecord[], keyId?: string): Promise<number | false>;
  /**
   * Applies update_events entries in one transaction, each with domain/records.ts patchEvent, in
   * order, and re-prices a table cost with the store's price table; all or nothing: when an id is
   * unknown nothing changes and the entries naming unknown ids are answered.
   */
  updateEvents(
    projectId: string,
    sessionId: string,
    patches: EventPatch[],
    keyId?: string,
  ): Promise<UpdateEventsResult>;

  /** Inserts the agent or updates its name and extras; false when the session is not in the project. */
  upsertAgent(projectId: string, sessionId: string, agent: AgentRecord, keyId?: string): Promise<boolean>;

  /**
   * OTLP traces (otlp.md T12-T17): every trace of one request, in one transaction. A new trace
   * becomes a session of the project; one that is another project's session is refused whole
   * ("foreign") and the others are stored. Spans already stored change nothing, and spans may
   * come in any order, in any number of requests, with the same result (T17). A token's write
   * takes its key's id, as updateSession does (4.3).
   */
  ingestTraces(projectId: string, writes: TraceWrite[], keyId?: string): Promise<TraceOutcome[]>;
  /**
   * T3: GenAI log records of spans, in one transaction: each is kept with its span's event,
   * whether the span is stored yet or arrives later (domain/genai.ts withLogRecords decides what
   * they change); a trace that is another project's session is refused ("foreign") per record.
   * A record kept already changes nothing.
   */
  attachSpanRecords(projectId: string, records: SpanRecordWrite[], keyId?: string): Promise<TraceOutcome[]>;
  /**
   * T18: OTLP evaluation results, in one transaction: `records` as attachSpanRecords keeps them,
   * and each trace's scores, its session created (running) when it has none yet, as an early
   * span's is (T17). A score already stored under its id changes nothing (G8); a trace that is
   * another project's session is refused ("foreign"), its scores not stored. One outcome per
   * record and per trace's scores.
   */
  ingestEvaluations(
    projectId: string,
    records: SpanRecordWrite[],
    scores: TraceScoresWrite[],
    keyId?: string,
  ): Promise<{ records: TraceOutcome[]; scores: TraceOutcome[] }>;
  /**
   * T6: appends text to a session's logs, creating the session (running, from `now`) when there
   * is none; answers the logs' size in bytes, or undefined when the session is another project's.
   */
  appendSessionLog(
    projectId: string,
    sessionId: string,
    text: string,
    now: string,
    keyId?: string,
  ): Promise<number | undefined>;
  /** The session's logs (T6), oldest first; undefined when the session is not in the project. */
  readSessionLog(projectId: string, sessionId: string): Promise<string | undefined>;

  /**
   * Scores (issue 25, openapi.yaml SC1-SC7): stores the scores not already stored under their id
   * in the project (a retry, SC6: the first copy stays), in one transaction, all or nothing: a
   * score of a session needs the session in the project, else nothing is stored and the answer
   * lists the indexes of the scores whose session is not (`missing`). Answers how many were
   * stored. A JWT's write takes its key's id (4.3), as insertEvents does.
   */
  insertScores(
    projectId: string,
    scores: ScoreRecord[],
    keyId?: string,
  ): Promise<{ stored: number } | { missing: number[] }>;
  /** The score, when it is in the project. */
  getScore(projectId: string, id: string): Promise<ScoreRecord | undefined>;
  /** A page of the project's scores that match the filter, newest first (time_us, then id, desc), after `after`. */
  listScores(
    projectId: string,
    filter: ScoreFilter,
    after: Position | undefined,
    limit: number,
  ): Promise<ScoreRecord[]>;
  /** Writes a score's changed fields (checked by the service); the score as stored, or undefined when it is not in the project. */
  updateScore(projectId: string, id: string, changes: ScoreChanges): Promise<ScoreRecord | undefined>;
  /** Removes the score; false when it is not in the project. */
  deleteScore(projectId: string, id: string): Promise<boolean>;
  /** Makes or replaces the project's config of `config.name` (an existing one keeps its created_at); answers it as stored. */
  putScoreConfig(projectId: string, config: ScoreConfigRecord): Promise<ScoreConfigRecord>;
  /** The project's score configs, by name. */
  listScoreConfigs(projectId: string): Promise<ScoreConfigRecord[]>;
  /**
   * Score analytics (openapi.yaml getScoreTimeseries; decision 037): the sums of the project's
   * scores named `name` (of `source` when given) of sessions, for each range [lo, hi) of their
   * time_us, in order; read from the score analytics projection, caught up first.
   */
  scoreSeries(projectId: string, query: ScoreAnalyticsQuery, ranges: Range[]): Promise<ScoreSums[]>;
  /** getScoreBreakdown: the same sums per group of `by` (key null: none), every group, in no order. */
  scoreBreakdown(
    projectId: string,
    query: ScoreAnalyticsQuery & { by: ScoreDimension; from_us: number; to_us: number },
  ): Promise<{ key: string | null; sums: ScoreSums }[]>;

  /**
   * `agentmon prices import` (docs/decisions/015-prices.md): keeps a checked price table's text as
   * the imported one; servers use it from their next start. The earlier ones are kept.
   */
  importPrices(text: string, source: string, now: string): Promise<void>;
  /** The price table imported last, if any. */
  importedPrices(): Promise<ImportedPrices | undefined>;
  /**
   * `agentmon prices check`: the models of llm events without a cost (cost_source `unknown`), in
   * every project, with how many such events and when; most events first.
   */
  unpricedModels(): Promise<UnpricedModel[]>;

  /**
   * `agentmon rebuild` (docs/decisions/033-projections.md): empties every projection and queues
   * every session to be projected again from its raw rows; `projectBatch` then works the queue
   * off one batch at a time. Reads stay exact meanwhile (they catch up first).
   */
  rebuildProjections(): Promise<void>;
  /** Projects one batch of what is queued; answers how many changes are left in the queue. */
  projectBatch(): Promise<number>;

  /**
   * Readiness (GET /readyz): proves the database answers, is at the schema version this code
   * needs (else `SchemaMismatch`), and takes a committed write. Resolves to the schema version.
   */
  ping(now: string): Promise<number>;

  /**
   * What GET /metrics reports of storage (services/metrics.ts), as it is now: the write queue, the
   * group commits since the store opened, and the database's size. Never queued behind writes and
   * never refused for a backlog, so that it answers while storage is struggling; it writes nothing.
   */
  stats(): Promise<StorageStats>;

  /** Commits or fails what is queued, then releases the database; later calls fail. */
  close(): Promise<void>;
}

/** Storage figures for GET /metrics (docs/decisions/012-metrics.md); counts are since the store opened. */
export interface StorageStats {
  /** Write calls waiting for their group transaction now, and the rows they carry. */
  queuedCalls: number;
  queuedRows: number;
  /** Group transactions committed, and those rolled back whole (a storage fault: every call of it failed). */
  committedGroups: number;
  failedGroups: number;
  /** Calls per committed group, rows per committed group, and seconds from BEGIN to the end of COMMIT. */
  groupCalls: HistogramSnapshot;
  groupRows: HistogramSnapshot;
  commitSeconds: HistogramSnapshot;
  /** Bytes of the database on disk: its main file and its write-ahead log (a database in memory: its pages, 0). */
  databaseBytes: number;
  walBytes: number;
  /**
   * A store whose database lives on a thread of its own: the calls sent to that thread and not
   * answered yet, the rows they carry, and the most rows it may have in flight before writes are
   * refused with 503 (O2).
   */
  thread?: { pendingCalls: number; backlogRows: number; maxBacklogRows: number };
  /**
   * The projector (decision 033): changes queued and not projected yet, the age of the oldest in
   * seconds, batches run since the store opened, and the longest batch in seconds.
   */
  projection?: { backlog: number; lagSeconds: number; batches: number; longestBatchSeconds: number };
}

/** Which scores score analytics read: one name, and one source when given. */
export interface ScoreAnalyticsQuery {
  name: string;
  source?: string | undefined;
}
