import { SchemaMismatch } from "../db/store.ts";
import { serviceUnavailable, storageFault } from "./errors.ts";
import type { Deps, Handler } from "./types.ts";

/** Readiness: the database answers, is migrated and takes a committed write; not overloaded. */
export const getReadiness =
  (deps: Deps): Handler<"getReadiness"> =>
  async (req) => {
    const pressure = deps.pressure();
    if (pressure) throw serviceUnavailable(`Not ready: ${pressure}`, 5);
    try {
      const version = await deps.store.ping(new Date(deps.now()).toISOString());
      return { status: "success", database: "ok", schema_version: version };
    } catch (err) {
      req.log.error({ err }, "readiness check failed");
      const reason = err instanceof SchemaMismatch ? err.message : storageFault(err);
      throw serviceUnavailable(`Not ready: ${reason ?? "the database cannot be written"}`, 5);
    }
  };
