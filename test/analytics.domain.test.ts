/**
 * domain/analytics.ts: tz buckets (DST days of 23 and 25 hours, half-hour zones, hours across a
 * change), the default range, the bucket limit, nearest-rank percentiles, the ranking of groups.
 */
import t from "tap";
import {
  bucketFloor,
  EMPTY,
  type Group,
  isoInZone,
  knownZone,
  MAX_BUCKETS,
  nearestRank,
  nextBucket,
  percentileRank,
  rankGroups,
  seriesBuckets,
} from "../domain/analytics.ts";

const ms = (iso: string) => Date.parse(iso);
const us = (iso: string) => Date.parse(iso) * 1000;

t.test("knownZone: IANA names and links, any case; nothing else", async (t) => {
  for (const name of ["Europe/Lisbon", "europe/lisbon", "UTC", "Asia/Kolkata", "Asia/Calcutta", "America/St_Johns"])
    t.ok(knownZone(name), name);
  for (const bad of ["Mars/Olympus", "", "+01:00x", "Europe/Lisbon/x", "x".repeat(200)])
    t.notOk(knownZone(bad), JSON.stringify(bad));
});

t.test("days in Europe/Lisbon around both DST changes of 2026: 23 and 25 hours", async (t) => {
  const zone = "Europe/Lisbon";
  // 2026-03-29: 01:00 WET -> 02:00 WEST. 2026-10-25: 02:00 WEST -> 01:00 WET.
  const spring = bucketFloor(ms("2026-03-29T12:00:00Z"), "day", zone);
  t.equal(new Date(spring).toISOString(), "2026-03-29T00:00:00.000Z");
  const after = nextBucket(spring, "day", zone);
  t.equal(new Date(after).toISOString(), "2026-03-29T23:00:00.000Z");
  t.equal((after - spring) / 3_600_000, 23, "the spring day has 23 hours");
  t.equal(isoInZone(spring, zone), "2026-03-29T00:00:00+00:00");
  t.equal(isoInZone(after, zone), "2026-03-30T00:00:00+01:00");

  const autumn = bucketFloor(ms("2026-10-25T12:00:00Z"), "day", zone);
  t.equal(new Date(autumn).toISOString(), "2026-10-24T23:00:00.000Z");
  const next = nextBucket(autumn, "day", zone);
  t.equal((next - autumn) / 3_600_000, 25, "the autumn day has 25 hours");
  t.equal(isoInZone(autumn, zone), "2026-10-25T00:00:00+01:00");
  t.equal(isoInZone(next, zone), "2026-10-26T00:00:00+00:00");
});

t.test("hours in America/New_York across DST: 02:00 skipped in March, 01:00 twice in November", async (t) => {
  const zone = "America/New_York";
  const starts = (from: string, n: number) => {
    const out: string[] = [];
    let s = bucketFloor(ms(from), "hour", zone);
    for (let i = 0; i < n; i += 1) {
      out.push(isoInZone(s, zone));
      s = nextBucket(s, "hour", zone);
    }
    return out;
  };
  t.strictSame(starts("2026-03-08T06:10:00Z", 3), [
    "2026-03-08T01:00:00-05:00",
    "2026-03-08T03:00:00-04:00",
    "2026-03-08T04:00:00-04:00",
  ]);
  t.strictSame(starts("2026-11-01T04:59:00Z", 4), [
    "2026-11-01T00:00:00-04:00",
    "2026-11-01T01:00:00-04:00",
    "2026-11-01T01:00:00-05:00",
    "2026-11-01T02:00:00-05:00",
  ]);
});

t.test("half-hour zones: Asia/Kolkata days and hours start at :30 UTC", async (t) => {
  const zone = "Asia/Kolkata";
  const day = bucketFloor(ms("2026-11-22T20:00:00Z"), "day", zone);
  t.equal(new Date(day).toISOString(), "2026-11-22T18:30:00.000Z", "23 Nov 00:00 IST");
  t.equal(isoInZone(day, zone), "2026-11-23T00:00:00+05:30");
  const hour = bucketFloor(ms("2026-11-22T20:10:00Z"), "hour", zone);
  t.equal(new Date(hour).toISOString(), "2026-11-22T19:30:00.000Z");
  t.equal(isoInZone(ms("2026-11-22T20:10:00Z"), "America/St_Johns"), "2026-11-22T16:40:00-03:30");
});

t.test("a zone whose DST change skips midnight: the day starts at 01:00", async (t) => {
  // America/Santiago: 2026-09-06 00:00 -> 01:00.
  const zone = "America/Santiago";
  const s = bucketFloor(ms("2026-09-06T12:00:00Z"), "day", zone);
  t.equal(isoInZone(s, zone), "2026-09-06T01:00:00-03:00");
  t.equal(
    isoInZone(nextBucket(bucketFloor(ms("2026-09-05T12:00:00Z"), "day", zone), "day", zone), zone),
    "2026-09-06T01:00:00-03:00",
  );
});

