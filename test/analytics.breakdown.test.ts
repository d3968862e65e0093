/**
 * GET /v2/analytics/breakdown (issue 15, docs/decisions/024-analytics.md): every grouping on a
 * small data set written through the write API, its numbers worked out by hand below; top N with
 * `other` (sums past the top, percentiles over their rows together), ties, filters, the range,
 * and bad parameters. STORE=postgres and STORE=sqlite-thread run it on those stores.
 *
 *   S1  tags [x, y]  Success  10 s   agent a1 (registered, and on an event)
 *       llm m1e1 model m1  10+1 tokens  0.25  1 s   (error s1err names it as trigger)
 *       llm m2e1 model m2  20+2 tokens  0.50  3 s
 *       tool search  0.5 s;  error s1err (no end)
 *   S2  tags [x, x]  Fail     20 s   agent a2 (registered)
 *       llm m1e2 model m1  30+3 tokens  1.00  2 s
 *       tool search  1.5 s;  tool fetch (no end; error s2err names it);  error s2err;  error s2lone (no trigger)
 *   S3  no tags      running  5 s (to its last event)   no agent
 *       llm (no model)  5+0 tokens  no cost  2 s;  action  0 s
 *   theirs (another project): an llm m1 event with a cost, never counted.
 */
import t from "tap";
import { build, OTHER_PROJECT_KEY, type TestApp } from "./helper.ts";
import { createEvents, isBadParameter, read } from "./read.helpers.ts";

const T0 = "2026-11-20T10:00:00Z";
const at = (ms: number) => new Date(Date.parse(T0) + ms).toISOString();
const HOUR = 3_600_000;
const RANGE = "from=2026-11-20T00:00:00Z&to=2026-11-21T00:00:00Z";

async function seed(api: TestApp) {
  const s1 = await api.session("S1", {
    init_timestamp: at(0),
    end_timestamp: at(10_000),
    end_state: "Success",
    tags: ["x", "y"],
    customer: "acme",
  });
  await api.withJwt("/v2/create_agent", { id: "a1", name: "planner" }, s1);
  await createEvents(api, s1, [
    {
      type: "llm",
      id: "m1e1",
      init_timestamp: at(1000),
      end_timestamp: at(2000),
      model: "m1",
      prompt_tokens: 10,
      completion_tokens: 1,
      cost: 0.25,
      agent_id: "a1",
    },
    {
      type: "llm",
      id: "m2e1",
      init_timestamp: at(2000),
      end_timestamp: at(5000),
      model: "m2",
      prompt_tokens: 20,
      completion_tokens: 2,
      cost: 0.5,
    },
    { type: "tool", id: "t1", init_timestamp: at(3000), end_timestamp: at(3500), name: "search" },
    { type: "error", id: "s1err", init_timestamp: at(4000), trigger_event_id: "m1e1" },
  ]);
  const s2 = await api.session("S2", {
    init_timestamp: at(HOUR),
    end_timestamp: at(HOUR + 20_000),
    end_state: "Fail",
    tags: ["x", "x"],
  });
  await api.withJwt("/v2/create_agent", { id: "a2", name: "coder" }, s2);
  await createEvents(api, s2, [
    {
      type: "llm",
      id: "m1e2",
      init_timestamp: at(HOUR + 1000),
      end_timestamp: at(HOUR + 3000),
      model: "m1",
      prompt_tokens: 30,
      completion_tokens: 3,
      cost: 1,
    },
    { type: "tool", id: "t2", init_timestamp: at(HOUR + 4000), end_timestamp: at(HOUR + 5500), tool_name: "search" },
    { type: "tool", id: "t3", init_timestamp: at(HOUR + 6000), name: "fetch" },
    { type: "error", id: "s2err", init_timestamp: at(HOUR + 7000), trigger_event_id: "t3" },
    { type: "error", id: "s2lone", init_timestamp: at(HOUR + 8000) },
  ]);
  const s3 = await api.session("S3", { init_timestamp: at(2 * HOUR) });
  await createEvents(api, s3, [
    {
      type: "llm",
      id: "anon",
      init_timestamp: at(2 * HOUR + 1000),
      end_timestamp: at(2 * HOUR + 3000),
      prompt_tokens: 5,
      completion_tokens: 0,
    },
    { type: "action", id: "act", init_timestamp: at(2 * HOUR + 5000), end_timestamp: at(2 * HOUR + 5000) },
  ]);
  const theirs = await api.session("theirs", { init_timestamp: at(0), end_state: "Fail" }, OTHER_PROJECT_KEY);
  await createEvents(api, theirs, [{ type: "llm", id: "x", init_timestamp: at(1), model: "m1", cost: 9 }]);
}

