import { formatCost, readSession, sessionView } from "../lib/records.ts";
import { type ErrorDetail, forbidden, invalidRequest, sessionNotFound } from "./errors.ts";
import { claimsOf, type Deps, type Handler, sessionUrl } from "./types.ts";

/** S4-S7: only the fields given change; the answer is the stored session and its token cost. */
export const updateSession =
  (deps: Deps): Handler<"updateSession"> =>
  async (req) => {
    const claims = claimsOf(req);
    const errors: ErrorDetail[] = [];
    const { id, changes } = readSession(req.body.session, "session", errors);
    if (errors.length > 0) throw invalidRequest(errors);
    if (id !== undefined && id !== claims.session_id) throw forbidden(claims.session_id, id);
    const session = await deps.store.updateSession(claims.project_id, claims.session_id, changes, claims.key_id);
    if (!session) throw sessionNotFound(claims.session_id);
    return {
      status: "success" as const,
      session: sessionView(session),
      token_cost: formatCost(await deps.store.tokenCost(session.id)),
      session_url: sessionUrl(deps, session.id),
    };
  };
