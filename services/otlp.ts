/**
 * OpenTelemetry in (shared/spec/otlp.md): traces decoded, checked span by span, mapped to
 * sessions, events and agents, priced, and stored in one transaction per request (G7); the T5
 * token; the T6 logs upload.
 */
import { ApiError, conflict, sessionNotFound } from "../domain/errors.ts";
import { priceEvent } from "../domain/prices.ts";
import {
  breaksConfig,
  readValue,
  type ScoreConfigRecord,
  type ScoreRecord,
  type TraceScoresWrite,
} from "../domain/scores.ts";
import { type Timestamp, timestampFromMillis } from "../domain/timestamps.ts";
import type { OtlpClaims, SpanEventRecord, TraceOutcome } from "../domain/types.ts";
import { otlpBinary } from "../ingest/otlp/binary.ts";
import { OtlpDecodeError } from "../ingest/otlp/errors.ts";
import { EVALUATION_EVENT, type Evaluation, readEvaluation } from "../ingest/otlp/evaluations.ts";
import { readLogsJson, readTracesJson } from "../ingest/otlp/json.ts";
import { evaluationRecords, mapLogRecords } from "../ingest/otlp/logs.ts";
import { mapTraces, toOtlp, traceIdToSessionId } from "../ingest/otlp/map.ts";
import { nulInLogs, nulInTraces } from "../ingest/otlp/nul.ts";
import type { LogRecord, TraceRequest } from "../ingest/otlp/types.ts";
import { acceptSpans } from "../ingest/otlp/validate.ts";
import type { Context } from "./context.ts";

/** How many refusals an error_message names; the count says how many there were in all. */
const REASONS_SHOWN = 5;

/** T10: a body that cannot be read as its message is a 400, and nothing is stored. */
function decoded<T>(decode: () => T, message: string): T {
  try {
    return decode();
  } catch (error) {
    if (!(error instanceof OtlpDecodeError)) throw error;
    throw new ApiError(400, {
      error: "Bad request",
      message: `The request body is not a valid ${message}: ${error.message}`,
    });
  }
}

/**
 * Decision 017: a request that holds U+0000 anywhere is a 400 naming the first place (T10), and
 * nothing of it is stored, whichever media type it came in.
 */
function refuseNul(place: string | undefined) {
  if (place === undefined) return;
  throw new ApiError(400, {
    error: "Bad request",
    message: `The request has the character U+0000 (NUL) at ${place}; agentmon accepts no text that holds it, and stored nothing of this request`,
  });
}

/** The request's traces: protobuf bytes, or OTLP/JSON already parsed (http/body.ts). */
export async function readTraces(body: unknown): Promise<TraceRequest> {
  const binary = body instanceof Uint8Array ? await otlpBinary() : undefined;
  const request = decoded(
    () => (binary && body instanceof Uint8Array ? binary.decodeTraces(body) : readTracesJson(body)),
    "ExportTraceServiceRequest",
  );
  refuseNul(nulInTraces(request));
  return request;
}

/** Spans per trace id, counted in the request as it was accepted. */
function spansPerTrace(request: TraceRequest): Map<string, number> {
  const counts = new Map<string, number>();
  for (const resource of request.resourceSpans) {
    for (const scope of resource.scopeSpans) {
      for (const span of scope.spans) counts.set(span.traceId, (counts.get(span.traceId) ?? 0) + 1);
    }
  }
  return counts;
}

export interface ExportAnswer {
  partialSuccess?: { rejectedSpans: string; errorMessage: string };
}

/**
 * T8-T17: stores every acceptable span of the request; answers the partial success when some
 * were refused (T9: one by one, or the whole trace when it is another project's session).
 */
