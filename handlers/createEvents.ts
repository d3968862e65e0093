import { recordEvents } from "../services/events.ts";
import { claimsOf, type Deps, type Handler } from "./types.ts";

/** E1-E5: a batch of events of the JWT's session. */
export const createEvents =
  (deps: Deps): Handler<"createEvents"> =>
  async (req) => ({ status: "success" as const, event_ids: await recordEvents(deps, claimsOf(req), req.body.events) });
