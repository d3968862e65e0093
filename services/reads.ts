/** The read API (issue 5): a project's sessions, listed and filtered, read whole, deleted. */
import type { Store } from "../db/store.ts";
import { type CursorKind, decodeCursor, encodeCursor } from "../domain/cursor.ts";
import { type ErrorDetail, invalidParameters, invalidRequest, sessionNotFound } from "../domain/errors.ts";
import { canonicalEndState, END_STATE_RULE, KINDS } from "../domain/records.ts";
import { readScoreCondition } from "../domain/scores.ts";
import { parseSearch } from "../domain/search.ts";
import { parseTimestamp } from "../domain/timestamps.ts";
import type { Kind, ScoreCondition, SessionFilter, SessionSort } from "../domain/types.ts";
import type { operations } from "../generated/api.ts";
import { deleteSessions } from "./retention.ts";

const CURSOR_PROBLEM: ErrorDetail = {
  path: "query.cursor",
  message: "is not a cursor this operation made; pass next_cursor back as it was given",
};
/** The session list's: a cursor is also bound to the sort and order it was made for. */
const SORTED_CURSOR_PROBLEM: ErrorDetail = {
  path: "query.cursor",
  message:
    "is not a cursor this operation made for this sort and order; pass next_cursor back as it was given, with the same sort and order",
};

/** The queries of GET /v2/sessions and GET /v2/sessions/{id}/events, as ajv has checked them. */
type SessionsQuery = NonNullable<operations["listSessions"]["parameters"]["query"]>;
type EventsQuery = NonNullable<operations["listSessionEvents"]["parameters"]["query"]>;

/**
 * The filters of GET /v2/sessions, and of POST /v2/delete_sessions's body (the same names, but
 * has_errors a boolean and the extra.<key> filters one `extra` object in the body); a query's
 * `extra.<key>` parameters come in as fields of that name (openapi.yaml declares them in words).
 */
export type FilterFields = Pick<
  SessionsQuery,
  | "tag"
  | "end_state"
  | "from"
  | "to"
  | "agent_id"
  | "q"
  | "conversation_id"
  | "model"
  | "min_cost"
  | "max_cost"
  | "min_duration_ms"
  | "max_duration_ms"
> & {
  has_errors?: "true" | "false" | boolean;
  extra?: Record<string, string | number | boolean>;
};

/** The most extra.<key> filters in one query. */
const MAX_EXTRA = 20;
const EXTRA_PREFIX = "extra.";
/** The most score.<name> filters in one query. */
const MAX_SCORE_FILTERS = 10;
const SCORE_PREFIX = "score.";

/** Milliseconds (a decimal string with at most 3 decimals: ajv checked it) as whole microseconds. */
const microsOf = (ms: string) => {
  const [whole = "0", fraction = ""] = ms.split(".");
  return Number(whole) * 1000 + Number(fraction.padEnd(3, "0"));
};

/** The SessionFilter of the list's filters; a problem is pushed to `errors`, its path under `where`. */
export function sessionFilter(fields: FilterFields, where: string, errors: ErrorDetail[]): SessionFilter {
  const at = (name: string) => (where === "" ? name : `${where}.${name}`);
  const filter: SessionFilter = {};
  if (fields.tag !== undefined) filter.tags = fields.tag;
  if (fields.end_state !== undefined) {
    const state = canonicalEndState(fields.end_state);
    if (state) filter.end_state = state;
    else errors.push({ path: at("end_state"), message: END_STATE_RULE });
  }
  // ajv has checked both formats (G6); parse again for the instant.
  const from = fields.from === undefined ? undefined : parseTimestamp(fields.from);
  const to = fields.to === undefined ? undefined : parseTimestamp(fields.to);
  if (from) filter.from_us = from.us;
  if (to) filter.to_us = to.us;
  if (fields.agent_id !== undefined) filter.agent_id = fields.agent_id;
  // A q without a word (empty, or only punctuation) filters nothing.
  const search = fields.q === undefined ? undefined : parseSearch(fields.q);
  if (search) filter.q = search;
  if (fields.conversation_id !== undefined) filter.conversation_id = fields.conversation_id;
  if (fields.model !== undefined) filter.model = fields.model;
  // ajv has checked the decimal patterns.
  if (fields.min_cost !== undefined) filter.min_cost = Number(fields.min_cost);
  if (fields.max_cost !== undefined) filter.max_cost = Number(fields.max_cost);
  if (fields.min_duration_ms !== undefined) filter.min_duration_us = microsOf(fields.min_duration_ms);
  if (fields.max_duration_ms !== undefined) filter.max_duration_us = microsOf(fields.max_duration_ms);
  if (fields.has_errors !== undefined) filter.has_errors = fields.has_errors === true || fields.has_errors === "true";
  const extra = extraFilter(fields, at, errors);
  if (extra) filter.extra = extra;
  const scores = scoreFilter(fields, at, errors);
  if (scores.length > 0) filter.scores = scores;
  return filter;
}

/** The score.<name> filters (issue 25): fields named so in a query. */
function scoreFilter(fields: FilterFields, at: (name: string) => string, errors: ErrorDetail[]) {
  const conditions: ScoreCondition[] = [];
  for (const [field, value] of Object.entries(fields)) {
    if (!field.startsWith(SCORE_PREFIX)) continue;
    const name = field.slice(SCORE_PREFIX.length);
    if (name === "") errors.push({ path: at(field), message: "name a score: score.<name>=<value>" });
    else if (typeof value !== "string") errors.push({ path: at(field), message: "give one value per score name" });
    else {
      const read = readScoreCondition(name, value);
      if ("problem" in read) errors.push({ path: at(field), message: read.problem });
      else conditions.push(read);
    }
  }
  if (conditions.length > MAX_SCORE_FILTERS) {
    errors.push({ path: at("score"), message: `at most ${MAX_SCORE_FILTERS} score.<name> filters` });
  }
  return conditions;
}

