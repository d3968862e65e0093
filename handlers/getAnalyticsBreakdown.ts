import { measuresView } from "../domain/analytics.ts";
import { isoFromMicros } from "../domain/views.ts";
import { breakdown } from "../services/analytics.ts";
import { type Deps, type Handler, projectIdOf } from "./types.ts";

/** The measures by model, kind, tag, end state, agent or tool: the top N and the rest. */
export const getAnalyticsBreakdown =
  (deps: Deps): Handler<"getAnalyticsBreakdown"> =>
  async (req) => {
    const found = await breakdown(deps.store, projectIdOf(req), req.query, deps.now());
    return {
      status: "success" as const,
      by: found.by,
      from: isoFromMicros(found.from_us),
      to: isoFromMicros(found.to_us),
      percentiles: found.percentiles,
      items: found.items.map((group) => ({ key: group.key, ...measuresView(group) })),
      other: found.other === null ? null : measuresView(found.other),
    };
  };
