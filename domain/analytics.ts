/**
 * Analytics (docs/decisions/024-analytics.md): the pure rules of GET /v2/analytics/timeseries and
 * GET /v2/analytics/breakdown. Time buckets are days or hours of the caller's IANA time zone,
 * found here with Intl (a DST day is 23 or 25 hours long, a zone may be 5:30 ahead of UTC) and
 * handed to storage as instants; storage only counts sessions between two instants. Percentiles
 * are nearest-rank; groups are ranked here, so both engines answer the same top N.
 */

import type { SessionFilter } from "./types.ts";
import { formatCost } from "./views.ts";

export type Bucket = "day" | "hour";
export type BreakdownBy = "model" | "type" | "tag" | "end_state" | "agent" | "tool";
export type BreakdownSort = "cost" | "sessions" | "events" | "failures" | "tokens" | "duration_p95";

/** What storage answers for a bucket or a group: sums, and nearest-rank percentiles in microseconds. */
export interface Measures {
  sessions: number;
  failures: number;
  events: number;
  error_events: number;
  prompt_tokens: number;
  completion_tokens: number;
  cost: number;
  /** Nearest-rank percentiles of the durations, in microseconds; null when there is none. */
  p50_us: number | null;
  p95_us: number | null;
  p99_us: number | null;
}

/** A group of a breakdown: its key (null: the sessions or events that have none). */
export interface Group extends Measures {
  key: string | null;
}

/** What a breakdown asks storage: the grouping, the ranking measure and the top N. */
export interface BreakdownRequest {
  by: BreakdownBy;
  sort: BreakdownSort;
  limit: number;
}

/**
 * What storage answers a breakdown: the top groups, ranked, and the rest together (null: none);
 * `percentiles` "approximate" when they came from a rollup's histogram (exact when absent).
 */
export interface Breakdown {
  items: Group[];
  other: Measures | null;
  percentiles?: "exact" | "approximate";
}

/** What the buckets of one time series count: [lo, hi) instants in microseconds, in order. */
export interface Range {
  lo: number;
  hi: number;
}

export const EMPTY: Measures = {
  sessions: 0,
  failures: 0,
  events: 0,
  error_events: 0,
  prompt_tokens: 0,
  completion_tokens: 0,
  cost: 0,
  p50_us: null,
  p95_us: null,
  p99_us: null,
};

/** The most buckets one series may have. */
export const MAX_BUCKETS = 1000;
/** Buckets of a series when from (or to) is not given: 30 days, or 48 hours. */
export const DEFAULT_BUCKETS: Record<Bucket, number> = { day: 30, hour: 48 };

/**
 * The 1-based rank of the nearest-rank percentile `p` (an integer percentage) of `n` sorted
 * values: the smallest rank r with r / n >= p / 100, i.e. ceil(n * p / 100), in integers as SQL
 * computes it ((n * p + 99) / 100).
 */
export const percentileRank = (n: number, p: number) => Math.floor((n * p + 99) / 100);

/** The nearest-rank percentile of values (any order): the smallest value with at least p% of the values <= it. */
export function nearestRank(values: readonly number[], p: number): number | null {
  if (values.length === 0) return null;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[percentileRank(sorted.length, p) - 1] ?? null;
}

// ---------------------------------------------------------------- rollups

/**
 * The time series' rollups (docs/decisions/026-analytics-rollups.md): per 15 minutes of init_us,
 * so that every zone's hour and day edges (+5:30 and +5:45 included) are slot edges.
 */
export const SLOT_US = 900_000_000;

/** Relative width of a histogram bucket of the rollups: bucket k >= 1 holds [1.02^(k-1), 1.02^k) µs. */
export const HISTOGRAM_STEP = 1.02;

const onSlotEdge = (us: number) => ((us % SLOT_US) + SLOT_US) % SLOT_US === 0;

/** Whether a filter selects every session (no condition but the range, which the series' ranges carry). */
function selectsAll(filter: SessionFilter): boolean {
  return Object.values(filter).every(
    (value) =>
      value === undefined ||
      (Array.isArray(value) && value.length === 0) ||
      (typeof value === "object" && value !== null && !Array.isArray(value) && Object.keys(value).length === 0),
  );
}

/**
 * Whether a series is answered from the rollups: no session filter, and every range's edges on a
 * slot edge (what a slot holds cannot be split). Its sums and counts are then the exact path's;
 * its percentiles come from the histogram (`fromHistogram`), within 2 %.
 */
export function seriesFromRollups(filter: SessionFilter, ranges: readonly Range[]): boolean {
  return selectsAll(filter) && ranges.every((r) => onSlotEdge(r.lo) && onSlotEdge(r.hi));
}