export async function exportTraces(context: Context, claims: OtlpClaims, body: unknown): Promise<ExportAnswer> {
  const checked = acceptSpans(await readTraces(body));
  const writes = mapTraces(checked.request);
  for (const write of writes) {
    write.events = write.events.map((event) => priceEvent(event, context.prices) as SpanEventRecord);
  }
  let rejected = checked.rejected;
  let stored = 0;
  const reasons = [...checked.reasons];
  // T18: the spans' `gen_ai.evaluation.result` events, read before anything is stored.
  const evaluations = await spanEvaluations(context, claims, checked.request);
  if (writes.length > 0) {
    const outcomes = await context.store.ingestTraces(claims.project_id, writes, claims.key_id);
    const foreign = new Set(
      writes.flatMap((write, index) => (outcomes[index] === "foreign" ? [write.session_id] : [])),
    );
    const scores = evaluations.writes.filter((write) => !foreign.has(write.session_id));
    if (scores.length > 0) await context.store.ingestEvaluations(claims.project_id, [], scores, claims.key_id);
    context.counts.ingested("sessions", outcomes.filter((outcome) => outcome === "created").length);
    const counts = spansPerTrace(checked.request);
    for (const spans of counts.values()) stored += spans;
    outcomes.forEach((outcome, index) => {
      if (outcome !== "foreign") return;
      const write = writes[index] as (typeof writes)[number];
      const traceId = write.session_id.replaceAll("-", "");
      const refused = counts.get(traceId) ?? 0;
      rejected += refused;
      stored -= refused;
      reasons.push(`trace ${traceId}: it is a session of another project (409)`);
    });
  }
  context.counts.ingested("spans", stored);
  if (rejected === 0 && evaluations.problems.length === 0) return {};
  if (rejected === 0) {
    // A bad evaluation event does not refuse its span (it is kept with it, G5); the answer warns (OTLP: rejected 0 and a message).
    const shown = evaluations.problems.slice(0, REASONS_SHOWN);
    const more =
      evaluations.problems.length > shown.length ? `; and ${evaluations.problems.length - shown.length} more` : "";
    return {
      partialSuccess: {
        rejectedSpans: "0",
        errorMessage: `every span was stored; ${evaluations.problems.length} ${EVALUATION_EVENT} span event${evaluations.problems.length === 1 ? " makes" : "s make"} no score: ${shown.join("; ")}${more}`,
      },
    };
  }
  context.counts.rejected("spans", rejected);
  const shown = reasons.slice(0, REASONS_SHOWN);
  const more = reasons.length > shown.length ? `; and ${reasons.length - shown.length} more` : "";
  return {
    partialSuccess: {
      rejectedSpans: String(rejected),
      errorMessage: `${rejected} span${rejected === 1 ? " was" : "s were"} refused: ${shown.join("; ")}${more}`,
    },
  };
}

/** T5: the token AgentOps SDK 0.4 asks for first. */
export const otlpToken = (context: Context, claims: OtlpClaims) => ({
  status: "success" as const,
  token: context.issueOtlpToken(claims),
  project_id: claims.project_id,
  project_prem_status: "pro" as const,
});

/** T15: the session's spans as OTLP/JSON, ready to be sent again (`export?format=otlp`). */
export async function exportOtlp(
  context: Context,
  projectId: string,
  sessionId: string,
): Promise<TraceRequest & Record<string, unknown>> {
  const found = await context.store.readSession(projectId, sessionId, { agents: false, events: true });
  if (!found) throw sessionNotFound(sessionId);
  // The answer is the OTLP/JSON request itself, an object of the spec's OtlpJsonRequest.
  return { ...toOtlp(found.events, sessionId, found.session.extra) };
}

/** T12: the session of a trace id (32 hex digits, any case). */
export const sessionOfTrace = (traceId: string) => traceIdToSessionId(traceId.toLowerCase());

/**
 * T3: OTLP logs. The records are decoded (a body that cannot be is a 400, T10); the GenAI events
 * of a span are kept with it (ingest/otlp/logs.ts), the others accepted and not stored. A record
 * whose trace is another project's session is refused alone.
 */
