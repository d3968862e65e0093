/** Events and agents written with a session's JWT (E1-E7), and the AgentOps calls stored as events (C2, C3). */

import { developerErrorEvent, developerErrorSession, threadEvent } from "../domain/compat.ts";
import { type ErrorDetail, forbidden, invalidRequest, notFound, sessionNotFound } from "../domain/errors.ts";
import { uuidv7 } from "../domain/ids.ts";
import { priceEvent } from "../domain/prices.ts";
import { newEvent, readEvent, requireKind, unknownFields } from "../domain/records.ts";
import { timestampFromMillis } from "../domain/timestamps.ts";
import type { ApiKeyRecord, Claims, EventInput, EventPatch, EventRecord, JsonObject } from "../domain/types.ts";
import type { Context } from "./context.ts";

/** E5: an event (or agent) naming another session than the JWT's is refused. */
function refuseForeignSession(claims: Claims, inputs: { session_id?: string | null | undefined }[]): void {
  const foreign = inputs.find((input) => input.session_id != null && input.session_id !== claims.session_id);
  if (foreign?.session_id != null) throw forbidden(claims.session_id, foreign.session_id);
}

/**
 * E1-E5. The records are built and handed to the store in one synchronous step, so that only the
 * ids outlive it while the write is committed: a big batch's parsed objects die young instead of
 * being kept for the commit's whole wait.
 */
export function recordEvents(context: Context, claims: Claims, events: JsonObject[]): Promise<string[]> {
  const { ids, stored } = storeEvents(context, claims, events);
  return stored.then((count) => {
    if (count === false) throw sessionNotFound(claims.session_id);
    // The events really stored: a retry's, already there (E3), are not counted again (G8).
    context.counts.ingested("events", count);
    return ids;
  });
}

function storeEvents(context: Context, claims: Claims, events: JsonObject[]) {
  const errors: ErrorDetail[] = [];
  const inputs = events.map((raw, index) => {
    const input = readEvent(raw, `events[${index}]`, errors, "id");
    requireKind(input, `events[${index}]`, errors);
    return input as EventInput & { type: EventRecord["type"] };
  });
  if (errors.length > 0) throw invalidRequest(errors);
  refuseForeignSession(claims, inputs);
  return storeInputs(context, claims, inputs);
}

/** Where events go: a session of a project, written with a JWT's key (checked in the write: 4.3) or not. */
interface Scope {
  project_id: string;
  session_id: string;
  key_id?: string;
}

/** E3: ids given or made, records built, priced and handed to the store (the later copy of an id wins). */
function storeInputs(context: Context, scope: Scope, inputs: (EventInput & { type: EventRecord["type"] })[]) {
  const now = context.now();
  const received = timestampFromMillis(now);
  const ids = inputs.map((input) => input.id ?? uuidv7(now));
  const unique = new Map<string, EventRecord>(); // the same id twice in one call: the later copy wins (E3)
  for (let index = 0; index < inputs.length; index++) {
    const id = ids[index] as string;
    const input = inputs[index] as EventInput & { type: EventRecord["type"] };
    unique.set(id, priceEvent(newEvent(input, id, received), context.prices));
  }
  const stored = context.store.insertEvents(scope.project_id, scope.session_id, [...unique.values()], scope.key_id);
  return { ids, stored };
}

/**
 * C2: a developer error naming a session of the key's project becomes an error event of it; one
 * naming no session is not stored (both ids null); any other session is a 404, nothing written.
 * The key was checked as the request arrived (an API-key operation), so the write does not check
 * it again, as create_session's does not.
 */
export async function recordDeveloperError(context: Context, key: ApiKeyRecord, raw: JsonObject) {
  const sessionId = developerErrorSession(raw);
  if (sessionId === undefined) return { session_id: null, event_id: null };
  const scope = { project_id: key.project_id, session_id: sessionId };
  const { ids, stored } = storeInputs(context, scope, [developerErrorEvent(raw)]);
  if ((await stored) === false) throw sessionNotFound(sessionId);
  return { session_id: sessionId, event_id: ids[0] as string };
}

/** C3: the thread as an action event of the JWT's session; E5 as for any event. */
export async function recordThread(context: Context, claims: Claims, raw: JsonObject & { id: string }) {
  const input = threadEvent(raw);
  refuseForeignSession(claims, [input]);
  const { stored } = storeInputs(context, claims, [input]);
  if ((await stored) === false) throw sessionNotFound(claims.session_id);
  return { thread_id: raw.id, event_id: input.id };
}

/** E6: partial updates of events of the JWT's session; unknown ids are a 404 and nothing changes. */
export async function updateEvents(context: Context, claims: Claims, events: JsonObject[]): Promise<number> {
  const errors: ErrorDetail[] = [];
  const patches = events.map((raw, index) => {
    const input = readEvent(raw, `events[${index}]`, errors, "event_id");
    if (input.id === undefined) {
      errors.push({ path: `events[${index}].event_id`, message: "is required: give event_id or id" });
    }
    return input as EventPatch;
  });
  if (errors.length > 0) throw invalidRequest(errors);
  refuseForeignSession(claims, patches);

  // The store re-prices a table cost when model, tokens or time change; a client's cost stands.
  const result = await context.store.updateEvents(claims.project_id, claims.session_id, patches, claims.key_id);
  if (result.status === "no-session") throw sessionNotFound(claims.session_id);
  if (result.status === "unknown") {
    const ids = [...new Set(result.unknown.map(({ id }) => id))];
    throw notFound(
      `No event with ${ids.length === 1 ? "this id" : "these ids"} in this session: ${ids.join(", ")}`,
      result.unknown.map(({ index, id }) => ({
        path: `events[${index}].event_id`,
        message: `unknown event id "${id}"`,
      })),
    );
  }
  return result.updated;
}

const AGENT_FIELDS = new Set(["id", "name", "session_id"]);

/** E7: an upsert of the agent in the JWT's session. */
export async function registerAgent(
  context: Context,
  claims: Claims,
  body: { id: string; name?: string | null; session_id?: string | null } & JsonObject,
) {
  refuseForeignSession(claims, [body]);
  const agent = { id: body.id, name: body.name ?? null, extra: unknownFields(body, AGENT_FIELDS) };
  if (!(await context.store.upsertAgent(claims.project_id, claims.session_id, agent, claims.key_id))) {
    throw sessionNotFound(claims.session_id);
  }
}
