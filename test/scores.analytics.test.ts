/**
 * Score analytics over HTTP (issue 25; openapi.yaml getScoreTimeseries, getScoreBreakdown;
 * decision 037): on hand-made sessions whose groups are worked out by hand below, the series and
 * every breakdown equal those numbers; every write (a score added, changed, deleted; an event
 * arriving for a span scored early; a session deleted) is counted by the very next read; bad
 * parameters are 400s naming them. Runs on every store (STORE).
 */
import t, { type Test } from "tap";
import { API_KEY, build, isInvalid, isSuccess, type TestApp } from "./helper.ts";
import { createEvents } from "./read.helpers.ts";

const DAY1 = "2026-11-20";
const DAY2 = "2026-11-21";
const RANGE = `from=${DAY1}T00:00:00Z&to=2026-11-22T00:00:00Z`;

const get = (api: TestApp, url: string) =>
  api.inject({ method: "GET", url, headers: { "x-agentmon-api-key": API_KEY } });
const score = async (t: Test, api: TestApp, scores: unknown[]) =>
  isSuccess(t, await api.withKey("/v2/scores", { scores }), ["score_ids"]);

/**
 * S1: tags x and y, agent a1 (registered, and on its first llm event), llm events of m1 and m2, a
 * tool `search`. S2: no tag, llm m1 by agent a9 (named by the event only), a tool `fetch`. S3: tag
 * z, no event.
 */
async function seed(t: Test, api: TestApp) {
  const s1 = await api.session("S1", { init_timestamp: `${DAY1}T09:00:00Z`, tags: ["x", "y"] });
  await api.withJwt("/v2/create_agent", { id: "a1", name: "planner" }, s1);
  await createEvents(api, s1, [
    { type: "llm", id: "m1e1", init_timestamp: `${DAY1}T09:01:00Z`, model: "m1", agent_id: "a1" },
    { type: "llm", id: "m2e1", init_timestamp: `${DAY1}T09:02:00Z`, model: "m2" },
    { type: "tool", id: "t1", init_timestamp: `${DAY1}T09:03:00Z`, name: "search" },
  ]);
  const s2 = await api.session("S2", { init_timestamp: `${DAY2}T08:00:00Z` });
  await createEvents(api, s2, [
    { type: "llm", id: "m1e2", init_timestamp: `${DAY2}T08:01:00Z`, model: "m1", agent_id: "a9" },
    { type: "tool", id: "t2", init_timestamp: `${DAY2}T08:02:00Z`, name: "fetch" },
  ]);
  await api.session("S3", { init_timestamp: `${DAY2}T08:00:00Z`, tags: ["z"] });
  await score(t, api, [
    { id: "q1", name: "quality", value: 0.8, session_id: "S1", timestamp: `${DAY1}T10:00:00Z` },
    { id: "q2", name: "quality", value: 0.4, session_id: "S1", event_id: "m2e1", timestamp: `${DAY1}T11:00:00Z` },
    { id: "q3", name: "quality", value: 1, session_id: "S2", timestamp: `${DAY2}T09:00:00Z`, source: "eval" },
    { id: "q4", name: "quality", value: 0.2, session_id: "S2", event_id: "t2", timestamp: `${DAY2}T10:00:00Z` },
    { id: "q5", name: "quality", value: 0.5, session_id: "S3", timestamp: `${DAY2}T11:00:00Z` },
    { id: "q6", name: "quality", value: 0.6, session_id: "S1", event_id: "later", timestamp: `${DAY1}T12:00:00Z` },
    { id: "q7", name: "quality", value: 0.1, conversation_id: "c1", timestamp: `${DAY1}T12:00:00Z` },
    { id: "b1", name: "thumbs", value: true, session_id: "S1", timestamp: `${DAY1}T10:00:00Z` },
    { id: "b2", name: "thumbs", value: false, session_id: "S2", timestamp: `${DAY2}T10:00:00Z` },
    { id: "b3", name: "thumbs", value: true, session_id: "S2", event_id: "m1e2", timestamp: `${DAY2}T10:00:00Z` },
    { id: "c1", name: "tone", value: "polite", session_id: "S1", timestamp: `${DAY1}T10:00:00Z` },
    { id: "c2", name: "tone", value: "rude", session_id: "S2", timestamp: `${DAY2}T10:00:00Z` },
    { id: "c3", name: "tone", value: "polite", session_id: "S3", timestamp: `${DAY2}T10:00:00Z` },
  ]);
}

