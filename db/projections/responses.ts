/**
 * Which spans carry which model response (issue 25, docs/decisions/038-response-ids.md): the
 * projection `response_spans`, one row per event whose OTLP span attributes hold
 * `gen_ai.response.id`, so that a score naming only a response id (an evaluation result sent
 * without its trace, or POST /v2/scores with `response_id`) finds the span it judges. Pure: each
 * engine's projector loads the `extra` of a changed session's events that mention the attribute
 * (all of them when the session is counted again, the added ones otherwise) and hands them over
 * in the session's Change; this module reads the id and decides the rows.
 */
import type { Change, Projection, SessionTable, Write } from "./types.ts";

const ATTRIBUTE = "gen_ai.response.id";
/** The attribute, as it appears in an event's stored `extra` (the engines' pre-filter). */
export const RESPONSE_KEY = JSON.stringify(ATTRIBUTE);
/** The longest response id indexed (openapi.yaml ScoreInput.response_id). */
const MAX = 500;

export const RESPONSE_SPANS: SessionTable = {
  name: "response_spans",
  columns: ["session_pk", "event_id", "project_id", "response_id", "response_key"],
};

/**
 * The lookup key of a project's response id: a 52-bit FNV-1a hash (two 32-bit halves of other
 * offsets), an integer on both engines. A small random key keeps the index's writes few; two
 * responses of one key are told apart by the row's project and response id, which every lookup
 * checks.
 */
export function responseKey(projectId: string, responseId: string): number {
  const text = `${projectId}\u0000${responseId}`;
  let a = 0x811c9dc5;
  let b = 0x050c5d1f;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    a = Math.imul(a ^ c, 0x01000193);
    b = Math.imul(b ^ c, 0x01000193) ^ (b >>> 13);
  }
  return (b >>> 12) * 0x100000000 + (a >>> 0);
}

/**
 * The response id of an event's `extra`: the string `gen_ai.response.id` among the span's own
 * attributes (`extra.otel.attributes`, T15 keeps them as OTLP sent them); not one of its span
 * events' or log records' (an evaluation result names the response it judges there). The
 * writer of spans reads it from the object it has (no JSON made again); the projector from the
 * stored text (`responseIdOf`) when the rows were not handed to it.
 */
export function responseIdOfExtra(extra: unknown): string | null {
  const otel = (extra as { otel?: { attributes?: unknown } } | null)?.otel;
  const attributes = otel?.attributes;
  if (!Array.isArray(attributes)) return null;
  for (const attribute of attributes as { key?: unknown; value?: { stringValue?: unknown } | null }[]) {
    if (attribute?.key !== ATTRIBUTE) continue;
    const id = attribute.value?.stringValue;
    return typeof id === "string" && id.length > 0 && id.length <= MAX ? id : null;
  }
  return null;
}

/** responseIdOfExtra of an event's stored `extra` (JSON text), parsed only when it mentions the attribute. */
export const responseIdOf = (extra: string): string | null =>
  extra.includes(RESPONSE_KEY) ? responseIdOfExtra(JSON.parse(extra)) : null;

export type { ResponseEvent } from "./types.ts";

export const responseSpans: Projection = {
  name: "response-spans",
  version: 1,
  tables: ["response_spans"],
  apply(changes: readonly Change[]): Write[] {
    const replaced: number[] = [];
    const whole: unknown[][] = [];
    const added: unknown[][] = [];
    for (const { pk, before, after, responses } of changes) {
      if (after === undefined) {
        if (before !== undefined) replaced.push(pk);
        continue;
      }
      if (responses === undefined) continue;
      if (responses.whole) replaced.push(pk);
      const into = responses.whole ? whole : added;
      for (const event of responses.events) {
        const id = "response" in event ? event.response : responseIdOf(event.extra);
        const project = after.session.project;
        if (id !== null) into.push([pk, event.id, project, id, responseKey(project, id)]);
      }
    }
    const writes: Write[] = [];
    if (replaced.length > 0) writes.push({ kind: "replace", table: RESPONSE_SPANS, pks: replaced, rows: whole });
    if (added.length > 0) writes.push({ kind: "insert", table: RESPONSE_SPANS, rows: added });
    return writes;
  },
};

/**
 * The (project, response id) pairs a batch's writes indexed: the pending scores that name one of
 * them are resolved after the writes (the engines' `resolve`).
 */
export function indexedResponses(writes: readonly Write[]): [string, string][] {
  const project = RESPONSE_SPANS.columns.indexOf("project_id");
  const response = RESPONSE_SPANS.columns.indexOf("response_id");
  const pairs = new Map<string, [string, string]>();
  for (const write of writes) {
    if (write.kind === "session" || write.table !== RESPONSE_SPANS) continue;
    for (const row of write.rows) {
      const pair: [string, string] = [row[project] as string, row[response] as string];
      pairs.set(JSON.stringify(pair), pair);
    }
  }
  return [...pairs.values()];
}

/** A score waiting for its response's span (decision 038), in SQL, its table's alias `as` ("s."). */
export const pending = (as = "") =>
  `${as}response_id IS NOT NULL AND ${as}event_id IS NULL AND ${as}conversation_id IS NULL`;
