import { statsView } from "../domain/views.ts";
import { readSession } from "../services/reads.ts";
import { type Deps, type Handler, projectIdOf } from "./types.ts";

/** A session's totals (the figures AgentOps' /v2/sessions/{id}/stats gives). */
export const getSessionStats =
  (deps: Deps): Handler<"getSessionStats"> =>
  async (req) => {
    const parts = { agents: false, events: false };
    const found = await readSession(deps.store, projectIdOf(req), req.params.session_id, parts);
    return { status: "success" as const, stats: statsView(found.session, found.totals) };
  };
