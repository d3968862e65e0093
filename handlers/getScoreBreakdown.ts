import { scoreMeasuresView } from "../domain/scores.ts";
import { isoFromMicros } from "../domain/views.ts";
import { scoreBreakdown } from "../services/analytics.ts";
import { type Deps, type Handler, projectIdOf } from "./types.ts";

/** A score by model, agent, tag or tool: the top N groups and the rest. */
export const getScoreBreakdown =
  (deps: Deps): Handler<"getScoreBreakdown"> =>
  async (req) => {
    const found = await scoreBreakdown(deps.store, projectIdOf(req), req.query, deps.now());
    return {
      status: "success" as const,
      name: found.name,
      by: found.by,
      from: isoFromMicros(found.from_us),
      to: isoFromMicros(found.to_us),
      items: found.items.map((group) => ({ key: group.key, ...scoreMeasuresView(group.sums) })),
      other: found.other === null ? null : scoreMeasuresView(found.other),
    };
  };