t.test("seriesBuckets: the range, partial end buckets, defaults and limits", async (t) => {
  const lisbon = seriesBuckets("day", "Europe/Lisbon", 0, us("2026-03-28T12:00:00Z"), us("2026-03-31T00:00:00Z"));
  if (!lisbon.ok) throw new Error("not ok");
  t.strictSame(
    lisbon.starts.map((s) => isoInZone(s, "Europe/Lisbon")),
    [
      "2026-03-28T00:00:00+00:00",
      "2026-03-29T00:00:00+00:00",
      "2026-03-30T00:00:00+01:00",
      "2026-03-31T00:00:00+01:00",
    ],
  );
  t.strictSame(
    lisbon.ranges[0],
    { lo: us("2026-03-28T12:00:00Z"), hi: us("2026-03-29T00:00:00Z") },
    "from cuts the first",
  );
  t.strictSame(
    lisbon.ranges[3],
    { lo: us("2026-03-30T23:00:00Z"), hi: us("2026-03-31T00:00:00Z") },
    "to cuts the last",
  );

  const now = us("2026-11-22T10:15:00Z");
  const month = seriesBuckets("day", "UTC", now, undefined, undefined);
  if (!month.ok) throw new Error("not ok");
  t.equal(month.starts.length, 30, "30 days by default");
  t.equal(month.to_us, us("2026-11-23T00:00:00Z"), "ending with today's bucket");
  t.equal(month.from_us, us("2026-10-24T00:00:00Z"));
  const hours = seriesBuckets("hour", "Asia/Kolkata", now, undefined, undefined);
  if (!hours.ok) throw new Error("not ok");
  t.equal(hours.starts.length, 48, "48 hours by default");
  t.equal(hours.to_us, us("2026-11-22T10:30:00Z"));
  const before = seriesBuckets("day", "UTC", now, undefined, us("2026-01-10T06:00:00Z"));
  if (!before.ok) throw new Error("not ok");
  t.equal(before.starts.length, 30, "30 buckets ending with to's");
  t.equal(before.from_us, us("2025-12-12T00:00:00Z"));

  t.match(seriesBuckets("day", "UTC", now, us("2026-01-02T00:00:00Z"), us("2026-01-01T00:00:00Z")), {
    ok: false,
    path: "to",
  });
  t.match(seriesBuckets("day", "UTC", now, us("2026-01-01T00:00:00Z"), us("2026-01-01T00:00:00Z")), {
    ok: false,
    path: "to",
  });
  const max = seriesBuckets(
    "hour",
    "UTC",
    now,
    us("2026-01-01T00:00:00Z"),
    us("2026-01-01T00:00:00Z") + MAX_BUCKETS * 3.6e9,
  );
  t.equal(max.ok && max.starts.length, MAX_BUCKETS, "exactly the limit is allowed");
  t.match(
    seriesBuckets("hour", "UTC", now, us("2026-01-01T00:00:00Z"), us("2026-01-01T00:00:00Z") + MAX_BUCKETS * 3.6e9 + 1),
    { ok: false, path: "from" },
  );
  t.match(seriesBuckets("day", "UTC", now, 0, us("9999-01-01T00:00:00Z")), { ok: false, path: "from" });
});

t.test("nearest rank: the smallest value with at least p% of values <= it", async (t) => {
  t.equal(nearestRank([], 50), null);
  t.equal(nearestRank([7], 99), 7);
  const ten = [10, 1, 9, 2, 8, 3, 7, 4, 6, 5];
  t.equal(nearestRank(ten, 50), 5);
  t.equal(nearestRank(ten, 95), 10);
  t.equal(nearestRank(ten, 90), 9);
  t.equal(percentileRank(20, 95), 19);
  t.equal(percentileRank(100, 99), 99);
  t.equal(percentileRank(101, 99), 100);
  t.equal(percentileRank(1, 50), 1);
});

t.test("rankGroups: by the measure, ties by key, null keys and null measures last", async (t) => {
  const g = (key: string | null, cost: number, p95: number | null = null): Group => ({
    ...EMPTY,
    key,
    cost,
    p95_us: p95,
  });
  const groups = [g("b", 1), g(null, 5), g("a", 1), g("c", 3, 10), g("d", 0, 20)];
  const { top, rest } = rankGroups(groups, "cost", 3);
  t.strictSame(
    top.map((x) => x.key),
    [null, "c", "a"],
  );
  t.strictSame(
    rest.map((x) => x.key),
    ["b", "d"],
  );
  t.strictSame(
    rankGroups(groups, "duration_p95", 10).top.map((x) => x.key),
    ["d", "c", "a", "b", null],
  );
});
