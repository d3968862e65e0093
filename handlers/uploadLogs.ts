import { uploadLogs as append } from "../services/otlp.ts";
import { type Deps, type Handler, otlpClaimsOf } from "./types.ts";

/** otlp.md T6: text appended to the logs of the trace that the Trace-Id header names. */
export const uploadLogs =
  (deps: Deps): Handler<"uploadLogs"> =>
  async (req) =>
    append(deps, otlpClaimsOf(req), String(req.headers["trace-id"]), req.body.body);
