import { readEventView } from "../domain/views.ts";
import { listEvents } from "../services/reads.ts";
import { apiKeyOf, type Deps, type Handler } from "./types.ts";

/** A page of a session's events in time order, as they were sent (G5), with their cost source. */
export const listSessionEvents =
  (deps: Deps): Handler<"listSessionEvents"> =>
  async (req) => {
    const id = req.params.session_id;
    const page = await listEvents(deps.store, apiKeyOf(req).project_id, id, req.query);
    return {
      status: "success" as const,
      events: page.items.map((event) => readEventView(event, id)),
      next_cursor: page.next_cursor,
    };
  };
