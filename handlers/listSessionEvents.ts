import { readEventView } from "../domain/views.ts";
import { listEvents } from "../services/reads.ts";
import { type Deps, type Handler, projectIdOf } from "./types.ts";

/** A page of a session's events in time order, as they were sent (G5), with their cost source. */
export const listSessionEvents =
  (deps: Deps): Handler<"listSessionEvents"> =>
  async (req) => {
    const id = req.params.session_id;
    const page = await listEvents(deps.store, projectIdOf(req), id, req.query);
    return {
      status: "success" as const,
      events: page.items.map((event) => readEventView(event, id)),
      next_cursor: page.next_cursor,
    };
  };
