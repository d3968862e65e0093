/**
 * From request bodies (already checked against openapi.yaml by ajv) to stored records, and back.
 * This is where the contract's aliases, canonical values and unknown-field rules (G5, G6, S1,
 * S5, E2-E4, E6) live, so that every adapter stores the same thing.
 */

import type {
  AgentRecord,
  CostSource,
  EndState,
  EventRecord,
  JsonObject,
  Kind,
  NewSession,
  SessionChanges,
  SessionRecord,
  SessionSnapshot,
  SessionTotals,
} from "../db/store.ts";
import type { ErrorDetail } from "../handlers/errors.ts";
import { parseTimestamp, type Timestamp } from "./timestamps.ts";

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

/** The session as clients see it (S6): named fields, then the unknown ones as sent. */
export function sessionView(session: SessionRecord) {
  return {
    id: session.id,
    init_timestamp: session.init_timestamp,
    end_timestamp: session.end_timestamp,
    end_state: session.end_state,
    end_state_reason: session.end_state_reason,
    tags: session.tags,
    host_env: session.host_env,
    ...session.extra,
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

/** Named fields stored in columns of their own (see db/migrations). */
const COLUMN_FIELDS = ["end_timestamp", "agent_id", "model", "prompt_tokens", "completion_tokens", "cost"] as const;

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
export interface EventInput {
  id: string | undefined;
  type: Kind | undefined;
  session_id: string | undefined;
  init: Timestamp | undefined;
  /** Every other named field given, canonical names, columns included. */
  fields: JsonObject;
  aliases: string[];
  extra: JsonObject;
}

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

/** The fields every event view carries, whatever was sent. */
const namedView = (event: EventRecord, sessionId: string) => ({
  id: event.id,
  type: event.type,
  session_id: sessionId,
  init_timestamp: event.init_timestamp,
  end_timestamp: event.end_timestamp,
  agent_id: event.agent_id,
});

/** The event as clients read it: canonical fields, the aliases it was sent with, its unknown fields. */
export function eventView(event: EventRecord, sessionId: string) {
  const view: JsonObject = namedView(event, sessionId);
  for (const key of ["model", "prompt_tokens", "completion_tokens"] as const) {
    if (event[key] !== null) view[key] = event[key];
  }
  // Only a cost the client sent is a field it sent; a table price is shown by readEventView.
  if (event.cost !== null && (event.cost_source ?? "client") === "client") view.cost = event.cost;
  Object.assign(view, event.fields);
  const echo: Record<string, unknown> = {
    event_type: KINDS[event.type],
    timestamp: event.init_timestamp,
    tool_name: event.fields.name,
    params: event.fields.input,
    returns: event.fields.output,
  };
  for (const alias of event.aliases) view[alias] = echo[alias];
  return { ...view, ...event.extra };
}

/** What every event the read API answers carries; the other fields are the ones it was sent with (G5). */
export interface StoredEventView {
  id: string;
  type: Kind;
  session_id: string;
  init_timestamp: string;
  end_timestamp: string | null;
  agent_id: string | null;
  cost?: number;
  cost_source?: CostSource;
  [field: string]: unknown;
}

/**
 * An event as the read API answers it: eventView, plus for llm events `cost_source` and `cost`
 * when it is known (the client's or the table's). `cost_source` is the server's on llm events:
 * an unknown field of that name sent by a client is stored but not shown there.
 */
export function readEventView(event: EventRecord, sessionId: string): StoredEventView {
  const view = eventView(event, sessionId);
  const fixed = namedView(event, sessionId);
  if (event.type !== "llm") return { ...view, ...fixed };
  const { cost: _cost, cost_source: _source, ...rest } = view;
  const source = event.cost_source ?? (event.cost === null ? "unknown" : "client");
  return { ...rest, ...fixed, ...(event.cost === null ? {} : { cost: event.cost }), cost_source: source };
}

// ---------------------------------------------------------------- read API

/** An agent as the read API answers it: id, name, then its unknown fields as sent. */
export const agentView = (agent: AgentRecord) => ({ id: agent.id, name: agent.name, ...agent.extra });

/** An instant in microseconds as a stored timestamp (G6): UTC, `Z`, the fraction without trailing zeros. */
export function isoFromMicros(us: number): string {
  const ms = Math.floor(us / 1000);
  const base = new Date(ms).toISOString(); // YYYY-MM-DDTHH:MM:SS.mmmZ
  const fraction = `${base.slice(20, 23)}${String(us - ms * 1000).padStart(3, "0")}`.replace(/0+$/, "");
  return `${base.slice(0, 19)}${fraction === "" ? "" : `.${fraction}`}Z`;
}

/**
 * A session's Stats: its totals, with `cost` as token_cost writes it (S6) and `duration_ms` from
 * the session's end, or while it has none from its latest event (0 without events).
 */
export function statsView(session: SessionRecord, totals: SessionTotals) {
  const end = session.end_timestamp === null ? undefined : parseTimestamp(session.end_timestamp)?.us;
  const until = end ?? totals.last_us ?? session.init_us;
  return {
    events: totals.events,
    event_counts: totals.event_counts,
    prompt_tokens: totals.prompt_tokens,
    completion_tokens: totals.completion_tokens,
    cost: formatCost(totals.cost),
    // A clock set wrong on the client can put the end before the start: a duration is never negative.
    duration_ms: Math.max(0, until - session.init_us) / 1000,
    error_count: totals.event_counts.error,
    first_event_at: totals.first_us === null ? null : isoFromMicros(totals.first_us),
    last_event_at: totals.last_us === null ? null : isoFromMicros(totals.last_us),
  };
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

/** token_cost (S6): plain decimal, at most 12 places, trailing zeros trimmed to at least two. */
export function formatCost(total: number): string {
  // toFixed switches to exponent notation from 1e21 on, where a double has no fraction left anyway.
  const fixed = total < 1e21 ? total.toFixed(12).replace(/0+$/, "") : `${BigInt(total)}.`;
  const [whole, decimals = ""] = fixed.split(".");
  return `${whole}.${decimals.padEnd(2, "0")}`;
}

/** What getSession and exportSession both answer of a session: itself, its stats, its agents. */
export const sessionDocument = (found: Omit<SessionSnapshot, "events">) => ({
  session: sessionView(found.session),
  stats: statsView(found.session, found.totals),
  agents: found.agents.map(agentView),
});
