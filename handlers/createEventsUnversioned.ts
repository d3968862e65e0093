import { recordEvents } from "../services/events.ts";
import { claimsOf, type Deps, type Handler } from "./types.ts";

/** L2: exactly like createEvents. */
export const createEventsUnversioned =
  (deps: Deps): Handler<"createEventsUnversioned"> =>
  async (req) => ({ status: "success" as const, event_ids: await recordEvents(deps, claimsOf(req), req.body.events) });
