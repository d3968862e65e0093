import { uptime } from "../services/health.ts";
import type { Deps, Handler } from "./types.ts";

/** C1: GET /health, the same answer as GET /healthz (O2 never refuses it either). */
export const getHealthAlias =
  (deps: Deps): Handler<"getHealthAlias"> =>
  async () => ({ status: "success", uptime_s: uptime(deps.startedAt, deps.now()) });