/** The measures of numeric values, as openapi.yaml ScoreMeasures defines them. */
const numeric = (...values: number[]) => ({
  count: values.length,
  numeric_count: values.length,
  mean: values.length === 0 ? null : values.reduce((a, b) => a + b, 0) / values.length,
  min: values.length === 0 ? null : Math.min(...values),
  max: values.length === 0 ? null : Math.max(...values),
  true_count: 0,
  false_count: 0,
  pass_rate: null,
  labels: {},
});
const booleans = (trues: number, falses: number) => ({
  ...numeric(),
  count: trues + falses,
  true_count: trues,
  false_count: falses,
  pass_rate: trues + falses === 0 ? null : trues / (trues + falses),
});
const labels = (counts: Record<string, number>) => ({
  ...numeric(),
  count: Object.values(counts).reduce((a, b) => a + b, 0),
  labels: counts,
});

/** Numbers within 1e-12 (a mean's doubles are added in the engine's order); the rest exactly. */
function close(t: Test, got: unknown, want: unknown, what: string) {
  const round = (value: unknown): unknown =>
    typeof value === "number"
      ? Math.round(value * 1e12) / 1e12
      : Array.isArray(value)
        ? value.map(round)
        : value !== null && typeof value === "object"
          ? Object.fromEntries(Object.entries(value).map(([k, v]) => [k, round(v)]))
          : value;
  t.strictSame(round(got), round(want), what);
}

const breakdown = async (t: Test, api: TestApp, query: string) =>
  isSuccess(t, await get(api, `/v2/analytics/scores/breakdown?${RANGE}&${query}`), [
    "name",
    "by",
    "from",
    "to",
    "items",
    "other",
  ]);

t.test("breakdowns of a score by model, tool, agent and tag equal the groups worked out by hand", async (t) => {
  const api = await build(t);
  await seed(t, api);
  // q1 (S1) in m1 and m2; q2 (llm m2e1) in m2; q3 (S2) and q4 (tool t2: S2's models) in m1; q5
  // (S3, no llm) in null; q6 (an event S1 does not have) counts as S1's. q7 (a conversation): none.
  const byModel = await breakdown(t, api, "name=quality&by=model");
  t.equal(byModel.by, "model");
  t.equal(byModel.name, "quality");
  close(
    t,
    byModel.items,
    [
      { key: "m1", ...numeric(0.8, 1, 0.2, 0.6) },
      { key: "m2", ...numeric(0.8, 0.4, 0.6) },
      { key: null, ...numeric(0.5) },
    ],
    "by model",
  );
  t.equal(byModel.other, null);
  // q2 (an llm event): its session's tools; q4 (tool t2): fetch.
  close(
    t,
    (await breakdown(t, api, "name=quality&by=tool")).items,
    [
      { key: "search", ...numeric(0.8, 0.4, 0.6) },
      { key: "fetch", ...numeric(1, 0.2) },
      { key: null, ...numeric(0.5) },
    ],
    "by tool",
  );
  // a1: registered on S1; a9: named by S2's llm event only; q2's event has no agent: S1's.
  close(
    t,
    (await breakdown(t, api, "name=quality&by=agent")).items,
    [
      { key: "a1", ...numeric(0.8, 0.4, 0.6) },
      { key: "a9", ...numeric(1, 0.2) },
      { key: null, ...numeric(0.5) },
    ],
    "by agent",
  );
  const byTag = await breakdown(t, api, "name=quality&by=tag&limit=2");
  close(
    t,
    byTag.items,
    [
      { key: "x", ...numeric(0.8, 0.4, 0.6) },
      { key: "y", ...numeric(0.8, 0.4, 0.6) },
    ],
    "by tag, top 2 (ties by key)",
  );
  close(t, byTag.other, numeric(1, 0.2, 0.5), "the rest: S2's (no tag) and S3's (z) together");
  // sort=mean: m1 0.65, m2 0.6, null 0.5.
  t.strictSame(
    (await breakdown(t, api, "name=quality&by=model&sort=mean")).items.map((i: { key: unknown }) => i.key),
    ["m1", "m2", null],
  );
  // source: q3 is the only eval.
  close(
    t,
    (await breakdown(t, api, "name=quality&by=model&source=eval")).items,
    [{ key: "m1", ...numeric(1) }],
    "source=eval",
  );
  // Booleans: b1 (S1: m1, m2), b2 (S2: m1), b3 (llm m1e2: m1); sorted by pass rate, m2 first.
  close(
    t,
    (await breakdown(t, api, "name=thumbs&by=model&sort=pass_rate")).items,
    [
      { key: "m2", ...booleans(1, 0) },
      { key: "m1", ...booleans(2, 1) },
    ],
    "booleans by model",
  );
  close(
    t,
    (await breakdown(t, api, "name=tone&by=tag")).items,
    [
      { key: "x", ...labels({ polite: 1 }) },
      { key: "y", ...labels({ polite: 1 }) },
      { key: "z", ...labels({ polite: 1 }) },
      { key: null, ...labels({ rude: 1 }) },
    ],
    "labels by tag (equal counts: by key, null last)",
  );
  t.strictSame((await breakdown(t, api, "name=nothing&by=model")).items, [], "a name without scores: no group");
});

