/**
 * otlp.md T18 (openapi.yaml, decision 037 "OTLP evaluation results"): the GenAI event
 * `gen_ai.evaluation.result`, as a log record (T3) or as a span event (older instrumentations),
 * read as a score of the span it is parented to. Pure: the service checks the value against the
 * project's score configs, the store keeps the scores.
 *
 * - name: `gen_ai.evaluation.name` (required);
 * - value: `gen_ai.evaluation.score.value` (a number: numeric), else `gen_ai.evaluation.score.label`
 *   (categorical); both given: the number, and the label kept in the metadata;
 * - comment: `gen_ai.evaluation.explanation`;
 * - response_id: `gen_ai.response.id` (a string), the model response judged;
 * - metadata: every other attribute under its own key (`error.type`, ...), and the record's body
 *   as `body`;
 * - target: the record's trace (its session, T12) and span (`event_id`, 16 hex digits); a record
 *   with a trace and no span judges the session, or the span of it that carries its response id;
 *   a record with neither judges the span of the project that carries its response id (the
 *   projector resolves it, in whichever order the two arrive: decision 038);
 * - id: a digest of the record (trace, span, name, time, attributes, body), so that a record sent
 *   again makes no second score (G8).
 */
import { createHash } from "node:crypto";
import type { Timestamp } from "../../domain/timestamps.ts";
import type { JsonObject } from "../../domain/types.ts";
import { traceIdToSessionId } from "./ids.ts";
import type { AnyValue, KeyValue } from "./types.ts";
import { nanosToTimestamp, plain, plainObject } from "./values.ts";

export const EVALUATION_EVENT = "gen_ai.evaluation.result";

const NAME = "gen_ai.evaluation.name";
const VALUE = "gen_ai.evaluation.score.value";
const LABEL = "gen_ai.evaluation.score.label";
const EXPLANATION = "gen_ai.evaluation.explanation";
const ERROR_TYPE = "error.type";
const RESPONSE_ID = "gen_ai.response.id";
/** The longest response id kept (openapi.yaml ScoreInput.response_id). */
export const RESPONSE_ID_MAX = 500;

const TRACE_ID = /^(?!0{32})[0-9a-f]{32}$/;
const SPAN_ID = /^(?!0{16})[0-9a-f]{16}$/;

/** An evaluation result read from the wire, before its value meets the project's configs. */
export interface Evaluation {
  id: string;
  /** The trace's session, or null: a result naming only a response (`response_id`). */
  session_id: string | null;
  event_id: string | null;
  response_id: string | null;
  name: string;
  /** The number, when one was given; else undefined. */
  number: number | undefined;
  /** The label, when one was given. */
  label: string | undefined;
  comment: string | null;
  metadata: JsonObject;
  at: Timestamp;
}

/**
 * What a record or span event says: an evaluation, a refusal (`problem`, said in the answer), or
 * `none`: a failed evaluation (`error.type`, and neither a value nor a label) that makes no score
 * and is kept with its span only, as any GenAI record is (T3).
 */
export type EvaluationReading = { evaluation: Evaluation } | { problem: string } | { none: true };

/** A UUID (version 8: custom) from a digest, so that the same record always has the same id. */
function digestId(parts: unknown[]): string {
  const hex = createHash("sha256").update(JSON.stringify(parts)).digest("hex");
  const variant = ((Number.parseInt(hex[16] as string, 16) & 0x3) | 0x8).toString(16);
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-8${hex.slice(13, 16)}-${variant}${hex.slice(17, 20)}-${hex.slice(20, 32)}`;
}

/**
 * One `gen_ai.evaluation.result`: `traceId`/`spanId` lowercase hex ("" when absent), the time in
 * nanoseconds (`now` when it has none), its attributes and, for a log record, its body.
 */
export function readEvaluation(source: {
  traceId: string;
  spanId: string;
  timeUnixNano: string | undefined;
  attributes: readonly KeyValue[];
  body?: AnyValue | undefined;
  now: Timestamp;
}): EvaluationReading {
  const attributes = plainObject(source.attributes);
  const {
    [NAME]: name,
    [VALUE]: value,
    [LABEL]: label,
    [EXPLANATION]: explanation,
    [RESPONSE_ID]: response,
    ...rest
  } = attributes;
  const responseId = typeof response === "string" && response.length > 0 ? response : null;
  if (responseId !== null && responseId.length > RESPONSE_ID_MAX) {
    return { problem: `its ${RESPONSE_ID} is longer than ${RESPONSE_ID_MAX} characters` };
  }
  // A response id that is not a string is kept in the metadata as sent, and resolves nothing.
  if (response !== undefined && responseId === null) rest[RESPONSE_ID] = response;
  const noTrace = source.traceId === "" || /^0+$/.test(source.traceId);
  if (noTrace && responseId === null) {
    return { problem: `it names neither a trace nor a ${RESPONSE_ID}` };
  }
  if (!noTrace && !TRACE_ID.test(source.traceId)) {
    return { problem: `its trace id ${JSON.stringify(source.traceId)} is not 32 hex digits` };
  }
  // A span id means nothing without its trace: such a record is resolved by its response id.
  const spanId = !noTrace && SPAN_ID.test(source.spanId) ? source.spanId : null;
  if (!noTrace && spanId === null && source.spanId !== "" && !/^0+$/.test(source.spanId)) {
    return { problem: `its span id ${JSON.stringify(source.spanId)} is not 16 hex digits` };
  }
  if (typeof name !== "string" || name.length === 0) return { problem: `it has no ${NAME}` };
  if (name.length > 200) return { problem: `its ${NAME} is longer than 200 characters` };
  const number = value === undefined || value === null ? undefined : value;
  if (number !== undefined && (typeof number !== "number" || !Number.isFinite(number))) {
    return { problem: `its ${VALUE} ${JSON.stringify(number)} is not a finite number` };
  }
  const text = label === undefined || label === null ? undefined : label;
  if (text !== undefined && (typeof text !== "string" || text.length === 0)) {
    return { problem: `its ${LABEL} is not a label (a non-empty string)` };
  }
  if (number === undefined && text === undefined) {
    if (rest[ERROR_TYPE] !== undefined) return { none: true };
    return { problem: `it has neither ${VALUE} (a number) nor ${LABEL}` };
  }
  const at = nanosToTimestamp(source.timeUnixNano) ?? source.now;
  const body = source.body === undefined ? undefined : plain(source.body);
  const metadata: JsonObject = { ...rest };
  if (number !== undefined && text !== undefined) metadata[LABEL] = text;
  if (body !== undefined && body !== null) metadata.body = body as JsonObject[string];
  return {
    evaluation: {
      id: digestId([source.traceId, spanId, name, source.timeUnixNano ?? null, attributes, body ?? null]),
      session_id: noTrace ? null : traceIdToSessionId(source.traceId),
      event_id: spanId,
      response_id: responseId,
      name,
      number,
      label: text,
      comment: typeof explanation === "string" && explanation.length > 0 ? explanation : null,
      metadata,
      at,
    },
  };
}
