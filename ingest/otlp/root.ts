/**
 * A root span's claim on its session (otlp.md T13): its rank among roots, and the session fields
 * it gives.
 */
import { jsonTextHasNul } from "../../domain/nul.ts";
import { canonicalEndState } from "../../domain/records.ts";
import type { EndState, JsonObject, RootCandidate } from "../../domain/types.ts";
import { RULES } from "./conventions/index.ts";
import { firstOf, type MappedSpan } from "./span.ts";
import { type Attrs, asString, padNanos } from "./values.ts";

/** S5's names and aliases, plus the OpenTelemetry status names AgentOps writes. */
const STATUS_END_STATES: Record<string, EndState> = {
  SUCCESS: "Success",
  OK: "Success",
  "STATUSCODE.OK": "Success",
  ERROR: "Fail",
  "STATUSCODE.ERROR": "Fail",
};

/** T13: S5's normalisation, then the status names; anything else is Indeterminate. */
export function normaliseEndState(value: unknown): EndState {
  const text = asString(value) ?? "";
  const upper = text.toUpperCase();
  return (
    canonicalEndState(text) ??
    (Object.hasOwn(STATUS_END_STATES, upper) ? STATUS_END_STATES[upper] : undefined) ??
    "Indeterminate"
  );
}

/**
 * Tags: an array, or a string holding a JSON array; another string is one tag, and so is a JSON
 * text that would give U+0000 (decision 017: no tag may hold it).
 */
export function tagsOf(value: unknown): string[] | null {
  let list = value;
  if (typeof value === "string") {
    try {
      list = jsonTextHasNul(value) ? value : JSON.parse(value);
    } catch {
      list = value;
    }
    if (!Array.isArray(list)) return value === "" ? null : [value];
  }
  if (!Array.isArray(list)) return null;
  return list.filter((tag) => tag !== null && tag !== undefined).map((tag) => asString(tag) ?? JSON.stringify(tag));
}

const RESOURCE_HOST = ["host.", "os.", "process.runtime."];
const ROOT_HOST = ["host.", "cpu.", "memory."];

function collect(out: JsonObject, attrs: Attrs, prefixes: readonly string[]) {
  for (const [key, value] of attrs) {
    if (prefixes.some((prefix) => key.startsWith(prefix))) {
      Object.defineProperty(out, key, { value, enumerable: true, writable: true, configurable: true });
    }
  }
}

/** host_env: the resource's host.*, os.*, process.runtime.*, then the root's host.*, cpu.*, memory.* (the root's win). */
export function hostEnvOf(resource: Attrs, root: Attrs): JsonObject | null {
  const env: JsonObject = {};
  collect(env, resource, RESOURCE_HOST);
  collect(env, root, ROOT_HOST);
  return Object.keys(env).length === 0 ? null : env;
}

/** Sorts as T13 ranks roots: a session-marked root first, then the earliest start, then the smallest span id. */
export const rankOf = (root: MappedSpan): string =>
  `${root.sessionRoot ? 0 : 1}:${padNanos(root.span.startTimeUnixNano)}:${root.span.spanId}`;

export const conversationOf = (attrs: Attrs): string | null => asString(firstOf(attrs, RULES.fields.conversation_id));

/**
 * The root's fields. Its `extra`, kept under the session's extra (G5), replacing an earlier root's:
 * - `root_span_id`: the root span's id;
 * - `root_name`: the root span's name;
 * - `service_name`: the resource's `service.name`, or null;
 * - `resource`: the resource's attributes as a plain object (key → plain value);
 * - `otel_root`: for a root marked as the session (which is no event), its `extra.otel` (span.ts
 *   otelOf), so that export.ts can give it back; null when the root is an event of its own.
 */
export function rootCandidate(root: MappedSpan): RootCandidate {
  const { attrs, span } = root;
  const stated = firstOf(attrs, RULES.fields.end_state);
  const end_state = stated !== undefined ? normaliseEndState(stated) : span.status?.code === 2 ? "Fail" : "Success";
  const reason = asString(firstOf(attrs, RULES.fields.end_state_reason)) ?? (span.status?.message || null);
  const resource: JsonObject = {};
  collect(resource, root.context.resourceAttrs, [""]);
  return {
    rank: rankOf(root),
    fields: {
      end_timestamp: root.end?.iso ?? null,
      end_state,
      end_state_reason: reason,
      tags: tagsOf(firstOf(attrs, RULES.fields.tags)),
      host_env: hostEnvOf(root.context.resourceAttrs, attrs),
      conversation_id: conversationOf(attrs),
      extra: {
        root_span_id: span.spanId,
        root_name: span.name,
        service_name: asString(root.context.resourceAttrs.get("service.name")),
        resource,
        otel_root: root.sessionRoot ? root.otel : null,
      },
    },
  };
}
