import { recordEvents } from "./createEvents.ts";
import { claimsOf, type Deps, type Handler } from "./types.ts";

/** L2: exactly like createEvents. */
export const createEventsUnversioned =
  (deps: Deps): Handler<"createEventsUnversioned"> =>
  async (req) =>
    recordEvents(deps, claimsOf(req), req.body.events);