const HOUR_US = 3_600_000_000;
const DAY_US = 86_400_000_000;
const floorTo = (us: number, width: number) => us - (((us % width) + width) % width);
const ceilTo = (us: number, width: number) => floorTo(us + width - 1, width);

/** How a breakdown's range is read from the event rollups (docs/decisions/027-event-rollups.md). */
export interface RollupPlan {
  /** Read exactly, from the events: the range's partial UTC hours at either end. */
  exact: Range[];
  /** Read from the per-hour rollups (level 0). */
  hours: Range[];
  /** Read from the per-day rollups (level 1): the whole UTC days inside. */
  days: Range[];
}

/**
 * Whether and how a breakdown is answered from the event rollups: groupings of events (model,
 * type, tool), no session filter but the range, and at least one whole UTC hour inside it. The
 * partial hours at its ends are read exactly; whole days from the daily rollups, the other whole
 * hours from the hourly ones. Sums and counts are the exact answer's; percentiles come from the
 * histogram (with the exactly read durations put in it), within 2 %.
 */
export function breakdownRollupPlan(filter: SessionFilter, by: BreakdownBy): RollupPlan | undefined {
  if (by !== "model" && by !== "type" && by !== "tool") return undefined;
  const { from_us, to_us, ...rest } = filter;
  if (from_us === undefined || to_us === undefined || !selectsAll(rest)) return undefined;
  const h1 = ceilTo(from_us, HOUR_US);
  const h2 = floorTo(to_us, HOUR_US);
  if (h1 >= h2) return undefined;
  const nonEmpty = (ranges: Range[]) => ranges.filter((r) => r.lo < r.hi);
  const exact = nonEmpty([
    { lo: from_us, hi: h1 },
    { lo: h2, hi: to_us },
  ]);
  const d1 = ceilTo(h1, DAY_US);
  const d2 = floorTo(h2, DAY_US);
  if (d1 >= d2) return { exact, hours: [{ lo: h1, hi: h2 }], days: [] };
  return {
    exact,
    hours: nonEmpty([
      { lo: h1, hi: d1 },
      { lo: d2, hi: h2 },
    ]),
    days: [{ lo: d1, hi: d2 }],
  };
}

/** The histogram bucket of a duration (migration 010's SQL, in JS): 0 for 0 µs, else 1 + floor(log_1.02(d)). */
export const histogramBucket = (us: number) => (us < 1 ? 0 : 1 + Math.floor(Math.log(us) / Math.log(HISTOGRAM_STEP)));

/**
 * The nearest-rank percentile p of a histogram: `buckets` [bucket, n, max_us] in ascending bucket
 * order; the answer is the largest duration that went into the bucket holding the value of rank
 * ceil(n·p/100): at or above the exact value v, and below 1.02·v (both in the bucket
 * [1.02^(k-1), 1.02^k)); exact when the bucket held one distinct value.
 */
export function fromHistogram(buckets: readonly (readonly [number, number, number])[], p: number): number | null {
  const total = buckets.reduce((sum, [, n]) => sum + n, 0);
  if (total === 0) return null;
  const rank = percentileRank(total, p);
  let seen = 0;
  for (const [, n, max] of buckets) {
    seen += n;
    if (seen >= rank) return max;
  }
  return null;
}

// ---------------------------------------------------------------- time zones

interface Wall {
  year: number;
  month: number;
  day: number;
  hour: number;
  minute: number;
  second: number;
}

const formatters = new Map<string, Intl.DateTimeFormat>();

/** Whether Intl knows the zone (IANA names, case-insensitive, and their links: Asia/Calcutta too). */
export function knownZone(name: string): boolean {
  if (name === "" || name.length > 100) return false;
  try {
    formatter(name);
    return true;
  } catch {
    return false;
  }
}

function formatter(zone: string) {
  let found = formatters.get(zone);
  if (!found) {
    found = new Intl.DateTimeFormat("en-US", {
      timeZone: zone,
      hourCycle: "h23",
      year: "numeric",
      month: "numeric",
      day: "numeric",
      hour: "numeric",
      minute: "numeric",
      second: "numeric",
      era: "short",
    });
    formatters.set(zone, found);
  }
  return found;
}

/** The wall-clock time in the zone at the instant (milliseconds since the epoch). */
function wallOf(ms: number, zone: string): Wall {
  const wall: Record<string, number> = {};
  let bc = false;
  for (const part of formatter(zone).formatToParts(ms)) {
    if (part.type === "era") bc = part.value === "BC" || part.value === "B";
    else if (part.type !== "literal") wall[part.type] = Number(part.value);
  }
  const year = bc ? 1 - (wall.year ?? 0) : (wall.year ?? 0);
  return {
    year,
    month: wall.month ?? 1,
    day: wall.day ?? 1,
    hour: wall.hour ?? 0,
    minute: wall.minute ?? 0,
    second: wall.second ?? 0,
  };
}

