/**
 * GET /v2/analytics/timeseries (issue 15, docs/decisions/024-analytics.md): numbers, not shapes.
 * A small data set written through the write API with explicit timestamps, whose buckets, sums
 * and nearest-rank percentiles are worked out by hand in the comments: DST days of 23 and 25
 * hours (Europe/Lisbon), an hour repeated (America/New_York), a half-hour zone (Asia/Kolkata),
 * empty buckets, filters, the default range, and every bad parameter. STORE=postgres and
 * STORE=sqlite-thread run it on those stores.
 */
import t from "tap";
import { build, OTHER_PROJECT_KEY, type TestApp } from "./helper.ts";
import { createEvents, isBadParameter, read } from "./read.helpers.ts";

const EMPTY_POINT = {
  sessions: 0,
  failures: 0,
  events: 0,
  error_events: 0,
  prompt_tokens: 0,
  completion_tokens: 0,
  cost: "0.00",
  duration_ms: { p50: null, p95: null, p99: null },
};

const plus = (iso: string, ms: number) => new Date(Date.parse(iso) + ms).toISOString();
const series = async (api: TestApp, query: string) => {
  const res = await read(api, `/v2/analytics/timeseries?${query}`);
  if (res.statusCode !== 200) throw new Error(`timeseries answered ${res.statusCode}: ${res.body}`);
  return res.json();
};
const q = (params: Record<string, string>) => new URLSearchParams(params).toString();

/** A session with an end (duration = endMs) and its events. */
async function session(
  api: TestApp,
  id: string,
  init: string,
  fields: Record<string, unknown>,
  events: Record<string, unknown>[] = [],
  key?: string,
) {
  const jwt = await api.session(id, { init_timestamp: init, ...fields }, key);
  if (events.length > 0) await createEvents(api, jwt, events);
  return jwt;
}

