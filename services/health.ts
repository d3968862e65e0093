/** Liveness (GET /healthz, /health) and readiness (GET /readyz: the database answers, is migrated and takes a committed write; not overloaded). */
import { SchemaMismatch, StorageFault } from "../db/errors.ts";
import type { Store } from "../db/store.ts";
import { serviceUnavailable } from "../domain/errors.ts";

/** The schema version; a 503 naming the reason when the server is not ready. */
export async function readiness(
  store: Store,
  now: number,
  pressure: string | undefined,
  log: (err: unknown) => void,
): Promise<number> {
  if (pressure) throw serviceUnavailable(`Not ready: ${pressure}`, 5);
  try {
    return await store.ping(new Date(now).toISOString());
  } catch (err) {
    log(err);
    const reason = err instanceof SchemaMismatch ? err.message : err instanceof StorageFault ? err.reason : undefined;
    throw serviceUnavailable(`Not ready: ${reason ?? "the database cannot be written"}`, 5);
  }
}

/** Liveness: whole seconds since the app was built. */
export const uptime = (startedAt: number, now: number) => Math.floor((now - startedAt) / 1000);