export async function exportLogs(context: Context, claims: OtlpClaims, body: unknown): Promise<LogsAnswer> {
  const binary = body instanceof Uint8Array ? await otlpBinary() : undefined;
  const request = decoded(
    () => (binary && body instanceof Uint8Array ? binary.decodeLogs(body) : readLogsJson(body)),
    "ExportLogsServiceRequest",
  );
  refuseNul(nulInLogs(request));
  const now = timestampFromMillis(context.now());
  // T18: evaluation results become scores; a bad one is refused alone, and nothing of it is kept.
  const found = evaluationRecords(request, now);
  const refused = new Set<LogRecord>();
  const reasons: string[] = [];
  const evaluations: { record: LogRecord; evaluation: Evaluation }[] = [];
  for (const { record, reading } of found) {
    if ("problem" in reading) {
      refused.add(record);
      reasons.push(reading.problem);
    } else if ("evaluation" in reading) evaluations.push({ record, evaluation: reading.evaluation });
  }
  const scored = await scoresOf(
    context,
    claims,
    evaluations.map((e) => e.evaluation),
  );
  evaluations.forEach(({ record }, index) => {
    const problem = scored.problems[index];
    if (problem === undefined) return;
    refused.add(record);
    reasons.push(problem);
  });
  const writes = mapLogRecords(request, now, refused);
  const scoreWrites = groupByTrace(scored.scores.filter((score) => score.session_id !== null));
  // Results naming only a response (no trace): scores of the project, resolved by the projector
  // to the span that carries the response id once both are stored (decision 038). Their ids are
  // digests of the records, so a retry after a failure below stores nothing twice.
  const loose = scored.scores.filter((score) => score.session_id === null);
  if (loose.length > 0) await context.store.insertScores(claims.project_id, loose, claims.key_id);
  let foreign = 0;
  if (writes.length > 0 || scoreWrites.length > 0) {
    const outcomes: { records: TraceOutcome[]; scores: TraceOutcome[] } =
      scoreWrites.length === 0
        ? { records: await context.store.attachSpanRecords(claims.project_id, writes, claims.key_id), scores: [] }
        : await context.store.ingestEvaluations(claims.project_id, writes, scoreWrites, claims.key_id);
    const created = new Set<string>();
    const others = new Set<string>();
    const tally = (sessionId: string, outcome: TraceOutcome | undefined) => {
      if (outcome === "created") created.add(sessionId);
      if (outcome === "foreign") others.add(sessionId);
    };
    for (const [index, write] of writes.entries()) tally(write.session_id, outcomes.records[index]);
    for (const [index, write] of scoreWrites.entries()) tally(write.session_id, outcomes.scores[index]);
    context.counts.ingested("sessions", created.size);
    // A record counts once: a result naming a span is also kept with it (a write); one naming
    // only its trace is a score alone.
    const sessionOnly = evaluations.filter(
      ({ record, evaluation }) => !refused.has(record) && evaluation.event_id === null,
    );
    foreign =
      writes.filter((write) => others.has(write.session_id)).length +
      sessionOnly.filter(({ evaluation }) => evaluation.session_id !== null && others.has(evaluation.session_id))
        .length;
    context.counts.ingested("log_records", writes.length + sessionOnly.length - foreign);
    if (foreign > 0) reasons.push("their trace is a session of another project (409)");
  } else if (loose.length > 0) context.counts.ingested("log_records", loose.length);
  const rejected = refused.size + foreign;
  if (rejected === 0) return {};
  context.counts.rejected("log_records", rejected);
  const shown = reasons.slice(0, REASONS_SHOWN);
  const more = reasons.length > shown.length ? `; and ${reasons.length - shown.length} more` : "";
  return {
    partialSuccess: {
      rejectedLogRecords: String(rejected),
      errorMessage: `${rejected} log record${rejected === 1 ? " was" : "s were"} refused: ${shown.join("; ")}${more}`,
    },
  };
}

export interface LogsAnswer {
  partialSuccess?: { rejectedLogRecords: string; errorMessage: string };
}

/** T6: the Trace-Id header (a decimal integer, as AgentOps sends it, or 32 hex digits) as a session id. */
export function traceIdFromHeader(header: string): string | undefined {
  const text = header.trim();
  const hex = /^[0-9a-fA-F]{32}$/.test(text)
    ? text.toLowerCase()
    : /^[0-9]{1,39}$/.test(text) && BigInt(text) < 2n ** 128n
      ? BigInt(text).toString(16).padStart(32, "0")
      : undefined;
  return hex === undefined || /^0+$/.test(hex) ? undefined : traceIdToSessionId(hex);
}

/** T6: appends the text to the trace's session logs (creating the session); answers where to read them. */
export async function uploadLogs(context: Context, claims: OtlpClaims, traceHeader: string, text: string) {
  const sessionId = traceIdFromHeader(traceHeader);
  if (sessionId === undefined) {
    throw new ApiError(400, {
      error: "Invalid request",
      message: "The Trace-Id header must be a trace id: a decimal integer below 2^128 or 32 hex digits, not zero",
      details: [{ path: "header.trace-id", message: "is not a trace id" }],
    });
  }
  const now = timestampFromMillis(context.now()).iso;
  const size = await context.store.appendSessionLog(claims.project_id, sessionId, text, now, claims.key_id);
  if (size === undefined) throw conflict(sessionId);
  return {
    status: "success" as const,
    url: `${context.publicUrl()}/v2/sessions/${sessionId}/logs`,
    size,
  };
}

/** T6: the session's uploaded logs. */
export async function sessionLogs(context: Context, projectId: string, sessionId: string): Promise<string> {
  const text = await context.store.readSessionLog(projectId, sessionId);
  if (text === undefined) throw sessionNotFound(sessionId);
  return text;
}

