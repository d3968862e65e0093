import { isoInZone } from "../domain/analytics.ts";
import { scoreMeasuresView } from "../domain/scores.ts";
import { isoFromMicros } from "../domain/views.ts";
import { scoreTimeseries } from "../services/analytics.ts";
import { type Deps, type Handler, projectIdOf } from "./types.ts";

/** A score's count, mean, pass rate and label counts per day or hour of the caller's zone. */
export const getScoreTimeseries =
  (deps: Deps): Handler<"getScoreTimeseries"> =>
  async (req) => {
    const found = await scoreTimeseries(deps.store, projectIdOf(req), req.query, deps.now());
    return {
      status: "success" as const,
      name: found.name,
      bucket: found.bucket,
      tz: found.tz,
      from: isoFromMicros(found.from_us),
      to: isoFromMicros(found.to_us),
      points: found.points.map((point, i) => ({
        start: isoInZone(found.starts[i] as number, found.tz),
        ...scoreMeasuresView(point),
      })),
    };
  };