t.test("Europe/Lisbon, spring: a 23-hour day, an empty day, sums and percentiles per day", async (t) => {
  const api = await build(t);
  // A: 23:30 WET on the 28th; 10 s; an llm event and a tool event.
  await session(api, "A", "2026-03-28T23:30:00Z", { end_timestamp: "2026-03-28T23:30:10Z", end_state: "Success" }, [
    {
      type: "llm",
      id: "a1",
      init_timestamp: "2026-03-28T23:30:01Z",
      model: "m1",
      prompt_tokens: 100,
      completion_tokens: 10,
      cost: 0.25,
    },
    { type: "tool", id: "a2", init_timestamp: "2026-03-28T23:30:02Z", name: "search" },
  ]);
  // B: 00:00 WET on the 29th exactly (the day's first instant); 2 s; failed; llm and error.
  await session(
    api,
    "B",
    "2026-03-29T00:00:00Z",
    { end_timestamp: "2026-03-29T00:00:02Z", end_state: "Fail", tags: ["x"] },
    [
      {
        type: "llm",
        id: "b1",
        init_timestamp: "2026-03-29T00:00:01Z",
        model: "m1",
        prompt_tokens: 200,
        completion_tokens: 20,
        cost: 0.5,
      },
      { type: "error", id: "b2", init_timestamp: "2026-03-29T00:00:01.5Z", trigger_event_id: "b1" },
    ],
  );
  // C: 23:59:59 WEST on the 29th (22:59:59Z: still the 29th, which ended at 23:00Z); not ended:
  // its duration runs to its latest event's end, 4 s.
  await session(api, "C", "2026-03-29T22:59:59Z", {}, [
    {
      type: "tool",
      id: "c1",
      init_timestamp: "2026-03-29T23:00:00Z",
      end_timestamp: "2026-03-29T23:00:03Z",
      name: "fetch",
    },
  ]);
  // D: 00:00 WEST on the 30th (23:00Z on the 29th); 1 s; no events.
  await session(api, "D", "2026-03-29T23:00:00Z", {
    end_timestamp: "2026-03-29T23:00:01Z",
    end_state: "Indeterminate",
  });
  // After the range, and another project's session inside it: neither is counted.
  await session(api, "E", "2026-03-31T12:00:00Z", { end_state: "Fail" });
  await session(api, "theirs", "2026-03-29T10:00:00Z", { end_state: "Fail" }, [], OTHER_PROJECT_KEY);

  const range = { tz: "Europe/Lisbon", from: "2026-03-27T00:00:00Z", to: "2026-03-31T00:00:00+01:00" };
  const body = await series(api, q(range));
  t.equal(body.status, "success");
  t.equal(body.bucket, "day", "day by default");
  t.equal(body.tz, "Europe/Lisbon");
  t.equal(body.from, "2026-03-27T00:00:00Z");
  t.equal(body.to, "2026-03-30T23:00:00Z");
  t.strictSame(body.points, [
    { start: "2026-03-27T00:00:00+00:00", ...EMPTY_POINT },
    {
      start: "2026-03-28T00:00:00+00:00",
      sessions: 1,
      failures: 0,
      events: 2,
      error_events: 0,
      prompt_tokens: 100,
      completion_tokens: 10,
      cost: "0.25",
      duration_ms: { p50: 10000, p95: 10000, p99: 10000 },
    },
    {
      // 23 hours: B and C. Durations 2000 and 4000: p50 is the 1st (ceil(2 * 0.5)), p95 the 2nd.
      start: "2026-03-29T00:00:00+00:00",
      sessions: 2,
      failures: 1,
      events: 3,
      error_events: 1,
      prompt_tokens: 200,
      completion_tokens: 20,
      cost: "0.50",
      duration_ms: { p50: 2000, p95: 4000, p99: 4000 },
    },
    {
      start: "2026-03-30T00:00:00+01:00",
      sessions: 1,
      failures: 0,
      events: 0,
      error_events: 0,
      prompt_tokens: 0,
      completion_tokens: 0,
      cost: "0.00",
      duration_ms: { p50: 1000, p95: 1000, p99: 1000 },
    },
  ]);

  t.test("the same sessions in UTC: C and D fall on the 29th", async (t) => {
    const utc = await series(api, q({ from: "2026-03-28T00:00:00Z", to: "2026-03-30T00:00:00Z" }));
    t.equal(utc.tz, "UTC", "UTC by default");
    t.strictSame(
      utc.points.map((p: { start: string; sessions: number }) => [p.start, p.sessions]),
      [
        ["2026-03-28T00:00:00+00:00", 1],
        ["2026-03-29T00:00:00+00:00", 3],
      ],
    );
  });

  t.test("filters of the session list apply", async (t) => {
    const failed = await series(api, q({ ...range, end_state: "failed" }));
    t.strictSame(
      failed.points.map((p: { sessions: number; cost: string }) => [p.sessions, p.cost]),
      [
        [0, "0.00"],
        [0, "0.00"],
        [1, "0.50"],
        [0, "0.00"],
      ],
      "end_state (with its aliases)",
    );
    const sessions = async (filters: Record<string, string>) =>
      (await series(api, q({ ...range, ...filters }))).points.map((p: { sessions: number }) => p.sessions);
    t.strictSame(await sessions({ has_errors: "true" }), [0, 0, 1, 0], "has_errors");
    t.strictSame(await sessions({ model: "m1" }), [0, 1, 1, 0], "model");
    t.strictSame(await sessions({ min_duration_ms: "4000" }), [0, 1, 1, 0], "min_duration_ms");
    t.strictSame(await sessions({ max_cost: "0.25" }), [0, 1, 1, 1], "max_cost");
    const tagged = await series(api, q({ ...range, tag: "x" }));
    t.equal(tagged.points[2].sessions, 1, "tag");
    t.equal(tagged.points[2].events, 2);
    const agentless = await series(api, q({ ...range, agent_id: "nobody" }));
    t.strictSame(
      agentless.points,
      failed.points.map((p: { start: string }) => ({ start: p.start, ...EMPTY_POINT })),
      "agent_id: every bucket present, empty",
    );
  });

  t.test("from and to cut the first and last buckets", async (t) => {
    const cut = await series(
      api,
      q({ tz: "Europe/Lisbon", from: "2026-03-29T12:00:00Z", to: "2026-03-29T23:00:00.5Z" }),
    );
    t.strictSame(
      cut.points.map((p: { start: string; sessions: number }) => [p.start, p.sessions]),
      [
        ["2026-03-29T00:00:00+00:00", 1],
        ["2026-03-30T00:00:00+01:00", 1],
      ],
      "B (before from) is left out; D (before to) is in; C is in",
    );
  });
});