/**
 * T18: the evaluation results as scores of the project (source `eval`, author the key), each read
 * against its name's score config (SC4, SC5); `problems[i]` says why the i-th makes no score.
 */
async function scoresOf(
  context: Context,
  claims: OtlpClaims,
  evaluations: Evaluation[],
): Promise<{ scores: ScoreRecord[]; problems: (string | undefined)[] }> {
  if (evaluations.length === 0) return { scores: [], problems: [] };
  const configs = new Map<string, ScoreConfigRecord>(
    (await context.store.listScoreConfigs(claims.project_id)).map((config) => [config.name, config]),
  );
  const received = timestampFromMillis(context.now()).iso;
  const scores: ScoreRecord[] = [];
  const problems = evaluations.map((evaluation) => {
    const config = configs.get(evaluation.name);
    const metadata = { ...evaluation.metadata };
    // The label is the value when the config says categorical, or when no number was given.
    const asLabel =
      evaluation.label !== undefined && (evaluation.number === undefined || config?.data_type === "categorical");
    if (asLabel && evaluation.number !== undefined) {
      metadata["gen_ai.evaluation.score.value"] = evaluation.number;
      delete metadata["gen_ai.evaluation.score.label"];
    }
    const given = asLabel ? (evaluation.label as string) : (evaluation.number as number);
    const read = readValue(given, config?.data_type ?? (asLabel ? "categorical" : "numeric"));
    if ("problem" in read) return `${evaluation.name}: the value ${JSON.stringify(given)} ${read.problem}`;
    const broken = config ? breaksConfig(read, config, "") : [];
    if (broken.length > 0) return `${evaluation.name}: ${broken.map((d) => `${d.path} ${d.message}`).join("; ")}`;
    scores.push({
      id: evaluation.id,
      name: evaluation.name,
      ...read,
      session_id: evaluation.session_id,
      event_id: evaluation.event_id,
      conversation_id: null,
      response_id: evaluation.response_id,
      source: "eval",
      comment: evaluation.comment,
      author: { type: "api_key", id: claims.key_id },
      metadata,
      timestamp: evaluation.at.iso,
      time_us: evaluation.at.us,
      created_at: received,
      updated_at: null,
    });
    return undefined;
  });
  return { scores, problems };
}

/** The scores by their trace's session, each session starting at its earliest result (T12, T17). */
function groupByTrace(scores: ScoreRecord[]): TraceScoresWrite[] {
  const bySession = new Map<string, TraceScoresWrite>();
  for (const score of scores) {
    const sessionId = score.session_id as string;
    const write = bySession.get(sessionId);
    if (write === undefined) {
      bySession.set(sessionId, {
        session_id: sessionId,
        init_timestamp: score.timestamp,
        init_us: score.time_us,
        scores: [score],
      });
      continue;
    }
    write.scores.push(score);
    if (score.time_us < write.init_us) {
      write.init_us = score.time_us;
      write.init_timestamp = score.timestamp;
    }
  }
  return [...bySession.values()];
}

/** T18: the `gen_ai.evaluation.result` events of the accepted spans, as scores, and why the others make none. */
async function spanEvaluations(
  context: Context,
  claims: OtlpClaims,
  request: TraceRequest,
): Promise<{ writes: TraceScoresWrite[]; problems: string[] }> {
  const now: Timestamp = timestampFromMillis(context.now());
  const evaluations: Evaluation[] = [];
  const problems: string[] = [];
  for (const resource of request.resourceSpans) {
    for (const scope of resource.scopeSpans) {
      for (const span of scope.spans) {
        for (const event of span.events) {
          if (event.name !== EVALUATION_EVENT) continue;
          const reading = readEvaluation({
            traceId: span.traceId.toLowerCase(),
            spanId: span.spanId.toLowerCase(),
            timeUnixNano: event.timeUnixNano,
            attributes: event.attributes,
            now,
          });
          if ("problem" in reading) problems.push(`span ${span.spanId}: ${reading.problem}`);
          else if ("evaluation" in reading) evaluations.push(reading.evaluation);
        }
      }
    }
  }
  const scored = await scoresOf(context, claims, evaluations);
  scored.problems.forEach((problem, index) => {
    if (problem !== undefined) problems.push(`span ${evaluations[index]?.event_id}: ${problem}`);
  });
  return { writes: groupByTrace(scored.scores), problems };
}
