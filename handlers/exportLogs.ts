import { exportLogs as store } from "../services/otlp.ts";
import { type Deps, type Handler, otlpClaimsOf } from "./types.ts";

/** otlp.md T3: OTLP logs in; the GenAI events among them are kept with their spans. */
export const exportLogs =
  (deps: Deps): Handler<"exportLogs"> =>
  async (req) =>
    store(deps, otlpClaimsOf(req), req.body);
