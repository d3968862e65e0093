import { isoInZone, measuresView } from "../domain/analytics.ts";
import { isoFromMicros } from "../domain/views.ts";
import { timeseries } from "../services/analytics.ts";
import { type Deps, type Handler, projectIdOf } from "./types.ts";

/** Sessions, events, failures, tokens, cost and duration percentiles per day or hour of the caller's zone. */
export const getAnalyticsTimeseries =
  (deps: Deps): Handler<"getAnalyticsTimeseries"> =>
  async (req) => {
    const found = await timeseries(deps.store, projectIdOf(req), req.query ?? {}, deps.now());
    return {
      status: "success" as const,
      bucket: found.bucket,
      tz: found.tz,
      from: isoFromMicros(found.from_us),
      to: isoFromMicros(found.to_us),
      percentiles: found.percentiles,
      points: found.points.map((point, i) => ({
        start: isoInZone(found.starts[i] as number, found.tz),
        ...measuresView(point),
      })),
    };
  };