t.test("the series: every bucket, count, mean, pass rate and labels per day", async (t) => {
  const api = await build(t);
  await seed(t, api);
  const series = async (name: string, extra = "") =>
    isSuccess(t, await get(api, `/v2/analytics/scores?name=${name}&${RANGE}${extra}`), [
      "name",
      "bucket",
      "tz",
      "from",
      "to",
      "points",
    ]);
  const quality = await series("quality");
  t.equal(quality.bucket, "day");
  close(
    t,
    quality.points,
    [
      { start: `${DAY1}T00:00:00+00:00`, ...numeric(0.8, 0.4, 0.6) },
      { start: `${DAY2}T00:00:00+00:00`, ...numeric(1, 0.2, 0.5) },
    ],
    "quality per day (q7, a conversation's, is not counted)",
  );
  close(
    t,
    (await series("thumbs")).points.map(({ start: _, ...p }: { start: string }) => p),
    [booleans(1, 0), booleans(1, 1)],
    "thumbs per day",
  );
  close(
    t,
    (await series("tone")).points.map(({ start: _, ...p }: { start: string }) => p),
    [labels({ polite: 1 }), labels({ polite: 1, rude: 1 })],
    "tone per day",
  );
  const hours = await series("quality", "&bucket=hour&tz=Asia/Kolkata");
  // Kolkata's hours start at :30 UTC: the range's first and last hours are partial, 49 in all.
  t.equal(hours.points.length, 49);
  t.equal(
    hours.points.reduce((n: number, p: { count: number }) => n + p.count, 0),
    6,
  );
  close(
    t,
    hours.points.find((p: { start: string }) => p.start === "2026-11-20T15:00:00+05:30"),
    { start: "2026-11-20T15:00:00+05:30", ...numeric(0.8) },
    "q1 at 10:00 UTC (15:30 in Kolkata) is in the hour from 15:00",
  );
});

