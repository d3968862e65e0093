import { readiness } from "../services/health.ts";
import type { Deps, Handler } from "./types.ts";

/** Readiness: the database answers, is migrated and takes a committed write; not overloaded. */
export const getReadiness =
  (deps: Deps): Handler<"getReadiness"> =>
  async (req) => {
    const log = (err: unknown) => req.log.error({ err }, "readiness check failed");
    const version = await readiness(deps.store, deps.now(), deps.pressure(), log);
    return { status: "success", database: "ok", schema_version: version };
  };
