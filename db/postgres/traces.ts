/**
 * OpenTelemetry traces as sessions (shared/spec/otlp.md T12-T17), and the logs that belong to them
 * (T3, T6), on PostgreSQL: the same steps as db/sqlite/traces.ts, in the caller's transaction (a
 * group commit's savepoint), so one OTLP request is stored whole or not at all (G7), whatever the
 * order and number of times its spans arrive (T17). The session's row is locked (FOR UPDATE)
 * before its fields change, so two nodes storing spans of one trace apply one after the other.
 */
import type pg from "pg";
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
import {
  agentResolver,
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
import { eventColumns, INSERT_QUEUED_EVENTS } from "./group-commit.ts";
import { CHANGE } from "./projector.ts";
import { insertScoresAt } from "./scores.ts";
import { searchWords } from "./search.ts";
import { queued } from "./sessions.ts";

type Tx = pg.ClientBase;

type SessionWrite = Omit<TraceWrite, "events" | "agents">;

/** T12-T17 for one request's traces, in the caller's transaction; one outcome per trace. */
export async function ingestTraces(tx: Tx, projectId: string, writes: TraceWrite[]): Promise<TraceOutcome[]> {
  const outcomes: TraceOutcome[] = [];
  for (const write of writes) {
    const session = await traceSession(tx, projectId, write);
    if (session === undefined) {
      outcomes.push("foreign");
      continue;
    }
    await insertSpans(tx, session.pk, write.events.map(eventRow));
    await registerAgents(tx, session.pk, write.agents);
    outcomes.push(session.created ? "created" : "stored");
  }
  return outcomes;
}

/** T3: keeps each GenAI log record with its span's event, now or when the span arrives. */
export async function attachRecords(tx: Tx, projectId: string, writes: SpanRecordWrite[]): Promise<TraceOutcome[]> {
  const outcomes: TraceOutcome[] = [];
  for (const write of writes) {
    const session = await traceSession(tx, projectId, { ...write, conversation_id: null, root: null });
    if (session === undefined) {
      outcomes.push("foreign");
      continue;
    }
    const { pk } = session;
    const { record } = write;
    const added = await tx.query(
      `INSERT INTO span_records (session_pk, span_id, digest, time_us, record) VALUES ($1, $2, $3, $4, $5)
       ON CONFLICT (session_pk, span_id, digest) DO NOTHING`,
      [pk, write.span_id, record.digest, record.time_us, json(record.event)],
    );
    if (added.rowCount === 1) {
      const { rows } = await tx.query<StoredEvent>(
        "SELECT * FROM events WHERE session_pk = $1 AND id = $2 FOR UPDATE",
        [pk, write.span_id],
      );
      const row = rows[0];
      if (row) {
        const event = withLogRecords(eventRecord(row), await spanRecords(tx, pk, write.span_id));
        const body = json(event.fields);
        await tx.query("UPDATE events SET body = $3, extra = $4, search_words = $5 WHERE session_pk = $1 AND id = $2", [
          pk,
          row.id,
          body,
          json(event.extra),
          searchWords(body),
        ]);
        await tx.query("INSERT INTO projection_queue (session_pk, kind) VALUES ($1, $2)", [pk, CHANGE.again]);
      }
    }
    outcomes.push(session.created ? "created" : "stored");
  }
  return outcomes;
}

/**
 * T18: each trace's scores, its session found or created (running, as for an early span); one
 * outcome per trace, "foreign" for another project's session (its scores not stored).
 */
export async function attachScores(tx: Tx, projectId: string, writes: TraceScoresWrite[]): Promise<TraceOutcome[]> {
  const outcomes: TraceOutcome[] = [];
  for (const write of writes) {
    const session = await traceSession(tx, projectId, { ...write, conversation_id: null, root: null });
    if (session === undefined) {
      outcomes.push("foreign");
      continue;
    }
    await insertScoresAt(tx, projectId, session.pk, write.scores);
    outcomes.push(session.created ? "created" : "stored");
  }
  return outcomes;
}

/** The GenAI log records kept for a span (T3). */
async function spanRecords(tx: Tx, pk: number, spanId: string): Promise<SpanLogRecord[]> {
  const { rows } = await tx.query<{ time_us: number; digest: string; record: string }>(
    "SELECT time_us, digest, record FROM span_records WHERE session_pk = $1 AND span_id = $2",
    [pk, spanId],
  );
  return rows.map((row) => ({
    time_us: row.time_us,
    digest: row.digest,
    event: parse<GenAiEvent>(row.record) as GenAiEvent,
  }));
}

/**
 * T6: appends text to the session's logs, creating the session (running, now) if it is new;
 * undefined when the session is another project's. Answers the logs' size in bytes.
 */
export async function appendLog(
  tx: Tx,
  projectId: string,
  sessionId: string,
  text: string,
  now: { iso: string; us: number },
): Promise<number | undefined> {
  const session = await traceSession(tx, projectId, {
    session_id: sessionId,
    init_timestamp: now.iso,
    init_us: now.us,
    conversation_id: null,
    root: null,
  });
  if (session === undefined) return undefined;
  // The session's row is locked (traceSession), so two appends number their parts one after the other.
  const { rows } = await tx.query<{ seq: number | null; size: number | null }>(
    "SELECT max(seq) AS seq, sum(octet_length(body))::float8 AS size FROM session_logs WHERE session_pk = $1",
    [session.pk],
  );
  const { seq, size } = rows[0] ?? { seq: null, size: null };
  await tx.query("INSERT INTO session_logs (session_pk, seq, received_at, body) VALUES ($1, $2, $3, $4)", [
    session.pk,
    (seq ?? 0) + 1,
    now.iso,
    text,
  ]);
  return (size ?? 0) + Buffer.byteLength(text);
}

/** The session's logs, oldest first. */
export async function sessionLogs(db: pg.Pool | Tx, pk: number): Promise<string> {
  const { rows } = await db.query<{ body: string }>(
    "SELECT body FROM session_logs WHERE session_pk = $1 ORDER BY seq",
    [pk],
  );
  return rows.map((row) => row.body).join("");
}

/**
 * Finds or creates the trace's session, locked for the rest of the transaction, and applies the
 * session fields; undefined: another project's. `created`: the session is new.
 */
async function traceSession(
  tx: Tx,
  projectId: string,
  write: SessionWrite,
): Promise<{ pk: number; created: boolean } | undefined> {
  const inserted = await tx.query<{ pk: number }>(
    queued(
      `INSERT INTO sessions (id, project_id, init_timestamp, init_us, extra, conversation_id)
       VALUES ($1, $2, $3, $4, '{}', $5) ON CONFLICT (id) DO NOTHING`,
      CHANGE.row,
    ),
    [write.session_id, projectId, write.init_timestamp, write.init_us, write.conversation_id],
  );
  const created = inserted.rowCount === 1;
  const { rows } = await tx.query<Pick<SessionRow, "pk" | "project_id" | "root_rank" | "extra">>(
    "SELECT pk, project_id, root_rank, extra FROM sessions WHERE id = $1 FOR UPDATE",
    [write.session_id],
  );
  const row = rows[0];
  if (row === undefined || row.project_id !== projectId) return undefined;
  if (!created) {
    await tx.query(
      queued("UPDATE sessions SET init_timestamp = $2, init_us = $3 WHERE pk = $1 AND init_us > $3", CHANGE.row),
      [row.pk, write.init_timestamp, write.init_us],
    );
    if (write.conversation_id !== null) {
      await tx.query("UPDATE sessions SET conversation_id = $2 WHERE pk = $1 AND conversation_id IS NULL", [
        row.pk,
        write.conversation_id,
      ]);
    }
  }
  const root = write.root;
  if (root && (row.root_rank === null || root.rank < row.root_rank)) {
    const { fields } = root;
    await tx.query(
      queued(
        `UPDATE sessions SET end_timestamp = $2, end_state = $3, end_state_reason = $4, tags = $5, host_env = $6,
           extra = $7, conversation_id = coalesce($8, conversation_id), root_rank = $9
         WHERE pk = $1`,
        CHANGE.row,
      ),
      [
        row.pk,
        fields.end_timestamp,
        fields.end_state,
        fields.end_state_reason,
        fields.tags,
        fields.host_env === null ? null : json(fields.host_env),
        json({ ...(parse<JsonObject>(row.extra) ?? {}), ...fields.extra }),
        fields.conversation_id,
        root.rank,
      ],
    );
  }
  return { pk: row.pk, created };
}

/**
 * Stores the events not stored yet, each with the agent of its nearest agent ancestor (T14):
 * looked for in this request first, then among the stored events (one query for all of them);
 * and gives that agent to the stored descendants of the new events, which arrived before them.
 */
async function insertSpans(tx: Tx, pk: number, given: EventRow[]) {
  if (given.length === 0) return;
  const inRequest = new Set(given.map((row) => row[ROW.id] as string));
  const outside = [
    ...new Set(
      given.flatMap((row) => {
        const parent = row[ROW.parent_id] as string | null;
        return parent !== null && !inRequest.has(parent) && row[ROW.agent_id] === null ? [parent] : [];
      }),
    ),
  ];
  const stored = new Map<string, string | null>();
  if (outside.length > 0) {
    const { rows } = await tx.query<{ id: string; agent_id: string | null }>(
      "SELECT id, agent_id FROM events WHERE session_pk = $1 AND id = ANY($2::text[])",
      [pk, outside],
    );
    for (const row of rows) stored.set(row.id, row.agent_id);
  }
  const agentOf = agentResolver(given, (parentId) => stored.get(parentId) ?? null);
  // T3: log records that came before their spans; the table is empty unless logs were sent.
  const records = (await tx.query("SELECT 1 FROM span_records WHERE session_pk = $1 LIMIT 1", [pk])).rowCount === 1;
  const rows: { pk: number; row: EventRow }[] = [];
  const agents = new Map<string, string | null>();
  for (const original of given) {
    const id = original[ROW.id] as string;
    const agent = agentOf(original);
    let row = records ? await withRecords(tx, pk, original) : original;
    if (agent !== row[ROW.agent_id]) {
      row = [...row] as EventRow;
      row[ROW.agent_id] = agent;
    }
    if (!agents.has(id)) agents.set(id, agent); // an id sent twice: the first copy is the one stored
    rows.push({ pk, row });
  }
  const { rows: inserted } = await tx.query<{ id: string }>(INSERT_QUEUED_EVENTS, eventColumns(rows));
  const heirs = inserted.flatMap(({ id }) => {
    const agent = agents.get(id) ?? null;
    return agent === null ? [] : [{ id, agent }];
  });
  if (heirs.length === 0) return;
  // The new spans that have stored children of another agent than theirs (rare: a child came first).
  const { rows: stale } = await tx.query<{ id: string; agent: string }>(
    `SELECT DISTINCT h.id, h.agent FROM unnest($2::text[], $3::text[]) AS h (id, agent)
     JOIN events e ON e.session_pk = $1 AND e.parent_id = h.id AND e.own_agent_id IS NULL
       AND e.agent_id IS DISTINCT FROM h.agent`,
    [pk, heirs.map((h) => h.id), heirs.map((h) => h.agent)],
  );
  // Stored events that get an agent: the session's score facts group by the events' agents.
  if (stale.length > 0)
    await tx.query("INSERT INTO projection_queue (session_pk, kind) VALUES ($1, $2)", [pk, CHANGE.row]);
  for (const { id, agent } of stale) {
    // Down to (not into) the next agent span. UNION, not UNION ALL: a parent cycle a client made up ends.
    await tx.query(
      `WITH RECURSIVE down(id) AS (
         SELECT id FROM events WHERE session_pk = $1 AND parent_id = $2 AND own_agent_id IS NULL
         UNION
         SELECT e.id FROM events e JOIN down d ON e.session_pk = $1 AND e.parent_id = d.id
         WHERE e.own_agent_id IS NULL
       )
       UPDATE events SET agent_id = $3 WHERE session_pk = $1 AND id IN (SELECT id FROM down)`,
      [pk, id, agent],
    );
  }
}

/** The row with the span's GenAI log records applied (T3), when there are any. */
async function withRecords(tx: Tx, pk: number, row: EventRow): Promise<EventRow> {
  return rowWithRecords(row, await spanRecords(tx, pk, row[ROW.id] as string));
}

/** Registers the agents not registered yet (a span sent again changes nothing: T17). */
async function registerAgents(tx: Tx, pk: number, agents: AgentRecord[]) {
  if (agents.length === 0) return;
  // A new agent is a group of the session's score facts: its session is queued (as upsertAgent's is).
  await tx.query(
    `WITH added AS (
       INSERT INTO agents (session_pk, id, name, extra)
       SELECT $1, * FROM unnest($2::text[], $3::text[], $4::text[]) ON CONFLICT (session_pk, id) DO NOTHING
       RETURNING session_pk
     )
     INSERT INTO projection_queue (session_pk, kind) SELECT DISTINCT session_pk, ${CHANGE.row} FROM added`,
    [pk, agents.map((a) => a.id), agents.map((a) => a.name), agents.map((a) => json(a.extra))],
  );
}