t.test("every write is counted by the next read", async (t) => {
  const api = await build(t);
  await seed(t, api);
  const models = async () =>
    Object.fromEntries(
      (await breakdown(t, api, "name=quality&by=model")).items.map((i: { key: string | null; count: number }) => [
        i.key ?? "null",
        i.count,
      ]),
    );
  t.strictSame(await models(), { m1: 4, m2: 3, null: 1 });
  // A score added: S3's.
  await score(t, api, [{ id: "q8", name: "quality", value: 0.9, session_id: "S3", timestamp: `${DAY2}T12:00:00Z` }]);
  t.strictSame(await models(), { m1: 4, m2: 3, null: 2 }, "added");
  // The span q6 named arrives: an llm event of m3. q6 leaves S1's models for m3 alone, and S1's
  // own scores (q1) gain m3 as a model of the session.
  const s1 = await api.session("S1", { init_timestamp: `${DAY1}T09:00:00Z`, tags: ["x", "y"] });
  await createEvents(api, s1, [{ type: "llm", id: "later", init_timestamp: `${DAY1}T09:05:00Z`, model: "m3" }]);
  t.strictSame(await models(), { m1: 3, m2: 2, m3: 2, null: 2 }, "an event arriving for a scored id");
  // Changed: q5's value.
  const patched = await api.inject({
    method: "PATCH",
    url: "/v2/scores/q5",
    headers: { "x-agentmon-api-key": API_KEY, "content-type": "application/json" },
    payload: JSON.stringify({ value: 0.1 }),
  });
  isSuccess(t, patched, ["score"]);
  const nulls = (await breakdown(t, api, "name=quality&by=model")).items.find((i: { key: unknown }) => i.key === null);
  close(t, nulls, { key: null, ...numeric(0.1, 0.9) }, "changed");
  // Deleted: q8; then session S2 with its scores.
  await api.inject({ method: "DELETE", url: "/v2/scores/q8", headers: { "x-agentmon-api-key": API_KEY } });
  t.strictSame(await models(), { m1: 3, m2: 2, m3: 2, null: 1 }, "a score deleted");
  const gone = await api.inject({
    method: "DELETE",
    url: "/v2/sessions/S2",
    headers: { "x-agentmon-api-key": API_KEY },
  });
  t.equal(gone.statusCode, 200, gone.body);
  t.strictSame(await models(), { m1: 1, m2: 2, m3: 2, null: 1 }, "a session deleted takes its scores");
  // A new agent registered on S3 makes its scores that agent's.
  const s3 = await api.session("S3", { init_timestamp: `${DAY2}T08:00:00Z`, tags: ["z"] });
  await api.withJwt("/v2/create_agent", { id: "a3", name: "late" }, s3);
  const agents = (await breakdown(t, api, "name=quality&by=agent")).items.map(
    (i: { key: string | null; count: number }) => [i.key, i.count],
  );
  t.strictSame(agents, [
    ["a1", 3],
    ["a3", 1],
  ]);
});

t.test("bad parameters are 400s naming them", async (t) => {
  const api = await build(t);
  isInvalid(t, await get(api, "/v2/analytics/scores"), ["query.name"]);
  isInvalid(t, await get(api, "/v2/analytics/scores?name=q&tz=Mars/Olympus"), ["query.tz"]);
  isInvalid(t, await get(api, "/v2/analytics/scores?name=q&bucket=week"), ["query.bucket"]);
  isInvalid(t, await get(api, "/v2/analytics/scores?name=q&from=2026-11-02T00:00:00Z&to=2026-11-01T00:00:00Z"), [
    "query.to",
  ]);
  isInvalid(t, await get(api, "/v2/analytics/scores?name=q&source=robot"), ["query.source"]);
  isInvalid(t, await get(api, "/v2/analytics/scores?name=q&from=2020-01-01T00:00:00Z&bucket=hour"), ["query.from"]);
  isInvalid(t, await get(api, "/v2/analytics/scores/breakdown?name=q"), ["query.by"]);
  isInvalid(t, await get(api, "/v2/analytics/scores/breakdown?name=q&by=end_state"), ["query.by"]);
  isInvalid(t, await get(api, "/v2/analytics/scores/breakdown?name=q&by=model&sort=cost"), ["query.sort"]);
  isInvalid(t, await get(api, "/v2/analytics/scores/breakdown?name=q&by=model&limit=0"), ["query.limit"]);
  isInvalid(
    t,
    await get(api, "/v2/analytics/scores/breakdown?name=q&by=model&from=2026-11-02T00:00:00Z&to=2026-11-01T00:00:00Z"),
    ["query.to"],
  );
  const empty = isSuccess(t, await get(api, "/v2/analytics/scores/breakdown?name=q&by=model"), [
    "name",
    "by",
    "from",
    "to",
    "items",
    "other",
  ]);
  t.strictSame([empty.items, empty.other], [[], null]);
});
