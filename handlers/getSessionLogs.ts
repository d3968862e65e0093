import { sessionLogs } from "../services/otlp.ts";
import { apiKeyOf, type Deps, type Handler } from "./types.ts";

/** otlp.md T6: what was uploaded to the session's logs, as text. */
export const getSessionLogs =
  (deps: Deps): Handler<"getSessionLogs"> =>
  async (req, reply) => {
    const text = await sessionLogs(deps, apiKeyOf(req).project_id, req.params.session_id);
    reply.type("text/plain; charset=utf-8");
    return text;
  };
