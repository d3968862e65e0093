import { exportTraces } from "../services/otlp.ts";
import { type Deps, type Handler, otlpClaimsOf } from "./types.ts";

/** otlp.md T1: `/v1/traces/` is `/v1/traces`. */
export const exportTracesSlash =
  (deps: Deps): Handler<"exportTracesSlash"> =>
  async (req) =>
    exportTraces(deps, otlpClaimsOf(req), req.body);
