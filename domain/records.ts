/**
 * From request bodies (already checked against openapi.yaml by ajv) to records, and the changes an
 * update makes to a stored record. This is where the contract's aliases, canonical values and
 * unknown-field rules (G5, G6, S1, S5, E2-E4, E6) live, so that every adapter stores the same
 * thing. The way back, from records to replies, is domain/views.ts.
 */
import type { ErrorDetail } from "./errors.ts";
import { parseTimestamp, type Timestamp } from "./timestamps.ts";
import type { EndState, EventInput, EventRecord, JsonObject, Kind, NewSession, SessionChanges } from "./types.ts";

type Raw = JsonObject;

const given = (value: unknown) => value !== undefined && value !== null;
const sameJson = (a: unknown, b: unknown) => JSON.stringify(a) === JSON.stringify(b);

function timestamp(value: unknown): Timestamp | undefined {
  // ajv has checked the format already; parse again for the UTC form.
  return typeof value === "string" ? parseTimestamp(value) : undefined;
}

// ---------------------------------------------------------------- sessions

const END_STATES: Record<string, EndState> = {
  success: "Success",
  completed: "Success",
  complete: "Success",
  succeeded: "Success",
  ok: "Success",
  fail: "Fail",
  failed: "Fail",
  failure: "Fail",
  error: "Fail",
  errored: "Fail",
  indeterminate: "Indeterminate",
  unknown: "Indeterminate",
  "": "Indeterminate",
};

export const END_STATE_RULE =
  'must be one of Success, Fail, Indeterminate (any case), or an alias: completed, complete, succeeded, ok, failed, failure, error, errored, unknown, ""';

/** Own keys only: `constructor` or `__proto__` must not find Object.prototype's members. */
export const canonicalEndState = (value: string): EndState | undefined =>
  Object.hasOwn(END_STATES, value.toLowerCase()) ? END_STATES[value.toLowerCase()] : undefined;

const SESSION_FIELDS = new Set([
  "id",
  "session_id",
  "init_timestamp",
  "end_timestamp",
  "end_state",
  "end_state_reason",
  "tags",
  "host_env",
  "jwt",
]);

export interface SessionInput {
  id: string | undefined;
  changes: SessionChanges;
}

/** Reads the session fields of a create or update body; `path` is where they sit in the body. */
export function readSession(raw: Raw, path: string, errors: ErrorDetail[]): SessionInput {
  const at = (field: string) => (path === "" ? field : `${path}.${field}`);
  const id = given(raw.id) ? String(raw.id) : given(raw.session_id) ? String(raw.session_id) : undefined;
  if (given(raw.id) && given(raw.session_id) && raw.id !== raw.session_id) {
    errors.push({ path: at("session_id"), message: `must equal id ("${raw.id}") when both are given` });
  }
  const changes: SessionChanges = { extra: {} };
  const init = timestamp(raw.init_timestamp);
  if (init) {
    changes.init_timestamp = init.iso;
    changes.init_us = init.us;
  }
  const end = timestamp(raw.end_timestamp);
  if (end) changes.end_timestamp = end.iso;
  if (typeof raw.end_state === "string") {
    const state = canonicalEndState(raw.end_state);
    if (state) changes.end_state = state;
    else errors.push({ path: at("end_state"), message: END_STATE_RULE });
  }
  if (typeof raw.end_state_reason === "string") changes.end_state_reason = raw.end_state_reason;
  if (Array.isArray(raw.tags)) changes.tags = raw.tags as string[];
  if (given(raw.host_env)) changes.host_env = raw.host_env as JsonObject;
  changes.extra = unknownFields(raw, SESSION_FIELDS);
  return { id, changes };
}

export function newSession(id: string, changes: SessionChanges, received: Timestamp): NewSession {
  return {
    id,
    init_timestamp: changes.init_timestamp ?? received.iso,
    init_us: changes.init_us ?? received.us,
    end_timestamp: changes.end_timestamp ?? null,
    end_state: changes.end_state ?? null,
    end_state_reason: changes.end_state_reason ?? null,
    tags: changes.tags ?? null,
    host_env: changes.host_env ?? null,
    extra: changes.extra,
  };
}

// ---------------------------------------------------------------- events

export const KINDS: Record<Kind, string> = { llm: "llms", tool: "tools", action: "actions", error: "errors" };
const KIND_OF_EVENT_TYPE = new Map(Object.entries(KINDS).map(([kind, plural]) => [plural, kind as Kind]));
const KIND_RULE = "give type (llm, tool, action, error) or event_type (llms, tools, actions, errors)";

/** Named fields kept in the record's `fields` bag, whatever the kind. */
const BAG_FIELDS = [
  "thread_id",
  "prompt",
  "completion",
  "params",
  "returns",
  "name",
  "input",
  "output",
  "logs",
  "action_type",
  "screenshot",
  "error_type",
  "code",
  "details",
  "trigger_event_id",
  "trigger_event_type",
] as const;

