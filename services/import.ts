/**
 * `agentmon import` (issue 16 part 3, docs/decisions/021-export.md): the NDJSON of GET /v2/export
 * read back into a project through the Store, session by session, with the write API's own
 * reading of sessions and events (domain/records.ts). Like every write it is idempotent: a session
 * already there is left as it is, events already stored under their id are not stored again, and
 * agents are upserted with the same name, so importing a file twice changes nothing.
 */
import type { Store } from "../db/store.ts";
import type { ErrorDetail } from "../domain/errors.ts";
import { newEvent, newSession, readEvent, readSession, requireKind } from "../domain/records.ts";
import { readValue, SCORE_DATA_TYPES, type ScoreRecord } from "../domain/scores.ts";
import { parseTimestamp, type Timestamp } from "../domain/timestamps.ts";
import type { AgentRecord, CostSource, EventRecord, JsonObject, Kind, NewSession } from "../domain/types.ts";

/** Events per insertEvents call, as create_events allows by default. */
const EVENTS_PER_CALL = 1000;

/**
 * Sessions written at once. Their lines are held meanwhile (a few MB for ordinary sessions); 64
 * chains fill the group commit's groups (GROUP_MAX_CALLS = 500) well enough: measured with
 * `npm run bench:export`, commits are no longer the cost of an import.
 */
const IN_FLIGHT = 64;

export interface ImportReport {
  /** Session lines read, and of them: new, already in this project, another project's (skipped). */
  sessions: number;
  created: number;
  existing: number;
  foreign: number;
  agents: number;
  events: number;
  scores: number;
  /** The trailer's counts, or null when the file has none (an export cut short). */
  trailer: { sessions: number; events: number } | null;
}

export class ImportError extends Error {}

const isObject = (value: unknown): value is JsonObject =>
  typeof value === "object" && value !== null && !Array.isArray(value);

function refuse(line: number, errors: ErrorDetail[]): never {
  const first = errors[0] as ErrorDetail;
  throw new ImportError(`line ${line}: ${first.path} ${first.message}`);
}

/** An event as the read API showed it, back as the record it was read from. */
function eventRecord(view: JsonObject, path: string, line: number, received: Timestamp): EventRecord {
  const errors: ErrorDetail[] = [];
  const input = readEvent(view, path, errors, "id");
  requireKind(input, path, errors);
  if (input.id === undefined) errors.push({ path: `${path}.id`, message: "is required in an export" });
  if (errors.length > 0) refuse(line, errors);
  const record = newEvent({ ...input, type: input.type as Kind }, input.id as string, received);
  // What the view adds of the server's own: the source of an llm event's cost, a span's parent.
  if (record.type === "llm" && typeof view.cost_source === "string") {
    record.cost_source = view.cost_source as CostSource;
    delete record.extra.cost_source;
  }
  if (typeof view.parent_id === "string") {
    record.parent_id = view.parent_id;
    delete record.extra.parent_id;
  }
  return record;
}

const SOURCES = new Set(["api", "annotation", "eval"]);
const text = (value: unknown) => (typeof value === "string" ? value : null);

/** A score as an export shows it (openapi.yaml Score), back as its record; the session is the line's. */
function scoreRecord(view: unknown, path: string, line: number, sessionId: string): ScoreRecord {
  const refuseAt = (field: string, message: string): never => refuse(line, [{ path: `${path}.${field}`, message }]);
  if (!isObject(view)) return refuseAt("", "is not an object");
  const id = text(view.id) ?? refuseAt("id", "is required");
  const name = text(view.name) ?? refuseAt("name", "is required");
  const dataType = SCORE_DATA_TYPES.find((t) => t === view.data_type) ?? refuseAt("data_type", "is not a data type");
  const value = readValue(view.value as ScoreRecord["value"], dataType);
  if ("problem" in value) return refuseAt("value", value.problem);
  const at = parseTimestamp(text(view.timestamp) ?? "") ?? refuseAt("timestamp", "must be a date-time");
  const author = isObject(view.author) ? view.author : {};
  return {
    id,
    name,
    ...value,
    session_id: sessionId,
    event_id: text(view.event_id),
    conversation_id: null,
    response_id: text(view.response_id),
    source: SOURCES.has(String(view.source)) ? (view.source as ScoreRecord["source"]) : "api",
    comment: text(view.comment),
    author: { type: author.type === "person" ? "person" : "api_key", id: text(author.id) ?? "" },
    metadata: isObject(view.metadata) ? view.metadata : {},
    timestamp: at.iso,
    time_us: at.us,
    created_at: text(view.created_at) ?? at.iso,
    updated_at: text(view.updated_at),
  };
}