t.test("Europe/Lisbon, autumn: a 25-hour day; nearest-rank percentiles of 21 durations", async (t) => {
  const api = await build(t);
  // The 25th runs from 23:00Z on the 24th to 00:00Z on the 26th. Sessions k = 1..20 start k-1
  // hours into it and last k seconds; one more at 23:30Z on the 25th (23:30 WET: the 25th's
  // 25th hour) lasts 0 s. Durations 0, 1, ..., 20 s: p50 = the 11th = 10 s, p95 = the 20th
  // (ceil(21 * 0.95) = 20) = 19 s, p99 = the 21st = 20 s.
  for (let k = 1; k <= 20; k += 1) {
    const init = plus("2026-10-24T23:00:00Z", (k - 1) * 3_600_000);
    await session(api, `k${k}`, init, {
      end_timestamp: plus(init, k * 1000),
      end_state: k % 5 === 0 ? "Fail" : "Success",
    });
  }
  await session(api, "late", "2026-10-25T23:30:00Z", { end_timestamp: "2026-10-25T23:30:00Z" });
  await session(api, "before", "2026-10-24T22:59:59Z", { end_timestamp: "2026-10-24T23:00:00Z" });
  await session(api, "after", "2026-10-26T00:00:00Z", { end_timestamp: "2026-10-26T00:00:00.25Z" });

  const body = await series(
    api,
    q({ tz: "Europe/Lisbon", from: "2026-10-24T00:00:00+01:00", to: "2026-10-27T00:00:00Z" }),
  );
  t.strictSame(
    body.points.map((p: { start: string; sessions: number; failures: number; duration_ms: unknown }) => [
      p.start,
      p.sessions,
      p.failures,
      p.duration_ms,
    ]),
    [
      ["2026-10-24T00:00:00+01:00", 1, 0, { p50: 1000, p95: 1000, p99: 1000 }],
      ["2026-10-25T00:00:00+01:00", 21, 4, { p50: 10000, p95: 19000, p99: 20000 }],
      ["2026-10-26T00:00:00+00:00", 1, 0, { p50: 250, p95: 250, p99: 250 }],
    ],
  );
  // No filter, edges on quarter hours: from the rollups (docs/decisions/026-analytics-rollups.md),
  // exact here as each duration is alone in its histogram bucket; a filter or an edge between
  // quarter hours reads every session.
  t.equal(body.percentiles, "approximate", "no filter: the rollups' histogram");
  const filtered = await series(
    api,
    q({ tz: "Europe/Lisbon", from: "2026-10-24T00:00:00+01:00", to: "2026-10-27T00:00:00Z", min_duration_ms: "0" }),
  );
  t.equal(filtered.percentiles, "exact", "a filter: the exact scan");
  t.strictSame(filtered.points, body.points, "the same numbers");
  const offEdge = await series(
    api,
    q({ tz: "Europe/Lisbon", from: "2026-10-24T00:00:00.5+01:00", to: "2026-10-27T00:00:00Z" }),
  );
  t.equal(offEdge.percentiles, "exact", "from between quarter hours: the exact scan");
});

