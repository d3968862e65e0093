/**
 * OpenTelemetry traces as sessions (shared/spec/otlp.md T12-T17), and the logs that belong to
 * them (T3, T6). Everything here runs inside the caller's transaction (a group commit's savepoint),
 * so one OTLP request is stored whole or not at all (G7). Spans may arrive in any order and more
 * than once: each step is written so that the result does not depend on it (T17).
 */
import { withLogRecords } from "../../domain/genai.ts";
import type { TraceScoresWrite } from "../../domain/scores.ts";
import type {
  AgentRecord,
  GenAiEvent,
  JsonObject,
  SpanLogRecord,
  SpanRecordWrite,
  TraceOutcome,
  TraceWrite,
} from "../../domain/types.ts";
import { responseIdOfExtra } from "../projections/responses.ts";
import {
  agentResolver,
  EVENT_COLUMNS,
  type EventRow,
  eventRecord,
  eventRow,
  json,
  parse,
  ROW,
  rowWithRecords,
  type SessionRow,
  type StoredEvent,
} from "../rows.ts";
import type { Db } from "./open.ts";
import { CHANGE, type SqliteProjector } from "./projector.ts";

/**
 * A TraceWrite whose events are rows already (rows.ts eventRow), as the storage thread takes it,
 * with each row's response id (../projections/responses.ts), read where the span is an object.
 */
export type TraceRows = Omit<TraceWrite, "events"> & { rows: EventRow[]; responses: (string | null)[] };

/** How many rows a request's traces write: what the group commit and the thread's backlog count. */
export const rowsOf = (writes: TraceRows[]) => writes.reduce((rows, write) => rows + Math.max(1, write.rows.length), 0);

/** The rows of a TraceWrite's events: JSON built by the caller, so the writer only writes. */
export const traceRows = ({ events, ...write }: TraceWrite): TraceRows => ({
  ...write,
  rows: events.map(eventRow),
  responses: events.map((event) => responseIdOfExtra(event.extra)),
});

const EVENT_INSERT_COLUMNS = EVENT_COLUMNS.join(", ");
const EVENT_ROW_LENGTH = EVENT_COLUMNS.length;

function prepare(db: Db) {
  return {
    session: db.prepare<[string], SessionRow>("SELECT * FROM sessions WHERE id = ?"),
    create: db.prepare(
      `INSERT INTO sessions (id, project_id, init_timestamp, init_us, extra, conversation_id)
       VALUES (@id, @project_id, @init_timestamp, @init_us, '{}', @conversation_id)`,
    ),
    earlier: db.prepare(
      "UPDATE sessions SET init_timestamp = @init_timestamp, init_us = @init_us WHERE pk = @pk AND init_us > @init_us",
    ),
    conversation: db.prepare(
      "UPDATE sessions SET conversation_id = @conversation_id WHERE pk = @pk AND conversation_id IS NULL",
    ),
    root: db.prepare(
      `UPDATE sessions SET end_timestamp = @end_timestamp, end_state = @end_state,
         end_state_reason = @end_state_reason, tags = @tags, host_env = @host_env, extra = @extra,
         conversation_id = coalesce(@conversation_id, conversation_id), root_rank = @rank
       WHERE pk = @pk`,
    ),
    insert: db.prepare(
      `INSERT INTO events (session_pk, ${EVENT_INSERT_COLUMNS})
       VALUES (?${", ?".repeat(EVENT_ROW_LENGTH)})
       ON CONFLICT (session_pk, id) DO NOTHING`,
    ),
    agentOf: db.prepare<[number, string], { agent_id: string | null }>(
      "SELECT agent_id FROM events WHERE session_pk = ? AND id = ?",
    ),
    staleChild: db.prepare<[number, string, string], { found: 1 }>(
      `SELECT 1 AS found FROM events
       WHERE session_pk = ? AND parent_id = ? AND own_agent_id IS NULL AND agent_id IS NOT ? LIMIT 1`,
    ),
    // The stored descendants of a span that has just arrived, down to (not into) the next agent
    // span: they get its agent. UNION, not UNION ALL: a parent cycle a client made up ends.
    inherit: db.prepare(
      `WITH RECURSIVE down(id) AS (
         SELECT id FROM events WHERE session_pk = @pk AND parent_id = @id AND own_agent_id IS NULL
         UNION
         SELECT e.id FROM events e JOIN down d ON e.session_pk = @pk AND e.parent_id = d.id
         WHERE e.own_agent_id IS NULL
       )
       UPDATE events SET agent_id = @agent WHERE session_pk = @pk AND id IN (SELECT id FROM down)`,
    ),
    agentGet: db.prepare<[number, string], { name: string | null }>(
      "SELECT name FROM agents WHERE session_pk = ? AND id = ?",
    ),
    agentInsert: db.prepare(
      `INSERT INTO agents (session_pk, id, name, extra) VALUES (?, ?, ?, ?)
       ON CONFLICT (session_pk, id) DO NOTHING`,
    ),
    hasRecords: db.prepare<[number], { found: 1 }>("SELECT 1 AS found FROM span_records WHERE session_pk = ? LIMIT 1"),
    records: db.prepare<[number, string], { time_us: number; digest: string; record: string }>(
      "SELECT time_us, digest, record FROM span_records WHERE session_pk = ? AND span_id = ?",
    ),
    recordInsert: db.prepare(
      `INSERT INTO span_records (session_pk, span_id, digest, time_us, record) VALUES (?, ?, ?, ?, ?)
       ON CONFLICT (session_pk, span_id, digest) DO NOTHING`,
    ),
    event: db.prepare<[number, string], StoredEvent>("SELECT * FROM events WHERE session_pk = ? AND id = ?"),
    eventMessages: db.prepare("UPDATE events SET body = @body, extra = @extra WHERE session_pk = @pk AND id = @id"),
    logSeq: db.prepare<[number], { seq: number | null; size: number | null }>(
      "SELECT max(seq) AS seq, sum(length(CAST(body AS BLOB))) AS size FROM session_logs WHERE session_pk = ?",
    ),
    logInsert: db.prepare("INSERT INTO session_logs (session_pk, seq, received_at, body) VALUES (?, ?, ?, ?)"),
    logs: db.prepare<[number], { body: string }>("SELECT body FROM session_logs WHERE session_pk = ? ORDER BY seq"),
  };
}

