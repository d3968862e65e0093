import type { Deps, Handler } from "./types.ts";

/** otlp.md T4: accepted and not stored, so that exporters do not log errors. */
export const exportMetrics =
  (_deps: Deps): Handler<"exportMetrics"> =>
  async () => ({});
