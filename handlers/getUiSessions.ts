import { sessionOfTrace } from "../services/otlp.ts";
import { sendUiFile, type UiFile, uiFiles } from "../ui/assets.ts";
import type { Deps, Handler } from "./types.ts";

/**
 * The web UI's sessions list. otlp.md T12: the link AgentOps SDK 0.4 prints
 * (`/sessions?trace_id=<32 hex>`) is the same address, and leads to the trace's session page.
 */
export const getUiSessions = (_deps: Deps): Handler<"getUiSessions"> => {
  return async (req, reply) => {
    const traceId = req.query.trace_id;
    if (traceId) return reply.redirect(`/sessions/${sessionOfTrace(traceId)}`, 302);
    return sendUiFile(req, reply, uiFiles().get("sessions.html") as UiFile);
  };
};
