import { type EventInput, readEvent } from "../lib/records.ts";
import { refuseForeignSession } from "./createEvents.ts";
import { type ErrorDetail, invalidRequest, notFound, sessionNotFound } from "./errors.ts";
import { claimsOf, type Deps, type Handler } from "./types.ts";

/** E6: partial updates of events of the JWT's session; unknown ids are a 404 and nothing changes. */
export const updateEvents =
  (deps: Deps): Handler<"updateEvents"> =>
  async (req) => {
    const claims = claimsOf(req);
    const errors: ErrorDetail[] = [];
    const patches = req.body.events.map((raw, index) => {
      const input = readEvent(raw, `events[${index}]`, errors, "event_id");
      if (input.id === undefined)
        errors.push({ path: `events[${index}].event_id`, message: "is required: give event_id or id" });
      return input as EventInput & { id: string };
    });
    if (errors.length > 0) throw invalidRequest(errors);
    refuseForeignSession(claims, patches);

    // The store re-prices a table cost when model, tokens or time change; a client's cost stands.
    const result = await deps.store.updateEvents(claims.project_id, claims.session_id, patches, claims.key_id);
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
    return { status: "success" as const, updated: result.updated };
  };