/** A wall-clock time read as if it were UTC, in milliseconds (years before 100 included). */
function utcOf(w: Wall): number {
  const date = new Date(0);
  date.setUTCFullYear(w.year, w.month - 1, w.day);
  return date.setUTCHours(w.hour, w.minute, w.second, 0);
}

/** The zone's offset from UTC at the instant, in milliseconds (whole seconds of it). */
export function offsetAt(ms: number, zone: string): number {
  const whole = Math.floor(ms / 1000) * 1000;
  return utcOf(wallOf(whole, zone)) - whole;
}

/**
 * The first instant of a local calendar day: local midnight, or where a DST change skips
 * midnight, the first instant that day has; of two midnights (a change back at midnight), the
 * first.
 */
function startOfDay(year: number, month: number, day: number, zone: string): number {
  const midnight = utcOf({ year, month, day, hour: 0, minute: 0, second: 0 });
  const target = midnight;
  const candidates = [offsetAt(midnight - 86_400_000, zone), offsetAt(midnight + 86_400_000, zone)].map(
    (offset) => midnight - offset,
  );
  const fits = candidates.filter((ms) => {
    const w = wallOf(ms, zone);
    return utcOf({ ...w, hour: 0, minute: 0, second: 0 }) === target;
  });
  if (fits.length > 0) return Math.min(...fits);
  // Midnight skipped and neither offset lands in the day: the day starts at its first second.
  let lo = Math.min(...candidates) - 86_400_000;
  let hi = Math.max(...candidates) + 86_400_000;
  while (hi - lo > 1000) {
    const mid = Math.floor((lo + hi) / 2000) * 1000;
    const w = wallOf(mid, zone);
    if (utcOf({ ...w, hour: 0, minute: 0, second: 0 }) < target) lo = mid;
    else hi = mid;
  }
  return hi;
}

/** The start of the bucket that holds the instant (milliseconds). */
export function bucketFloor(ms: number, bucket: Bucket, zone: string): number {
  const w = wallOf(ms, zone);
  if (bucket === "day") return startOfDay(w.year, w.month, w.day, zone);
  // The local hour began minute:second ago (sub-second part dropped too).
  const whole = Math.floor(ms / 1000) * 1000;
  return whole - (w.minute * 60 + w.second) * 1000;
}

/** The start of the bucket after the one that starts at `start`. */
export function nextBucket(start: number, bucket: Bucket, zone: string): number {
  if (bucket === "day") {
    const w = wallOf(start, zone);
    const next = new Date(utcOf({ ...w, hour: 12, minute: 0, second: 0 }) + 86_400_000);
    return startOfDay(next.getUTCFullYear(), next.getUTCMonth() + 1, next.getUTCDate(), zone);
  }
  // An hour later, then back to the local hour's start should an offset change of less than an
  // hour (Australia/Lord_Howe) have moved the minutes.
  const next = start + 3_600_000;
  const w = wallOf(next, zone);
  const back = (w.minute * 60 + w.second) * 1000;
  return back > 0 && next - back > start ? next - back : next;
}

/** The start of the bucket before the one that starts at `start`. */
export function previousBucket(start: number, bucket: Bucket, zone: string): number {
  return bucketFloor(start - 1, bucket, zone);
}

const pad = (n: number, width = 2) => String(Math.abs(n)).padStart(width, "0");

/** The instant (milliseconds) as the zone's wall-clock time with its offset: 2026-03-29T00:00:00+01:00. */
export function isoInZone(ms: number, zone: string): string {
  const w = wallOf(ms, zone);
  const offset = Math.round(offsetAt(ms, zone) / 60_000);
  const year = w.year < 0 ? `-${pad(w.year, 6)}` : w.year > 9999 ? `+${pad(w.year, 6)}` : pad(w.year, 4);
  const sign = offset < 0 ? "-" : "+";
  return `${year}-${pad(w.month)}-${pad(w.day)}T${pad(w.hour)}:${pad(w.minute)}:${pad(w.second)}${sign}${pad(
    Math.trunc(offset / 60),
  )}:${pad(offset % 60)}`;
}

/** A series' range and buckets, or why it cannot be made (the parameter to name and the rule). */
export type Series =
  | { ok: true; from_us: number; to_us: number; starts: number[]; ranges: Range[] }
  | { ok: false; path: "from" | "to"; message: string };