export class TraceTable {
  readonly #q: ReturnType<typeof prepare>;

  readonly #projector: SqliteProjector;

  constructor(db: Db, projector: SqliteProjector) {
    this.#q = prepare(db);
    this.#projector = projector;
  }

  /**
   * T12-T17 for one request's traces, in the caller's transaction; one outcome per trace. The
   * events come as rows (rows.ts eventRow), built by the caller, on its own thread if it has one.
   */
  ingest(projectId: string, writes: TraceRows[]): TraceOutcome[] {
    return writes.map((write) => {
      const session = this.#session(projectId, write);
      if (session === undefined) return "foreign";
      this.#events(session.pk, write.rows, write.responses);
      this.#agents(session.pk, write.agents);
      return session.created ? "created" : "stored";
    });
  }

  /** T3: keeps each GenAI log record with its span's event, now or when the span arrives. */
  attachRecords(projectId: string, writes: SpanRecordWrite[]): TraceOutcome[] {
    return writes.map((write) => {
      const session = this.#session(projectId, { ...write, conversation_id: null, root: null });
      if (session === undefined) return "foreign";
      const { pk } = session;
      const { record } = write;
      const added = this.#q.recordInsert.run(pk, write.span_id, record.digest, record.time_us, json(record.event));
      const row = added.changes === 1 ? this.#q.event.get(pk, write.span_id) : undefined;
      if (row) {
        const event = withLogRecords(eventRecord(row), this.#records(pk, write.span_id));
        this.#q.eventMessages.run({ pk, id: row.id, body: json(event.fields), extra: json(event.extra) });
        this.#projector.queue(pk, CHANGE.again);
      }
      return session.created ? "created" : "stored";
    });
  }

  /**
   * T18: finds or creates each trace's session (running, as for an early span) and hands its pk
   * to `insert` with the trace's scores; "foreign" for another project's session.
   */
  attachScores(
    projectId: string,
    writes: TraceScoresWrite[],
    insert: (pk: number, scores: TraceScoresWrite["scores"]) => void,
  ): TraceOutcome[] {
    return writes.map((write) => {
      const session = this.#session(projectId, { ...write, conversation_id: null, root: null });
      if (session === undefined) return "foreign";
      insert(session.pk, write.scores);
      return session.created ? "created" : "stored";
    });
  }

  /** The GenAI log records kept for a span (T3). */
  #records(pk: number, spanId: string): SpanLogRecord[] {
    return this.#q.records.all(pk, spanId).map((row) => ({
      time_us: row.time_us,
      digest: row.digest,
      event: parse<GenAiEvent>(row.record) as GenAiEvent,
    }));
  }

  /**
   * T6: appends text to the session's logs, creating the session (running, now) if it is new;
   * undefined when the session is another project's. Answers the logs' size in bytes.
   */
  appendLog(projectId: string, sessionId: string, text: string, now: { iso: string; us: number }) {
    const pk = this.#session(projectId, {
      session_id: sessionId,
      init_timestamp: now.iso,
      init_us: now.us,
      conversation_id: null,
      root: null,
    })?.pk;
    if (pk === undefined) return undefined;
    const { seq, size } = this.#q.logSeq.get(pk) ?? { seq: null, size: null };
    this.#q.logInsert.run(pk, (seq ?? 0) + 1, now.iso, text);
    return (size ?? 0) + Buffer.byteLength(text);
  }

  /** The session's logs, oldest first. */
  logs(pk: number): string {
    return this.#q.logs
      .all(pk)
      .map((row) => row.body)
      .join("");
  }

  /**
   * Finds or creates the trace's session and applies the session fields; undefined: another
   * project's. `created`: the session is new.
   */
  #session(
    projectId: string,
    write: Omit<TraceWrite, "events" | "agents">,
  ): { pk: number; created: boolean } | undefined {
    let row = this.#q.session.get(write.session_id);
    const created = row === undefined;
    if (row === undefined) {
      this.#q.create.run({
        id: write.session_id,
        project_id: projectId,
        init_timestamp: write.init_timestamp,
        init_us: write.init_us,
        conversation_id: write.conversation_id,
      });
      row = this.#q.session.get(write.session_id) as SessionRow;
      this.#projector.queue(row.pk, CHANGE.row);
    } else if (row.project_id !== projectId) {
      return undefined;
    } else {
      const moved = this.#q.earlier.run({ pk: row.pk, init_timestamp: write.init_timestamp, init_us: write.init_us });
      if (moved.changes > 0) this.#projector.queue(row.pk, CHANGE.row);
      if (write.conversation_id !== null) {
        this.#q.conversation.run({ pk: row.pk, conversation_id: write.conversation_id });
      }
    }
    const root = write.root;
    if (root && (row.root_rank === null || root.rank < row.root_rank)) {
      const { fields } = root;
      this.#q.root.run({
        pk: row.pk,
        rank: root.rank,
        end_timestamp: fields.end_timestamp,
        end_state: fields.end_state,
        end_state_reason: fields.end_state_reason,
        tags: fields.tags === null ? null : json(fields.tags),
        host_env: fields.host_env === null ? null : json(fields.host_env),
        extra: json({ ...(parse<JsonObject>(row.extra) ?? {}), ...fields.extra }),
        conversation_id: fields.conversation_id,
      });
      this.#projector.queue(row.pk, CHANGE.row);
    }
    return { pk: row.pk, created };
  }

  /**
   * Stores the events not stored yet, each with the agent of its nearest agent ancestor (T14):
   * looked for in this request first, then among the stored events; and gives that agent to the
   * stored descendants of the new events, which arrived before them.
   */
  #events(pk: number, rows: EventRow[], responses: (string | null)[]) {
    const agentOf = agentResolver(rows, (parentId) => this.#q.agentOf.get(pk, parentId)?.agent_id ?? null);
    const inserted: { id: string; agent: string | null }[] = [];
    const added: EventRow[] = [];
    const addedResponses: (string | null)[] = [];
    // T3: log records that came before their spans; the table is empty unless logs were sent.
    const records = this.#q.hasRecords.get(pk) !== undefined;
    let first = 0;
    let last = 0;
    for (const [index, given] of rows.entries()) {
      const id = given[ROW.id] as string;
      const agent = agentOf(given);
      let row = records ? this.#withRecords(pk, given) : given;
      if (agent !== row[ROW.agent_id]) {
        row = [...row] as EventRow;
        row[ROW.agent_id] = agent;
      }
      const { changes, lastInsertRowid } = this.#q.insert.run(pk, row);
      if (changes === 1) {
        inserted.push({ id, agent });
        added.push(row);
        addedResponses.push(responses[index] ?? null);
        last = Number(lastInsertRowid);
        if (first === 0) first = last;
      }
    }
    if (first !== 0) this.#projector.added(pk, first, last, added, undefined, addedResponses);
    // Stored events that get an agent: the session's score facts group by the events' agents.
    let inherited = 0;
    for (const { id, agent } of inserted) {
      if (agent !== null && this.#q.staleChild.get(pk, id, agent)) {
        inherited += this.#q.inherit.run({ pk, id, agent }).changes;
      }
    }
    if (inherited > 0) this.#projector.queue(pk, CHANGE.row);
  }

  /** The row with the span's GenAI log records applied (T3), when there are any. */
  #withRecords(pk: number, row: EventRow): EventRow {
    return rowWithRecords(row, this.#records(pk, row[ROW.id] as string));
  }

  /** Registers the agents not registered yet (a span sent again changes nothing: T17). */
  #agents(pk: number, agents: AgentRecord[]) {
    let registered = false;
    for (const agent of agents) {
      const stored = this.#q.agentGet.get(pk, agent.id);
      if (stored === undefined) {
        this.#q.agentInsert.run(pk, agent.id, agent.name, json(agent.extra));
        registered = true;
      }
    }
    // A new agent is a group of the session's score facts (as upsertAgent queues it).
    if (registered) this.#projector.queue(pk, CHANGE.row);
  }
}
