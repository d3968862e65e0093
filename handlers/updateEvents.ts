import { updateEvents as update } from "../services/events.ts";
import { claimsOf, type Deps, type Handler } from "./types.ts";

/** E6: partial updates of events of the JWT's session; unknown ids are a 404 and nothing changes. */
export const updateEvents =
  (deps: Deps): Handler<"updateEvents"> =>
  async (req) => ({ status: "success" as const, updated: await update(deps, claimsOf(req), req.body.events) });
