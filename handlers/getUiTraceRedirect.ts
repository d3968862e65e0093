import { sessionOfTrace } from "../services/otlp.ts";
import type { Deps, Handler } from "./types.ts";

/** otlp.md T12: the link AgentOps SDK 0.4 prints (`/sessions?trace_id=<32 hex>`) leads to the session's page. */
export const getUiTraceRedirect =
  (_deps: Deps): Handler<"getUiTraceRedirect"> =>
  async (req, reply) => {
    const traceId = req.query.trace_id;
    return reply.redirect(traceId ? `/sessions/${sessionOfTrace(traceId)}` : "/", 302);
  };
