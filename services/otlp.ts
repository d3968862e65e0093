/**
 * OpenTelemetry in (shared/spec/otlp.md): traces decoded, checked span by span, mapped to
 * sessions, events and agents, priced, and stored in one transaction per request (G7); the T5
 * token; the T6 logs upload.
 */
import { ApiError, conflict, sessionNotFound } from "../domain/errors.ts";
import { priceEvent } from "../domain/prices.ts";
import { timestampFromMillis } from "../domain/timestamps.ts";
import type { OtlpClaims, SpanEventRecord } from "../domain/types.ts";
import { otlpBinary } from "../ingest/otlp/binary.ts";
import { OtlpDecodeError } from "../ingest/otlp/errors.ts";
import { readLogsJson, readTracesJson } from "../ingest/otlp/json.ts";
import { mapLogRecords } from "../ingest/otlp/logs.ts";
import { mapTraces, toOtlp, traceIdToSessionId } from "../ingest/otlp/map.ts";
import { nulInLogs, nulInTraces } from "../ingest/otlp/nul.ts";
import type { TraceRequest } from "../ingest/otlp/types.ts";
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
  if (writes.length > 0) {
    const outcomes = await context.store.ingestTraces(claims.project_id, writes, claims.key_id);
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
  if (rejected === 0) return {};
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
  const writes = mapLogRecords(request, timestampFromMillis(context.now()));
  if (writes.length === 0) return {};
  const outcomes = await context.store.attachSpanRecords(claims.project_id, writes, claims.key_id);
  const refused = outcomes.filter((outcome) => outcome === "foreign").length;
  context.counts.ingested("sessions", outcomes.filter((outcome) => outcome === "created").length);
  context.counts.ingested("log_records", writes.length - refused);
  if (refused === 0) return {};
  context.counts.rejected("log_records", refused);
  return {
    partialSuccess: {
      rejectedLogRecords: String(refused),
      errorMessage: `${refused} log record${refused === 1 ? " was" : "s were"} refused: their trace is a session of another project (409)`,
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
