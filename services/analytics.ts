/**
 * The analytics API (issue 15; docs/decisions/024-analytics.md): a time series of the project's
 * sessions in the caller's time zone, and breakdowns by model, kind, tag, end state, agent and
 * tool, each with every filter of the session list (FilterFields: a filter added there applies
 * here too).
 */
import type { Store } from "../db/store.ts";
import { type Bucket, knownZone, seriesBuckets, seriesFromRollups } from "../domain/analytics.ts";
import { type ErrorDetail, invalidParameters } from "../domain/errors.ts";
import { rankScoreGroups } from "../domain/scores.ts";
import { parseTimestamp } from "../domain/timestamps.ts";
import type { operations } from "../generated/api.ts";
import { sessionFilter } from "./reads.ts";

type SeriesQuery = NonNullable<operations["getAnalyticsTimeseries"]["parameters"]["query"]>;
type BreakdownQuery = operations["getAnalyticsBreakdown"]["parameters"]["query"];
type ScoreSeriesQuery = operations["getScoreTimeseries"]["parameters"]["query"];
type ScoreBreakdownQuery = operations["getScoreBreakdown"]["parameters"]["query"];

/** A breakdown's range when from is not given: 30 days before `to`. */
const DEFAULT_SPAN_US = 30 * 86_400_000_000;
const TZ_RULE = "is not a time zone Intl knows; give an IANA name such as Europe/Lisbon, Asia/Kolkata or UTC";

/** ajv has checked the formats (G6); the instant of a given timestamp. */
const instant = (text: string | undefined) => (text === undefined ? undefined : parseTimestamp(text)?.us);

/** GET /v2/analytics/timeseries: one point per bucket of the range, every bucket present. */
export async function timeseries(store: Store, projectId: string, query: SeriesQuery, nowMs: number) {
  const { bucket = "day" as Bucket, tz = "UTC", from, to, ...fields } = query;
  const errors: ErrorDetail[] = [];
  const filter = sessionFilter(fields, "query", errors);
  if (!knownZone(tz)) errors.push({ path: "query.tz", message: TZ_RULE });
  const series = errors.length > 0 ? undefined : seriesBuckets(bucket, tz, nowMs * 1000, instant(from), instant(to));
  if (series && !series.ok) errors.push({ path: `query.${series.path}`, message: series.message });
  if (errors.length > 0 || !series?.ok) throw invalidParameters(errors);
  const points = await store.analyticsSeries(projectId, filter, series.ranges);
  // The store reads the rollups by the same rule (docs/decisions/026-analytics-rollups.md).
  const percentiles = seriesFromRollups(filter, series.ranges) ? ("approximate" as const) : ("exact" as const);
  return { bucket, tz, from_us: series.from_us, to_us: series.to_us, starts: series.starts, percentiles, points };
}

/** GET /v2/analytics/breakdown: the top groups by the measure, and the rest as `other`. */
export async function breakdown(store: Store, projectId: string, query: BreakdownQuery, nowMs: number) {
  const { by, limit = 10, sort = "cost", from, to, ...fields } = query;
  const errors: ErrorDetail[] = [];
  const filter = sessionFilter(fields, "query", errors);
  const { from_us, to_us } = breakdownRange(from, to, nowMs, errors);
  if (errors.length > 0) throw invalidParameters(errors);
  const { percentiles = "exact", ...found } = await store.analyticsBreakdown(
    projectId,
    { ...filter, from_us, to_us },
    { by, sort, limit },
  );
  return { by, from_us, to_us, percentiles, ...found };
}

/** The range of a breakdown: `to` (now without it) and `from` (30 days before without it). */
function breakdownRange(from: string | undefined, to: string | undefined, nowMs: number, errors: ErrorDetail[]) {
  const to_us = instant(to) ?? nowMs * 1000;
  const from_us = instant(from) ?? to_us - DEFAULT_SPAN_US;
  if (to_us <= from_us) errors.push({ path: "query.to", message: "must be after from" });
  return { from_us, to_us };
}

/** GET /v2/analytics/scores: a score's measures per bucket of the range, every bucket present. */
export async function scoreTimeseries(store: Store, projectId: string, query: ScoreSeriesQuery, nowMs: number) {
  const { name, source, bucket = "day" as Bucket, tz = "UTC", from, to } = query;
  if (!knownZone(tz)) throw invalidParameters([{ path: "query.tz", message: TZ_RULE }]);
  const series = seriesBuckets(bucket, tz, nowMs * 1000, instant(from), instant(to));
  if (!series.ok) throw invalidParameters([{ path: `query.${series.path}`, message: series.message }]);
  const points = await store.scoreSeries(projectId, { name, source }, series.ranges);
  return { name, bucket, tz, from_us: series.from_us, to_us: series.to_us, starts: series.starts, points };
}

/** GET /v2/analytics/scores/breakdown: a score's top groups by the measure, and the rest. */
export async function scoreBreakdown(store: Store, projectId: string, query: ScoreBreakdownQuery, nowMs: number) {
  const { name, by, source, limit = 10, sort = "count", from, to } = query;
  const errors: ErrorDetail[] = [];
  const range = breakdownRange(from, to, nowMs, errors);
  if (errors.length > 0) throw invalidParameters(errors);
  const groups = await store.scoreBreakdown(projectId, { name, source, by, ...range });
  const ranked = rankScoreGroups(new Map(groups.map((g) => [g.key, g.sums])), sort, limit);
  return { name, by, ...range, ...ranked };
}
