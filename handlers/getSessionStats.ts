import { statsView } from "../lib/records.ts";
import { sessionNotFound } from "./errors.ts";
import { apiKeyOf, type Deps, type Handler } from "./types.ts";

/** A session's totals (the figures AgentOps' /v2/sessions/{id}/stats gives). */
export const getSessionStats =
  (deps: Deps): Handler<"getSessionStats"> =>
  async (req) => {
    const id = req.params.session_id;
    const found = await deps.store.readSession(apiKeyOf(req).project_id, id, { agents: false, events: false });
    if (!found) throw sessionNotFound(id);
    return { status: "success" as const, stats: statsView(found.session, found.totals) };
  };
