import { sessionLogs } from "../services/otlp.ts";
import { type Deps, type Handler, projectIdOf } from "./types.ts";

/** otlp.md T6: what was uploaded to the session's logs, as text. */
export const getSessionLogs =
  (deps: Deps): Handler<"getSessionLogs"> =>
  async (req, reply) => {
    const text = await sessionLogs(deps, projectIdOf(req), req.params.session_id);
    reply.type("text/plain; charset=utf-8");
    return text;
  };