/**
 * The buckets of a series over [from, to) in the zone (instants in microseconds; either may be
 * absent). Without `to`: the end of the bucket that holds `now`. Without `from`: 30 days or 48
 * hours of buckets before `to`, the last one the bucket holding the instant before `to`. Every
 * bucket that overlaps [from, to) is one, counting only what is inside [from, to); `starts` are
 * the buckets' own starts (the first may be before `from`).
 */
export function seriesBuckets(
  bucket: Bucket,
  zone: string,
  now_us: number,
  from_us: number | undefined,
  to_us: number | undefined,
): Series {
  const nowMs = Math.floor(now_us / 1000);
  const to = to_us ?? nextBucket(bucketFloor(nowMs, bucket, zone), bucket, zone) * 1000;
  let from = from_us;
  if (from === undefined) {
    let start = bucketFloor(Math.ceil(to / 1000) - 1, bucket, zone);
    for (let i = 1; i < DEFAULT_BUCKETS[bucket]; i += 1) start = previousBucket(start, bucket, zone);
    from = start * 1000;
  }
  if (to <= from) return { ok: false, path: "to", message: "must be after from" };
  // A quick bound before walking: a day is at least 22 hours, an hour bucket at least 30 minutes.
  const shortest = bucket === "day" ? 22 * 3_600_000_000 : 1_800_000_000;
  if ((to - from) / shortest > 2 * MAX_BUCKETS + 2) return tooMany(bucket);
  const starts: number[] = [];
  const ranges: Range[] = [];
  let start = bucketFloor(Math.floor(from / 1000), bucket, zone);
  while (start * 1000 < to) {
    if (starts.length === MAX_BUCKETS) return tooMany(bucket);
    const next = nextBucket(start, bucket, zone);
    starts.push(start);
    ranges.push({ lo: Math.max(start * 1000, from), hi: Math.min(next * 1000, to) });
    start = next;
  }
  return { ok: true, from_us: from, to_us: to, starts, ranges };
}

const tooMany = (bucket: Bucket): Series => ({
  ok: false,
  path: "from",
  message: `from..to spans more than ${MAX_BUCKETS} ${bucket} buckets; narrow the range or use bucket=day`,
});

// ---------------------------------------------------------------- ranking

const measureOf: Record<BreakdownSort, (g: Measures) => number | null> = {
  cost: (g) => g.cost,
  sessions: (g) => g.sessions,
  events: (g) => g.events,
  failures: (g) => g.failures,
  tokens: (g) => g.prompt_tokens + g.completion_tokens,
  duration_p95: (g) => g.p95_us,
};

/** Keys in order: strings by code unit, null last. */
export function compareKeys(a: string | null, b: string | null): number {
  if (a === b) return 0;
  if (a === null) return 1;
  if (b === null) return -1;
  return a < b ? -1 : 1;
}

/** The groups by the measure, largest first (null last), then by key; the first `limit`, and the rest. */
export function rankGroups(groups: readonly Group[], sort: BreakdownSort, limit: number) {
  const measure = measureOf[sort];
  const ordered = [...groups].sort((a, b) => {
    const x = measure(a);
    const y = measure(b);
    if (x !== y) {
      if (x === null) return 1;
      if (y === null) return -1;
      return y - x;
    }
    return compareKeys(a.key, b.key);
  });
  return { top: ordered.slice(0, limit), rest: ordered.slice(limit) };
}

/** The sums of groups (their percentiles are not summed: null here, computed by the caller). */
export function sumGroups(groups: readonly Measures[]): Measures {
  const sum = { ...EMPTY };
  for (const g of groups) {
    sum.sessions += g.sessions;
    sum.failures += g.failures;
    sum.events += g.events;
    sum.error_events += g.error_events;
    sum.prompt_tokens += g.prompt_tokens;
    sum.completion_tokens += g.completion_tokens;
    sum.cost += g.cost;
  }
  return sum;
}

// ---------------------------------------------------------------- views

/** Measures as the API answers them: cost as token_cost writes it (S6), percentiles in milliseconds. */
export function measuresView(m: Measures) {
  const ms = (us: number | null) => (us === null ? null : us / 1000);
  return {
    sessions: m.sessions,
    failures: m.failures,
    events: m.events,
    error_events: m.error_events,
    prompt_tokens: m.prompt_tokens,
    completion_tokens: m.completion_tokens,
    cost: formatCost(m.cost),
    duration_ms: { p50: ms(m.p50_us), p95: ms(m.p95_us), p99: ms(m.p99_us) },
  };
}