/** Named fields stored in columns of their own (see db/sqlite/migrations). */
const COLUMN_FIELDS = [
  "end_timestamp",
  "agent_id",
  "model",
  "prompt_tokens",
  "completion_tokens",
  "cost",
  "cache_read_tokens",
  "cache_creation_tokens",
  "reasoning_tokens",
] as const;

/** Named fields copied as given into EventInput.fields (aliases are resolved later, by kind). */
const VALUE_FIELDS: readonly string[] = [...BAG_FIELDS, ...COLUMN_FIELDS, "tool_name"];

const EVENT_FIELDS = new Set<string>([
  ...VALUE_FIELDS,
  "id",
  "type",
  "event_type",
  "init_timestamp",
  "timestamp",
  "session_id",
]);

const EVENT_UPDATE_FIELDS = new Set([...EVENT_FIELDS, "event_id"]);

/** On tool events the AgentOps SDK's names stand for the canonical ones (E4). */
const TOOL_ALIASES = { tool_name: "name", params: "input", returns: "output" } as const;

/** One event of a create_events or update_events body, before it meets a stored event. */

export function readEvent(raw: Raw, path: string, errors: ErrorDetail[], idKey: "id" | "event_id"): EventInput {
  const plural = typeof raw.event_type === "string" ? raw.event_type : undefined;
  const fromEventType = plural === undefined ? undefined : KIND_OF_EVENT_TYPE.get(plural);
  const type = (typeof raw.type === "string" ? (raw.type as Kind) : undefined) ?? fromEventType;
  if (type !== undefined && fromEventType !== undefined && type !== fromEventType) {
    errors.push({
      path: `${path}.event_type`,
      message: `"${plural}" disagrees with type "${type}"; ${KIND_RULE}, naming the same kind`,
    });
  }
  const aliases: string[] = plural === undefined ? [] : ["event_type"];
  // event_id names the event on update_events only; on create_events it is an unknown field.
  const extra = unknownFields(raw, idKey === "event_id" ? EVENT_UPDATE_FIELDS : EVENT_FIELDS);

  const fields: JsonObject = {};
  for (const key of VALUE_FIELDS) {
    if (given(raw[key])) fields[key] = raw[key];
  }
  const end = timestamp(raw.end_timestamp);
  if (end) fields.end_timestamp = end.iso;
  if (type === undefined || type === "llm") Object.assign(fields, usageDetails(raw, fields));

  let init = timestamp(raw.init_timestamp);
  const alias = timestamp(raw.timestamp);
  if (alias) {
    if (!init || init.iso === alias.iso) {
      init = alias;
      aliases.push("timestamp");
    } else extra.timestamp = raw.timestamp;
  }

  const id =
    idKey === "event_id" && given(raw.event_id) ? String(raw.event_id) : given(raw.id) ? String(raw.id) : undefined;
  if (idKey === "event_id" && given(raw.event_id) && given(raw.id) && raw.event_id !== raw.id) {
    errors.push({ path: `${path}.id`, message: `must equal event_id ("${raw.event_id}") when both are given` });
  }
  const input: EventInput = {
    id,
    type,
    session_id: given(raw.session_id) ? String(raw.session_id) : undefined,
    init,
    fields,
    aliases,
    extra,
  };
  return input;
}

const isCount = (value: unknown): value is number => Number.isSafeInteger(value) && (value as number) >= 0;
const objectAt = (value: unknown, key: string): Raw | undefined => {
  if (typeof value !== "object" || value === null || Array.isArray(value)) return undefined;
  const found = (value as Raw)[key];
  return typeof found === "object" && found !== null && !Array.isArray(found) ? (found as Raw) : undefined;
};

/**
 * The detail counts of OpenAI's `usage`, where clients send it beside the named fields: spread
 * into the event (`prompt_tokens_details`, `completion_tokens_details`), as an unknown `usage`
 * field, or inside `returns` (AgentOps SDK 0.3 sends the whole response there); the Chat
 * Completions names (`prompt_tokens_details.cached_tokens`, `completion_tokens_details.
 * reasoning_tokens`) and the Responses ones (`input_tokens_details`, `output_tokens_details`).
 * OpenAI counts both inside prompt_tokens and completion_tokens, as agentmon does. A count given
 * by name wins; Anthropic's usage is not read (its input_tokens leaves the cache out, so its cache
 * counts would contradict a prompt_tokens copied from it; see docs/decisions/015-prices.md).
 */
