import { readEventView } from "../domain/views.ts";
import { listEvents } from "../services/reads.ts";
import { eventScores } from "../services/scores.ts";
import { type Deps, type Handler, projectIdOf } from "./types.ts";

/** A page of a session's events in time order, as they were sent (G5), with their cost source and scores. */
export const listSessionEvents =
  (deps: Deps): Handler<"listSessionEvents"> =>
  async (req) => {
    const id = req.params.session_id;
    const projectId = projectIdOf(req);
    const page = await listEvents(deps.store, projectId, id, req.query);
    const events = page.items.map((event) => readEventView(event, id));
    const scores = await eventScores(
      deps.store,
      projectId,
      id,
      page.items.map((event) => event.id),
    );
    return { status: "success" as const, events, scores, next_cursor: page.next_cursor };
  };
