import { uptime } from "../services/health.ts";
import type { Deps, Handler } from "./types.ts";

/** Liveness: answers for as long as the process serves (O2 never refuses it). */
export const getHealth =
  (deps: Deps): Handler<"getHealth"> =>
  async () => ({ status: "success", uptime_s: uptime(deps.startedAt, deps.now()) });
