/**
 * otlp.md T3: which OTLP log records agentmon keeps, and how. A record is kept when it is a GenAI
 * event (`event_name`, or the attribute `event.name`, starting with `gen_ai.`) that names a trace
 * and a span; it then goes with that span's event (the store applies domain/genai.ts
 * withLogRecords). Every other record is accepted and not stored. Pure.
 */
import { createHash } from "node:crypto";
import { isGenAiEventName } from "../../domain/genai.ts";
import type { Timestamp } from "../../domain/timestamps.ts";
import type { GenAiEvent, JsonObject, SpanRecordWrite } from "../../domain/types.ts";
import { EVALUATION_EVENT, type EvaluationReading, readEvaluation } from "./evaluations.ts";
import { traceIdToSessionId } from "./ids.ts";
import type { InstrumentationScope, LogRecord, LogsRequest } from "./types.ts";
import { nanosToTimestamp, plain, plainObject } from "./values.ts";

const TRACE_ID = /^(?!0{32})[0-9a-f]{32}$/;
const SPAN_ID = /^(?!0{16})[0-9a-f]{16}$/;

function nameOf(record: LogRecord): string | undefined {
  if (isGenAiEventName(record.eventName)) return record.eventName;
  const attribute = record.attributes.find((kv) => kv.key === "event.name")?.value;
  const name = attribute && "stringValue" in attribute ? attribute.stringValue : undefined;
  return isGenAiEventName(name) ? name : undefined;
}

/** What else the record said, kept with it (G5): its times, severity, flags and scope. */
function recordFields(record: LogRecord, scope: InstrumentationScope): JsonObject {
  const out: JsonObject = { scope: { name: scope.name, ...(scope.version ? { version: scope.version } : {}) } };
  if (record.timeUnixNano !== undefined) out.timeUnixNano = record.timeUnixNano;
  if (record.observedTimeUnixNano !== undefined) out.observedTimeUnixNano = record.observedTimeUnixNano;
  if (record.severityNumber !== undefined) out.severityNumber = record.severityNumber;
  if (record.severityText !== undefined) out.severityText = record.severityText;
  if (record.flags !== undefined) out.flags = record.flags;
  return out;
}

/**
 * T18: the request's `gen_ai.evaluation.result` records, each read as an evaluation (or why it is
 * refused); `now` dates a record without a time.
 */
export function evaluationRecords(
  request: LogsRequest,
  now: Timestamp,
): { record: LogRecord; reading: EvaluationReading }[] {
  const out: { record: LogRecord; reading: EvaluationReading }[] = [];
  for (const resource of request.resourceLogs) {
    for (const scope of resource.scopeLogs) {
      for (const record of scope.logRecords) {
        if (nameOf(record) !== EVALUATION_EVENT) continue;
        const reading = readEvaluation({
          traceId: record.traceId.toLowerCase(),
          spanId: record.spanId.toLowerCase(),
          timeUnixNano: record.timeUnixNano ?? record.observedTimeUnixNano,
          attributes: record.attributes,
          body: record.body,
          now,
        });
        out.push({ record, reading });
      }
    }
  }
  return out;
}

/**
 * The records of the request that are kept (T3), each with its span; `now` dates a record without
 * a time. `refused`: records left out (an evaluation result refused, T18: nothing of it is kept).
 */
export function mapLogRecords(
  request: LogsRequest,
  now: { iso: string; us: number },
  refused: ReadonlySet<LogRecord> = new Set(),
): SpanRecordWrite[] {
  const writes: SpanRecordWrite[] = [];
  for (const resource of request.resourceLogs) {
    for (const scope of resource.scopeLogs) {
      for (const record of scope.logRecords) {
        const name = nameOf(record);
        const traceId = record.traceId.toLowerCase();
        const spanId = record.spanId.toLowerCase();
        if (name === undefined || !TRACE_ID.test(traceId) || !SPAN_ID.test(spanId) || refused.has(record)) continue;
        const at = nanosToTimestamp(record.timeUnixNano) ?? nanosToTimestamp(record.observedTimeUnixNano) ?? now;
        const event: GenAiEvent = {
          name,
          attributes: plainObject(record.attributes),
          ...(record.body === undefined ? {} : { body: plain(record.body) }),
          record: recordFields(record, scope.scope),
        };
        // The record's place in its request leads the digest: records of one instant (an
        // instrumentation stamps every message of a call alike) keep the order they were sent in.
        const hash = createHash("sha256")
          .update(JSON.stringify([traceId, spanId, event]))
          .digest("base64url");
        const digest = `${String(writes.length).padStart(8, "0")}.${hash}`;
        writes.push({
          session_id: traceIdToSessionId(traceId),
          span_id: spanId,
          init_timestamp: at.iso,
          init_us: at.us,
          record: { time_us: at.us, digest, event },
        });
      }
    }
  }
  return writes;
}