/** The extra.<key> filters: fields named so (a query), or the body's `extra` object. */
function extraFilter(fields: FilterFields, at: (name: string) => string, errors: ErrorDetail[]) {
  // No prototype: a key may be `__proto__`.
  const extra: Record<string, string> = Object.create(null);
  for (const [name, value] of Object.entries(fields)) {
    if (!name.startsWith(EXTRA_PREFIX)) continue;
    const key = name.slice(EXTRA_PREFIX.length);
    if (key === "")
      errors.push({ path: at(name), message: "name a field of the session's extra: extra.<key>=<value>" });
    else if (typeof value !== "string") {
      errors.push({ path: at(name), message: "give one value per extra key" });
    } else extra[key] = value;
  }
  for (const [key, value] of Object.entries(fields.extra ?? {})) {
    // A number or a boolean by its JSON text, as a query would give it.
    extra[key] = typeof value === "string" ? value : JSON.stringify(value);
  }
  const count = Object.keys(extra).length;
  if (count > MAX_EXTRA) {
    errors.push({ path: at("extra"), message: `at most ${MAX_EXTRA} extra.<key> filters` });
  }
  return count === 0 ? undefined : extra;
}

/** A page of the project's sessions, newest first, filtered; with the cursor of the next page. */
export async function listSessions(store: Store, projectId: string, query: SessionsQuery) {
  const errors: ErrorDetail[] = [];
  const filter = sessionFilter(query, "query", errors);
  const sort: SessionSort = { by: query.sort ?? "start_time", order: query.order ?? "desc" };
  // The default order's cursors are those made before sorts existed; another order's name it, so
  // that a cursor of one order is refused by another.
  const kind: CursorKind =
    sort.by === "start_time" && sort.order === "desc" ? "sessions" : `sessions:${sort.by}:${sort.order}`;
  const after = query.cursor === undefined ? undefined : decodeCursor(kind, query.cursor);
  if (query.cursor !== undefined && !after) {
    errors.push(query.sort === undefined && query.order === undefined ? CURSOR_PROBLEM : SORTED_CURSOR_PROBLEM);
  }
  if (errors.length > 0) throw invalidParameters(errors);

  const page = await store.listSessions(projectId, filter, after, query.limit ?? 50, sort);
  return { items: page.items, next_cursor: page.next === null ? null : encodeCursor(kind, page.next) };
}

type BulkDelete = operations["deleteSessions"]["requestBody"]["content"]["application/json"];

/**
 * POST /v2/delete_sessions: the project's sessions matching the list's filters, removed in
 * batches (services/retention.ts), or counted with dry_run. At least one filter is required.
 */
export async function bulkDelete(store: Store, projectId: string, body: BulkDelete) {
  const errors: ErrorDetail[] = [];
  const { dry_run: dryRun = false, ...fields } = body;
  const filter = sessionFilter(fields, "", errors);
  if (fields.q !== undefined && filter.q === undefined) {
    errors.push({ path: "q", message: "has no word to search for (a letter or digit): a bulk delete's q must filter" });
  }
  if (Object.keys(fields).length === 0) {
    errors.push({
      path: "",
      message:
        "must give at least one filter (tag, end_state, from, to, agent_id, q, conversation_id, model, extra, min_cost, max_cost, min_duration_ms, max_duration_ms, has_errors); to delete every session, give to as now",
    });
  }
  if (errors.length > 0) throw invalidRequest(errors);
  return { ...(await deleteSessions(store, projectId, filter, dryRun)), dryRun };
}

/** `llm` or the SDK's `llms` (E2): the kind either names. */
const KIND_OF = new Map<string, Kind>(
  Object.entries(KINDS).flatMap(([kind, plural]) => [
    [kind, kind as Kind],
    [plural, kind as Kind],
  ]),
);

/** A page of a session's events in time order, only the kinds asked for. */
export async function listEvents(store: Store, projectId: string, sessionId: string, query: EventsQuery) {
  const { type, limit = 100, cursor } = query;
  const after = cursor === undefined ? undefined : decodeCursor("events", cursor);
  if (cursor !== undefined && !after) throw invalidParameters([CURSOR_PROBLEM]);
  // ajv has limited the names to the enum, so every one is a kind.
  const types = type === undefined ? undefined : [...new Set(type.map((name) => KIND_OF.get(name) as Kind))];
  const page = await store.listEventsPage(projectId, sessionId, {
    limit,
    ...(types ? { types } : {}),
    ...(after ? { after } : {}),
  });
  if (!page) throw sessionNotFound(sessionId);
  return { items: page.items, next_cursor: page.next === null ? null : encodeCursor("events", page.next) };
}

/** The session with its totals, and its agents and events when asked, read together. */
export async function readSession(
  store: Store,
  projectId: string,
  sessionId: string,
  parts: { agents: boolean; events: boolean },
) {
  const found = await store.readSession(projectId, sessionId, parts);
  if (!found) throw sessionNotFound(sessionId);
  return found;
}

/** Removes the session with its events and agents; a second delete, or another project's session, is a 404. */
export async function deleteSession(store: Store, projectId: string, sessionId: string) {
  if (!(await store.deleteSession(projectId, sessionId))) throw sessionNotFound(sessionId);
}