const breakdown = async (api: TestApp, query: string) => {
  const res = await read(api, `/v2/analytics/breakdown?${query}`);
  if (res.statusCode !== 200) throw new Error(`breakdown answered ${res.statusCode}: ${res.body}`);
  return res.json();
};
const p = (p50: number | null, p95: number | null = p50, p99: number | null = p95) => ({ p50, p95, p99 });
const measures = (
  sessions: number,
  failures: number,
  events: number,
  error_events: number,
  prompt_tokens: number,
  completion_tokens: number,
  cost: string,
  duration_ms: ReturnType<typeof p>,
) => ({ sessions, failures, events, error_events, prompt_tokens, completion_tokens, cost, duration_ms });

t.test("breakdowns of a hand-made data set", async (t) => {
  const api = await build(t);
  await seed(api);

  t.test("by model: the llm events; the null model; error_events by trigger", async (t) => {
    const body = await breakdown(api, `by=model&${RANGE}`);
    t.equal(body.status, "success");
    t.equal(body.by, "model");
    t.equal(body.from, "2026-11-20T00:00:00Z");
    t.equal(body.to, "2026-11-21T00:00:00Z");
    t.strictSame(body.items, [
      { key: "m1", ...measures(2, 1, 2, 1, 40, 4, "1.25", p(1000, 2000)) },
      { key: "m2", ...measures(1, 0, 1, 0, 20, 2, "0.50", p(3000)) },
      { key: null, ...measures(1, 0, 1, 0, 5, 0, "0.00", p(2000)) },
    ]);
    t.equal(body.other, null, "no group past the top 10");
  });

  t.test("top N: other sums the rest, its percentiles over the rest's events together", async (t) => {
    const two = await breakdown(api, `by=model&limit=2&${RANGE}`);
    t.strictSame(
      two.items.map((g: { key: string }) => g.key),
      ["m1", "m2"],
    );
    t.strictSame(two.other, measures(1, 0, 1, 0, 5, 0, "0.00", p(2000)));
    const one = await breakdown(api, `by=model&limit=1&${RANGE}`);
    // m2 (3 s) and the null model (2 s): p50 is the 1st of [2000, 3000], p95 the 2nd.
    t.strictSame(one.other, measures(2, 0, 2, 0, 25, 2, "0.50", p(2000, 3000)));
    const bySessions = await breakdown(api, `by=model&limit=1&sort=sessions&${RANGE}`);
    t.strictSame(
      bySessions.items.map((g: { key: string }) => g.key),
      ["m1"],
    );
    const byP95 = await breakdown(api, `by=model&sort=duration_p95&${RANGE}`);
    t.strictSame(
      byP95.items.map((g: { key: string }) => g.key),
      ["m2", "m1", null],
      "3000, 2000, 2000: a tie goes by key, null last",
    );
    const byTokens = await breakdown(api, `by=model&sort=tokens&limit=2&${RANGE}`);
    t.strictSame(
      byTokens.items.map((g: { key: string }) => g.key),
      ["m1", "m2"],
      "44, 22, 5 tokens",
    );
  });

  t.test("by type: every event by kind", async (t) => {
    const body = await breakdown(api, `by=type&sort=events&${RANGE}`);
    t.strictSame(body.items, [
      // llm durations 1000, 3000, 2000, 2000: p50 = the 2nd = 2000, p95 = the 4th = 3000.
      { key: "llm", ...measures(3, 1, 4, 1, 65, 6, "1.75", p(2000, 3000)) },
      { key: "error", ...measures(2, 1, 3, 0, 0, 0, "0.00", p(null)) },
      { key: "tool", ...measures(2, 1, 3, 1, 0, 0, "0.00", p(500, 1500)) },
      { key: "action", ...measures(1, 0, 1, 0, 0, 0, "0.00", p(0)) },
    ]);
  });

  t.test("by tool: the tool events by name (tool_name too); an event without an end has no duration", async (t) => {
    const body = await breakdown(api, `by=tool&sort=events&${RANGE}`);
    t.strictSame(body.items, [
      { key: "search", ...measures(2, 1, 2, 0, 0, 0, "0.00", p(500, 1500)) },
      { key: "fetch", ...measures(1, 1, 1, 1, 0, 0, "0.00", p(null)) },
    ]);
    const byCost = await breakdown(api, `by=tool&${RANGE}`);
    t.strictSame(
      byCost.items.map((g: { key: string }) => g.key),
      ["fetch", "search"],
      "equal cost (0): by key",
    );
  });

  t.test("by tag: whole sessions, a session in each of its tags (once), untagged as null", async (t) => {
    const body = await breakdown(api, `by=tag&${RANGE}`);
    t.strictSame(body.items, [
      { key: "x", ...measures(2, 1, 9, 3, 60, 6, "1.75", p(10000, 20000)) },
      { key: "y", ...measures(1, 0, 4, 1, 30, 3, "0.75", p(10000)) },
      { key: null, ...measures(1, 0, 2, 0, 5, 0, "0.00", p(5000)) },
    ]);
    const top = await breakdown(api, `by=tag&limit=1&${RANGE}`);
    t.strictSame(top.other, measures(2, 0, 6, 1, 35, 3, "0.75", p(5000, 10000)), "y and null together");
  });

  t.test("by end_state and by agent", async (t) => {
    const states = await breakdown(api, `by=end_state&sort=sessions&${RANGE}`);
    t.strictSame(states.items, [
      { key: "Fail", ...measures(1, 1, 5, 2, 30, 3, "1.00", p(20000)) },
      { key: "Success", ...measures(1, 0, 4, 1, 30, 3, "0.75", p(10000)) },
      { key: null, ...measures(1, 0, 2, 0, 5, 0, "0.00", p(5000)) },
    ]);
    const agents = await breakdown(api, `by=agent&${RANGE}`);
    t.strictSame(agents.items, [
      { key: "a2", ...measures(1, 1, 5, 2, 30, 3, "1.00", p(20000)) },
      { key: "a1", ...measures(1, 0, 4, 1, 30, 3, "0.75", p(10000)) },
      { key: null, ...measures(1, 0, 2, 0, 5, 0, "0.00", p(5000)) },
    ]);
  });

  t.test("the filters of the session list, and the range", async (t) => {
    const tagged = await breakdown(api, `by=model&tag=x&${RANGE}`);
    t.strictSame(
      tagged.items.map((g: { key: string; events: number }) => [g.key, g.events]),
      [
        ["m1", 2],
        ["m2", 1],
      ],
    );
    const failed = await breakdown(api, `by=model&end_state=Fail&${RANGE}`);
    t.strictSame(failed.items, [{ key: "m1", ...measures(1, 1, 1, 0, 30, 3, "1.00", p(2000)) }]);
    const agent = await breakdown(api, `by=tag&agent_id=a1&${RANGE}`);
    t.strictSame(
      agent.items.map((g: { key: string }) => g.key),
      ["x", "y"],
    );
    const keys = async (query: string) =>
      (await breakdown(api, `${query}&${RANGE}`)).items.map((g: { key: string | null }) => g.key);
    t.strictSame(await keys("by=end_state&has_errors=false"), [null], "has_errors");
    t.strictSame(await keys("by=end_state&has_errors=true&sort=sessions"), ["Fail", "Success"]);
    t.strictSame(await keys("by=end_state&min_cost=0.8"), ["Fail"], "min_cost");
    t.strictSame(await keys("by=end_state&max_cost=0.75"), ["Success", null], "max_cost");
    t.strictSame(await keys("by=end_state&max_duration_ms=10000"), ["Success", null], "max_duration_ms");
    t.strictSame(await keys("by=end_state&min_duration_ms=10000.001"), ["Fail"], "min_duration_ms");
    t.strictSame(await keys("by=tag&model=m2"), ["x", "y"], "model: the sessions that used it");
    t.strictSame(await keys("by=model&model=m2"), ["m2", "m1"], "model: and all their llm events (S1: 0.50, 0.25)");
    t.strictSame(await keys("by=end_state&extra.customer=acme"), ["Success"], "extra.<key>");
    t.strictSame(await keys("by=end_state&extra.customer=acme&has_errors=false"), [], "together");
    const early = await breakdown(api, "by=end_state&from=2026-11-20T00:00:00Z&to=2026-11-20T12:00:00Z");
    t.strictSame(
      early.items.map((g: { key: string }) => g.key),
      ["Fail", "Success"],
      "S3 (12:00) is at to, excluded",
    );
    const none = await breakdown(api, "by=model&from=2026-11-21T00:00:00Z&to=2026-11-22T00:00:00Z");
    t.strictSame(none.items, []);
    t.equal(none.other, null);
    const defaults = await breakdown(api, "by=model");
    t.equal(Date.parse(defaults.to) - Date.parse(defaults.from), 30 * 86_400_000, "the last 30 days by default");
    t.ok(Math.abs(Date.parse(defaults.to) - Date.now()) < 60_000, "ending now");
    const same = await breakdown(api, `by=model&from=${defaults.from}&to=${defaults.to}`);
    t.strictSame(defaults.items, same.items, "the same as that range given");
  });

  t.test("the series agrees with the sessions' stats", async (t) => {
    const res = await read(api, `/v2/analytics/timeseries?${RANGE}`);
    const [point] = res.json().points;
    t.strictSame(point, {
      start: "2026-11-20T00:00:00+00:00",
      ...measures(3, 1, 11, 3, 65, 6, "1.75", p(10000, 20000)),
    });
    const stats = await read(api, "/v2/sessions/S2/stats");
    t.equal(stats.json().stats.duration_ms, 20000);
    t.equal(stats.json().stats.error_count, 2);
  });
});

t.test("bad parameters: a 400 naming each", async (t) => {
  const api = await build(t);
  const bad = async (query: string, paths: string[]) =>
    isBadParameter(t, await read(api, `/v2/analytics/breakdown?${query}`), paths);
  await bad("", ["query.by"]);
  await bad("by=color", ["query.by"]);
  await bad("by=model&limit=0", ["query.limit"]);
  await bad("by=model&limit=101", ["query.limit"]);
  await bad("by=model&limit=ten", ["query.limit"]);
  await bad("by=model&sort=price", ["query.sort"]);
  await bad("by=model&from=2026-01-02T00:00:00Z&to=2026-01-01T00:00:00Z", ["query.to"]);
  await bad("by=model&from=soon", ["query.from"]);
  await bad("by=model&end_state=sideways", ["query.end_state"]);
  await bad("by=model&min_cost=cheap", ["query.min_cost"]);
  await bad("by=model&has_errors=maybe", ["query.has_errors"]);
  const ok = await read(api, "/v2/analytics/breakdown?by=tool&limit=100");
  t.equal(ok.statusCode, 200);
  t.strictSame(ok.json().items, []);
});
