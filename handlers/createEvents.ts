import type { EventRecord, JsonObject } from "../db/store.ts";
import type { Claims } from "../lib/auth.ts";
import { uuidv7 } from "../lib/ids.ts";
import { priceEvent } from "../lib/prices.ts";
import { type EventInput, newEvent, readEvent, requireKind } from "../lib/records.ts";
import { timestampFromMillis } from "../lib/timestamps.ts";
import { type ErrorDetail, forbidden, invalidRequest, sessionNotFound } from "./errors.ts";
import { claimsOf, type Deps, type Handler } from "./types.ts";

/** E5: an event (or agent) naming another session than the JWT's is refused. */
export function refuseForeignSession(claims: Claims, inputs: { session_id: string | undefined }[]): void {
  const foreign = inputs.find((input) => input.session_id !== undefined && input.session_id !== claims.session_id);
  if (foreign?.session_id !== undefined) throw forbidden(claims.session_id, foreign.session_id);
}

/**
 * E1-E5: shared by both create_events paths. The records are built and handed to the store in
 * one synchronous step, so that only the ids outlive it while the write is committed: a big
 * batch's parsed objects die young instead of being kept for the commit's whole wait.
 */
export function recordEvents(deps: Deps, claims: Claims, events: JsonObject[]) {
  const ids = storeEvents(deps, claims, events);
  return ids.stored.then((stored) => {
    if (!stored) throw sessionNotFound(claims.session_id);
    return { status: "success" as const, event_ids: ids.ids };
  });
}

function storeEvents(deps: Deps, claims: Claims, events: JsonObject[]) {
  const errors: ErrorDetail[] = [];
  const inputs = events.map((raw, index) => {
    const input = readEvent(raw, `events[${index}]`, errors, "id");
    requireKind(input, `events[${index}]`, errors);
    return input as EventInput & { type: EventRecord["type"] };
  });
  if (errors.length > 0) throw invalidRequest(errors);
  refuseForeignSession(claims, inputs);

  const now = deps.now();
  const received = timestampFromMillis(now);
  const ids = inputs.map((input) => input.id ?? uuidv7(now));
  const unique = new Map<string, EventRecord>(); // the same id twice in one call: the later copy wins (E3)
  for (let index = 0; index < inputs.length; index++) {
    const id = ids[index] as string;
    unique.set(
      id,
      priceEvent(newEvent(inputs[index] as EventInput & { type: EventRecord["type"] }, id, received), deps.prices),
    );
  }
  const stored = deps.store.insertEvents(claims.project_id, claims.session_id, [...unique.values()], claims.key_id);
  return { ids, stored };
}

export const createEvents =
  (deps: Deps): Handler<"createEvents"> =>
  async (req) =>
    recordEvents(deps, claimsOf(req), req.body.events);