/**
 * One session's writes, in order: the session (left as it is when it is there already; skipped
 * when another project owns its id), its agents, its events.
 */
async function importSession(
  store: Store,
  projectId: string,
  id: string,
  session: NewSession,
  agents: JsonObject[],
  events: EventRecord[],
  scores: ScoreRecord[],
  report: ImportReport,
) {
  const { created, projectId: owner } = await store.createSession(projectId, session);
  if (owner !== projectId) {
    report.foreign += 1; // another project's session with that id: left alone
    return;
  }
  if (created) report.created += 1;
  else report.existing += 1;
  for (const agent of agents) {
    const { id: agentId, name, ...extra } = agent;
    const record: AgentRecord = {
      id: String(agentId),
      name: typeof name === "string" ? name : null,
      extra,
    };
    await store.upsertAgent(projectId, id, record);
    report.agents += 1;
  }
  for (let i = 0; i < events.length; i += EVENTS_PER_CALL) {
    await store.insertEvents(projectId, id, events.slice(i, i + EVENTS_PER_CALL));
  }
  report.events += events.length;
  // Scores after the session is there (issue 25); a score already stored under its id stays (SC6).
  for (let i = 0; i < scores.length; i += EVENTS_PER_CALL) {
    await store.insertScores(projectId, scores.slice(i, i + EVENTS_PER_CALL));
  }
  report.scores += scores.length;
}

/**
 * Imports the lines (each one NDJSON line of an export) into the project; answers what it did.
 * Up to IN_FLIGHT sessions are written at once, each by its own chain of calls, so that the
 * store's group commit (docs/decisions/006-group-commit.md) puts many sessions' writes in one
 * transaction instead of committing each call alone; a failed call stops the reading, and the
 * import fails with it once the sessions under way are done.
 */
export async function importSessions(
  store: Store,
  projectId: string,
  lines: AsyncIterable<string>,
  received: Timestamp,
): Promise<ImportReport> {
  const report: ImportReport = {
    sessions: 0,
    created: 0,
    existing: 0,
    foreign: 0,
    agents: 0,
    events: 0,
    scores: 0,
    trailer: null,
  };
  // Sessions being written, each by its own chain of calls; a failure stops the reading.
  const inFlight = new Set<Promise<void>>();
  let failure: { error: unknown } | undefined;
  let number = 0;
  try {
    for await (const text of lines) {
      number += 1;
      if (text.trim() === "") continue;
      if (report.trailer !== null) throw new ImportError(`line ${number}: a line after the trailer`);
      let doc: unknown;
      try {
        doc = JSON.parse(text);
      } catch {
        throw new ImportError(`line ${number}: not a JSON line (an export cut short?)`);
      }
      if (isObject(doc) && isObject(doc.trailer)) {
        report.trailer = { sessions: Number(doc.trailer.sessions), events: Number(doc.trailer.events) };
        continue;
      }
      if (!isObject(doc) || !isObject(doc.session)) {
        throw new ImportError(`line ${number}: not a session of GET /v2/export?format=ndjson`);
      }
      const errors: ErrorDetail[] = [];
      const read = readSession(doc.session, "session", errors);
      if (read.id === undefined) errors.push({ path: "session.id", message: "is required" });
      if (errors.length > 0) refuse(number, errors);
      const id = read.id as string;
      const agents = Array.isArray(doc.agents) ? doc.agents.filter(isObject) : [];
      const views = Array.isArray(doc.events) ? doc.events : [];
      const events = views.map((view, i) => {
        if (!isObject(view)) throw new ImportError(`line ${number}: events[${i}] is not an object`);
        return eventRecord(view, `events[${i}]`, number, received);
      });
      const scoreViews = Array.isArray(doc.scores) ? doc.scores : [];
      const scores = scoreViews.map((view, i) => scoreRecord(view, `scores[${i}]`, number, id));

      report.sessions += 1;
      const task = importSession(
        store,
        projectId,
        id,
        newSession(id, read.changes, received),
        agents,
        events,
        scores,
        report,
      ).catch((error: unknown) => {
        failure ??= { error };
      });
      inFlight.add(task);
      void task.finally(() => inFlight.delete(task));
      if (inFlight.size >= IN_FLIGHT) await Promise.race(inFlight);
      if (failure !== undefined) break;
    }
  } finally {
    // A line that is not a session stops the reading too: what was under way is written first.
    await Promise.all(inFlight);
  }
  if (failure !== undefined) throw failure.error;
  return report;
}
