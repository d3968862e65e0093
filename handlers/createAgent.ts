import { registerAgent } from "../services/events.ts";
import { claimsOf, type Deps, type Handler } from "./types.ts";

/** E7: an upsert of the agent in the JWT's session. */
export const createAgent =
  (deps: Deps): Handler<"createAgent"> =>
  async (req) => {
    await registerAgent(deps, claimsOf(req), req.body);
    return { status: "success" as const, agent_id: req.body.id };
  };
