import { METRICS_CONTENT_TYPE } from "../services/metrics.ts";
import type { Deps, Handler } from "./types.ts";

/** Prometheus's scrape: every metric of this server (the token was checked before: http/metrics.ts). */
export const getMetrics =
  (deps: Deps): Handler<"getMetrics"> =>
  async (_req, reply) => {
    reply.type(METRICS_CONTENT_TYPE);
    return deps.metrics.exposition();
  };
