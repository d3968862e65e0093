import { formatCost, sessionView } from "../domain/views.ts";
import { sessionUrl } from "../services/context.ts";
import { updateSession as update } from "../services/sessions.ts";
import { claimsOf, type Deps, type Handler } from "./types.ts";

/** S4-S7: only the fields given change; the answer is the stored session and its token cost. */
export const updateSession =
  (deps: Deps): Handler<"updateSession"> =>
  async (req) => {
    const { session, totals } = await update(deps, claimsOf(req), req.body.session);
    return {
      status: "success" as const,
      session: sessionView(session),
      token_cost: formatCost(totals.cost),
      session_url: sessionUrl(deps, session.id),
    };
  };