function usageDetails(raw: Raw, named: JsonObject): JsonObject {
  const found: JsonObject = {};
  const usages = [raw, objectAt(raw, "usage"), objectAt(objectAt(raw, "returns"), "usage")];
  const first = (details: string[], key: string) => {
    for (const usage of usages) {
      for (const name of details) {
        const value = objectAt(usage, name)?.[key];
        if (isCount(value)) return value;
      }
    }
    return undefined;
  };
  if (!("cache_read_tokens" in named)) {
    const cached = first(["prompt_tokens_details", "input_tokens_details"], "cached_tokens");
    if (cached !== undefined) found.cache_read_tokens = cached;
  }
  if (!("reasoning_tokens" in named)) {
    const reasoning = first(["completion_tokens_details", "output_tokens_details"], "reasoning_tokens");
    if (reasoning !== undefined) found.reasoning_tokens = reasoning;
  }
  return found;
}

/** A kind is required on create (E2). */
export function requireKind(input: EventInput, path: string, errors: ErrorDetail[]): void {
  if (input.type === undefined) errors.push({ path: `${path}.type`, message: `is required: ${KIND_RULE}` });
}

/** Moves the tool aliases to their canonical names; a differing alias is kept as an unknown field. */
function resolveAliases(kind: Kind, input: EventInput): EventInput {
  // Most events use no alias: nothing to move, nothing to copy.
  if (!("tool_name" in input.fields || (kind === "tool" && ("params" in input.fields || "returns" in input.fields)))) {
    return input;
  }
  const fields = { ...input.fields };
  const extra = { ...input.extra };
  const aliases = [...input.aliases];
  const names = kind === "tool" ? Object.entries(TOOL_ALIASES) : [["tool_name", "name"] as const];
  for (const [alias, canonical] of names) {
    if (!(alias in fields)) continue;
    const value = fields[alias];
    delete fields[alias];
    if (kind !== "tool") {
      extra[alias] = value; // tool_name means nothing on other kinds: an unknown field
    } else if (!(canonical in fields) || sameJson(fields[canonical], value)) {
      fields[canonical] = value;
      aliases.push(alias);
    } else {
      extra[alias] = value;
    }
  }
  return { ...input, fields, extra, aliases };
}

const IS_COLUMN = new Set<string>(COLUMN_FIELDS);

/** Sets the given fields on a record of the caller's own: columns as columns, the rest in `fields`. */
function assignFields(event: EventRecord, fields: JsonObject): EventRecord {
  for (const key in fields) {
    if (IS_COLUMN.has(key)) (event as unknown as JsonObject)[key] = fields[key];
    else event.fields[key] = fields[key];
  }
  return event;
}

const withFields = (event: EventRecord, fields: JsonObject): EventRecord =>
  assignFields({ ...event, fields: { ...event.fields } }, fields);

/** A new event record for create_events. */
export function newEvent(input: EventInput & { type: Kind }, id: string, received: Timestamp): EventRecord {
  const resolved = resolveAliases(input.type, input);
  const init = resolved.init ?? received;
  const empty: EventRecord = {
    id,
    type: input.type,
    init_timestamp: init.iso,
    init_us: init.us,
    end_timestamp: null,
    agent_id: null,
    model: null,
    prompt_tokens: null,
    completion_tokens: null,
    cost: null,
    // A cost sent is the client's; otherwise lib/prices.ts priceEvent decides.
    cost_source: given(resolved.fields.cost) ? "client" : "unknown",
    fields: {},
    aliases: resolved.aliases,
    extra: resolved.extra,
  };
  return assignFields(empty, resolved.fields);
}

/** Applies an update_events entry: only the fields given change, extras merge (E6). */
export function patchEvent(stored: EventRecord, input: EventInput): EventRecord {
  const type = input.type ?? stored.type;
  const resolved = resolveAliases(type, input);
  const next = withFields({ ...stored, type }, resolved.fields);
  // A cost sent now is the client's, and stays so: a client cost always wins over the table.
  if (given(resolved.fields.cost)) next.cost_source = "client";
  if (resolved.init) {
    next.init_timestamp = resolved.init.iso;
    next.init_us = resolved.init.us;
  }
  // The tool aliases mean something on tool events only: after a change of kind, `params` is the
  // llm's own field again, not an echo of the tool's input.
  const aliases = [...new Set([...stored.aliases, ...resolved.aliases])];
  next.aliases = type === "tool" ? aliases : aliases.filter((alias) => !(alias in TOOL_ALIASES));
  next.extra = { ...stored.extra, ...resolved.extra };
  // An alias given now names its field; an older value kept under that name as unknown is gone.
  for (const alias of resolved.aliases) delete next.extra[alias];
  return next;
}

// ---------------------------------------------------------------- shared

/** The fields a schema does not name, as sent (G5); `jwt` is never kept. */
export function unknownFields(raw: Raw, named: Set<string>): JsonObject {
  const extra: JsonObject = {};
  for (const key of Object.keys(raw)) {
    if (named.has(key) || key === "jwt") continue;
    // Defined, not assigned, so that even a key named "__proto__" stays plain data.
    if (key === "__proto__")
      Object.defineProperty(extra, key, { value: raw[key], enumerable: true, writable: true, configurable: true });
    else extra[key] = raw[key];
  }
  return extra;
}
