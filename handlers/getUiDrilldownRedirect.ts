import type { Deps, Handler } from "./types.ts";

/**
 * C4: the link AgentOps SDK 0.3.x prints (`/drilldown?session_id=<id>`) leads to the session's page.
 * ajv has required a session_id of 1 to 256 characters; the page itself finds out whether it exists.
 */
export const getUiDrilldownRedirect =
  (_deps: Deps): Handler<"getUiDrilldownRedirect"> =>
  async (req, reply) =>
    reply.redirect(`/sessions/${encodeURIComponent(req.query.session_id)}`, 302);