t.test("hours: America/New_York's repeated 01:00; Asia/Kolkata's days start at 18:30Z", async (t) => {
  const api = await build(t);
  await session(api, "edt", "2026-11-01T05:30:00Z", {}); // 01:30 EDT
  await session(api, "est", "2026-11-01T06:30:00Z", {}); // 01:30 EST, an hour later
  await session(api, "est2", "2026-11-01T06:45:00Z", {});
  const ny = await series(
    api,
    q({ bucket: "hour", tz: "America/New_York", from: "2026-11-01T04:00:00Z", to: "2026-11-01T08:00:00Z" }),
  );
  t.equal(ny.bucket, "hour");
  t.strictSame(
    ny.points.map((p: { start: string; sessions: number }) => [p.start, p.sessions]),
    [
      ["2026-11-01T00:00:00-04:00", 0],
      ["2026-11-01T01:00:00-04:00", 1],
      ["2026-11-01T01:00:00-05:00", 2],
      ["2026-11-01T02:00:00-05:00", 0],
    ],
  );

  await session(api, "ist-22", "2026-11-22T18:29:59.999999Z", {});
  await session(api, "ist-23", "2026-11-22T18:30:00Z", {});
  const kolkata = await series(
    api,
    q({ tz: "Asia/Kolkata", from: "2026-11-22T00:00:00+05:30", to: "2026-11-24T00:00:00+05:30" }),
  );
  t.strictSame(
    kolkata.points.map((p: { start: string; sessions: number }) => [p.start, p.sessions]),
    [
      ["2026-11-22T00:00:00+05:30", 1],
      ["2026-11-23T00:00:00+05:30", 1],
    ],
  );
  const utc = await series(api, q({ from: "2026-11-22T00:00:00Z", to: "2026-11-23T00:00:00Z" }));
  t.equal(utc.points[0].sessions, 2, "in UTC both are on the 22nd");
  const hours = await series(
    api,
    q({ bucket: "hour", tz: "Asia/Kolkata", from: "2026-11-22T18:00:00Z", to: "2026-11-22T19:30:00Z" }),
  );
  t.strictSame(
    hours.points.map((p: { start: string; sessions: number }) => [p.start, p.sessions]),
    [
      ["2026-11-22T23:00:00+05:30", 1],
      ["2026-11-23T00:00:00+05:30", 1],
    ],
  );
});

t.test("the default range: 30 days (48 hours) ending with the bucket that holds now", async (t) => {
  const api = await build(t);
  await api.session("now"); // init_timestamp: now
  const days = await series(api, "");
  t.equal(days.points.length, 30);
  const today = new Date().toISOString().slice(0, 10);
  t.equal(days.points[29].start, `${today}T00:00:00+00:00`, "today is the last point");
  t.equal(days.to, `${new Date(Date.parse(today) + 86_400_000).toISOString().slice(0, 10)}T00:00:00Z`);
  t.equal(days.points[29].sessions, 1);
  const hours = await series(api, "bucket=hour&tz=Asia/Kolkata");
  t.equal(hours.points.length, 48);
  t.match(hours.points[0].start, /^\d{4}-\d\d-\d\dT\d\d:00:00\+05:30$/);
  t.equal(hours.points[47].sessions, 1);
});

t.test("bad parameters: a 400 naming each", async (t) => {
  const api = await build(t);
  const bad = async (query: string, paths: string[]) =>
    isBadParameter(t, await read(api, `/v2/analytics/timeseries?${query}`), paths);
  const unknown = await bad("tz=Mars/Olympus", ["query.tz"]);
  t.match(unknown.details?.[0]?.message, /IANA/);
  await bad("tz=", ["query.tz"]);
  await bad("bucket=week", ["query.bucket"]);
  await bad("from=yesterday", ["query.from"]);
  await bad("to=2026-13-01T00:00:00Z", ["query.to"]);
  await bad("from=2026-01-02T00:00:00Z&to=2026-01-01T00:00:00Z", ["query.to"]);
  await bad("from=2026-01-01T00:00:00Z&to=2026-01-01T00:00:00Z", ["query.to"]);
  const many = await bad("bucket=hour&from=2026-01-01T00:00:00Z&to=2026-03-01T00:00:00Z", ["query.from"]);
  t.match(many.details?.[0]?.message, /1000/);
  await bad("from=2000-01-01T00:00:00Z&to=2026-01-01T00:00:00Z", ["query.from"]);
  await bad("end_state=sideways", ["query.end_state"]);
  await bad("max_duration_ms=-1", ["query.max_duration_ms"]);
  await bad("tz=Nowhere/Land&end_state=sideways", ["query.tz", "query.end_state"]);
  // Exactly 1000 hours is allowed.
  const max = await read(api, "/v2/analytics/timeseries?bucket=hour&from=2026-01-01T00:00:00Z&to=2026-02-11T16:00:00Z");
  t.equal(max.statusCode, 200);
  t.equal(max.json().points.length, 1000);
  const noKey = await api.inject({ method: "GET", url: "/v2/analytics/timeseries" });
  t.equal(noKey.statusCode, 401, "an API key is required");
});
