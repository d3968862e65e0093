import { unknownFields } from "../lib/records.ts";
import { refuseForeignSession } from "./createEvents.ts";
import { sessionNotFound } from "./errors.ts";
import { claimsOf, type Deps, type Handler } from "./types.ts";

const AGENT_FIELDS = new Set(["id", "name", "session_id"]);

/** E7: an upsert of the agent in the JWT's session. */
export const createAgent =
  (deps: Deps): Handler<"createAgent"> =>
  async (req) => {
    const claims = claimsOf(req);
    const body = req.body;
    refuseForeignSession(claims, [{ session_id: body.session_id ?? undefined }]);
    const agent = { id: body.id, name: body.name ?? null, extra: unknownFields(body, AGENT_FIELDS) };
    if (!(await deps.store.upsertAgent(claims.project_id, claims.session_id, agent, claims.key_id))) {
      throw sessionNotFound(claims.session_id);
    }
    return { status: "success" as const, agent_id: body.id };
  };
