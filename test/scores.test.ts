/**
 * Scores over HTTP (issue 25, openapi.yaml SC1-SC7): every rule of the score model and of score
 * configs, the 400s that name the field, idempotent retries, batches refused whole, the JWT's
 * limits, the scopes, and scores going with their session. Runs on every store (STORE).
 */
import t, { type Test } from "tap";
import { hashApiKey, keyPrefix } from "../domain/keys.ts";
import { API_KEY, build, isError, isInvalid, isSuccess, OTHER_PROJECT_KEY, type TestApp } from "./helper.ts";

const ANNOTATE_KEY = "a7000000-0000-4000-8000-000000000000";
const READ_KEY = "a2000000-0000-4000-8000-000000000000";

async function app(t: Test): Promise<TestApp> {
  const api = await build(t);
  const now = new Date().toISOString();
  await api.store.createApiKey(hashApiKey(ANNOTATE_KEY), keyPrefix(ANNOTATE_KEY), "default", now, ["annotate"]);
  await api.store.createApiKey(hashApiKey(READ_KEY), keyPrefix(READ_KEY), "default", now, ["read"]);
  return api;
}

const get = (api: TestApp, url: string, key = API_KEY) =>
  api.inject({ method: "GET", url, headers: { "x-agentmon-api-key": key } });
const send = (api: TestApp, method: "PATCH" | "PUT" | "DELETE", url: string, body?: unknown, key = API_KEY) =>
  api.inject({
    method,
    url,
    headers: { "x-agentmon-api-key": key, ...(body === undefined ? {} : { "content-type": "application/json" }) },
    ...(body === undefined ? {} : { payload: JSON.stringify(body) }),
  });
const score = (api: TestApp, scores: unknown[], key = API_KEY) => api.withKey("/v2/scores", { scores }, key);

t.test("SC1-SC4: scores of a session, an event and a conversation, read back as sent", async (t) => {
  const api = await app(t);
  await api.session("s-1");
  const res = await score(api, [
    { id: "sc-1", name: "helpfulness", value: 0.8, session_id: "s-1", comment: "good", metadata: { judge: "gpt" } },
    { id: "sc-2", name: "correct", value: true, session_id: "s-1", event_id: "ev-9", source: "eval" },
    { id: "sc-3", name: "tone", value: "polite", conversation_id: "conv-1", timestamp: "2026-11-20T10:00:00+01:00" },
    { name: "flag", value: 1, data_type: "boolean", session_id: "s-1" },
  ]);
  const body = isSuccess(t, res, ["score_ids"]);
  t.equal(body.score_ids.length, 4);
  t.same(body.score_ids.slice(0, 3), ["sc-1", "sc-2", "sc-3"]);
  t.match(body.score_ids[3], /^[0-9a-f]{8}-[0-9a-f]{4}-7/, "a server id is a UUID v7");

  const one = isSuccess(t, await get(api, "/v2/scores/sc-1"), ["score"]).score;
  t.strictSame(Object.keys(one).sort(), [
    "author",
    "comment",
    "conversation_id",
    "created_at",
    "data_type",
    "event_id",
    "id",
    "metadata",
    "name",
    "response_id",
    "session_id",
    "source",
    "timestamp",
    "updated_at",
    "value",
  ]);
  t.match(one, {
    id: "sc-1",
    name: "helpfulness",
    data_type: "numeric",
    value: 0.8,
    session_id: "s-1",
    event_id: null,
    conversation_id: null,
    source: "api",
    comment: "good",
    metadata: { judge: "gpt" },
    updated_at: null,
    author: { type: "api_key" },
  });
  t.match(isSuccess(t, await get(api, "/v2/scores/sc-2"), ["score"]).score, {
    data_type: "boolean",
    value: true,
    event_id: "ev-9",
    source: "eval",
  });
  t.match(isSuccess(t, await get(api, "/v2/scores/sc-3"), ["score"]).score, {
    data_type: "categorical",
    value: "polite",
    session_id: null,
    conversation_id: "conv-1",
    timestamp: "2026-11-20T09:00:00Z",
  });
  const flag = await get(api, `/v2/scores/${body.score_ids[3]}`);
  t.match(flag.json().score, { data_type: "boolean", value: true });
});

t.test(
  "SC4: a value of another type than its data type is a 400 naming it; nothing of the batch is stored",
  async (t) => {
    const api = await app(t);
    await api.session("s-1");
    const res = await score(api, [
      { id: "ok", name: "a", value: 1, session_id: "s-1" },
      { id: "bad-1", name: "a", value: "high", data_type: "numeric", session_id: "s-1" },
      { id: "bad-2", name: "b", value: 2, data_type: "boolean", session_id: "s-1" },
      { id: "bad-3", name: "c", value: 3, data_type: "categorical", session_id: "s-1" },
      { id: "bad-4", name: "d", value: 1, session_id: "s-1", conversation_id: "c" },
      { id: "bad-5", name: "e", value: 1 },
      { id: "bad-6", name: "f", value: 1, conversation_id: "c", event_id: "x" },
    ]);
    isInvalid(t, res, [
      "scores[1].value",
      "scores[2].value",
      "scores[3].value",
      "scores[4].conversation_id",
      "scores[5].session_id",
      "scores[6].event_id",
    ]);
    t.equal((await get(api, "/v2/scores/ok")).statusCode, 404, "the good score of the refused batch is not stored");
    isInvalid(t, await score(api, [{ name: "", value: 1, session_id: "s-1" }]), ["scores[0].name"]);
    isInvalid(t, await score(api, [{ name: "x", value: null, session_id: "s-1" }]), ["scores[0].value"]);
    isInvalid(t, await score(api, [{ name: "x", value: 1, session_id: "s-1", source: "human" }]), ["scores[0].source"]);
    isInvalid(t, await api.withKey("/v2/scores", { scores: [] }), ["scores"]);
    isInvalid(t, await score(api, [{ name: "g", value: 1, session_id: "s-1", timestamp: "yesterday" }]), [
      "scores[0].timestamp",
    ]);
    isInvalid(t, await score(api, [{ name: "g", value: 1, sesion_id: "s-1" }]), ["scores[0].sesion_id"]);
    // SC3's response target: not empty, at most 500 characters, not with a conversation, not an event alone.
    isInvalid(t, await score(api, [{ name: "r", value: 1, response_id: "" }]), ["scores[0].response_id"]);
    isInvalid(t, await score(api, [{ name: "r", value: 1, response_id: "r".repeat(501) }]), ["scores[0].response_id"]);
    isInvalid(t, await score(api, [{ name: "r", value: 1, response_id: "x", conversation_id: "c" }]), [
      "scores[0].response_id",
    ]);
    isInvalid(t, await score(api, [{ name: "r", value: 1, response_id: "x", event_id: "e" }]), ["scores[0].event_id"]);
    t.equal((await get(api, "/v2/scores?response_id=x")).json().scores.length, 0, "nothing of them stored");
  },
);

t.test("SC3: a session not in the project is a 404 naming the score; nothing is stored", async (t) => {
  const api = await app(t);
  await api.session("mine");
  await api.session("theirs", {}, OTHER_PROJECT_KEY);
  const res = await score(api, [
    { id: "a", name: "x", value: 1, session_id: "mine" },
    { id: "b", name: "x", value: 1, session_id: "theirs" },
    { id: "c", name: "x", value: 1, session_id: "nowhere" },
  ]);
  const body = isError(t, res, 404, "Not found");
  t.same(
    body.details?.map((d) => d.path),
    ["scores[1].session_id", "scores[2].session_id"],
  );
  t.equal((await get(api, "/v2/scores/a")).statusCode, 404);
  t.equal((await get(api, "/v2/scores/b", OTHER_PROJECT_KEY)).statusCode, 404);
});

t.test("SC6: a retry changes nothing; the same id twice keeps the later copy; ids are per project", async (t) => {
  const api = await app(t);
  await api.session("s-1");
  await api.session("s-2", {}, OTHER_PROJECT_KEY);
  isSuccess(t, await score(api, [{ id: "r", name: "x", value: 1, session_id: "s-1" }]), ["score_ids"]);
  isSuccess(t, await score(api, [{ id: "r", name: "x", value: 5, session_id: "s-1" }]), ["score_ids"]);
  t.equal((await get(api, "/v2/scores/r")).json().score.value, 1, "the first copy stays");
  isSuccess(
    t,
    await score(api, [
      { id: "twice", name: "x", value: 1, session_id: "s-1" },
      { id: "twice", name: "x", value: 2, session_id: "s-1" },
    ]),
    ["score_ids"],
  );
  t.equal((await get(api, "/v2/scores/twice")).json().score.value, 2, "the later copy of one call");
  isSuccess(t, await score(api, [{ id: "r", name: "y", value: 7, session_id: "s-2" }], OTHER_PROJECT_KEY), [
    "score_ids",
  ]);
  t.equal((await get(api, "/v2/scores/r", OTHER_PROJECT_KEY)).json().score.value, 7, "another project's id r");
  t.equal((await get(api, "/v2/scores/r")).json().score.value, 1);
});

t.test("SC5: score configs rule the scores of their name", async (t) => {
  const api = await app(t);
  await api.session("s-1");
  const put = (name: string, body: unknown, key = API_KEY) => send(api, "PUT", `/v2/score-configs/${name}`, body, key);
  const made = isSuccess(t, await put("quality", { data_type: "numeric", min: 0, max: 1, description: "0 to 1" }), [
    "config",
  ]).config;
  t.match(made, { name: "quality", data_type: "numeric", min: 0, max: 1, categories: null, description: "0 to 1" });
  isSuccess(t, await put("verdict", { data_type: "categorical", categories: ["right", "wrong"] }), ["config"]);
  isSuccess(t, await put("ok", { data_type: "boolean" }), ["config"]);

  const res = await score(api, [
    { name: "quality", value: 1.5, session_id: "s-1" },
    { name: "quality", value: "high", session_id: "s-1" },
    { name: "verdict", value: "maybe", session_id: "s-1" },
    { name: "verdict", value: 1, data_type: "numeric", session_id: "s-1" },
    { name: "ok", value: "yes", session_id: "s-1" },
  ]);
  const body = isInvalid(t, res, [
    "scores[0].value",
    "scores[1].value",
    "scores[2].value",
    "scores[3].data_type",
    "scores[4].value",
  ]);
  t.match(body.details?.[0]?.message, /between 0 and 1 \(score config "quality"\)/);
  t.match(body.details?.[2]?.message, /one of "right", "wrong"/);
  isSuccess(
    t,
    await score(api, [
      { id: "q", name: "quality", value: 0.5, session_id: "s-1" },
      { id: "v", name: "verdict", value: "right", session_id: "s-1" },
      { id: "k", name: "ok", value: "false", session_id: "s-1" },
    ]),
    ["score_ids"],
  );
  t.match((await get(api, "/v2/scores/k")).json().score, { data_type: "boolean", value: false });

  isInvalid(t, await put("bad", { data_type: "numeric", min: 2, max: 1 }), ["min"]);
  isInvalid(t, await put("bad", { data_type: "categorical" }), ["categories"]);
  isInvalid(t, await put("bad", { data_type: "boolean", min: 1, categories: ["a"] }), ["min", "categories"]);
  t.same(
    isSuccess(t, await put("twice", { data_type: "categorical", categories: ["a", "b", "a"] }), ["config"]).config
      .categories,
    ["a", "b"],
    "a label given twice is kept once",
  );
  isInvalid(t, await put("bad", { data_type: "numeric", extra: 1 }), ["extra"]);
  const list = isSuccess(t, await get(api, "/v2/score-configs"), ["configs"]).configs;
  t.same(
    list.map((c: { name: string }) => c.name),
    ["ok", "quality", "twice", "verdict"],
    "by name; the refused ones are not kept",
  );
  // Replacing a config keeps its created_at.
  const again = isSuccess(t, await put("quality", { data_type: "numeric", min: 0, max: 10 }), ["config"]).config;
  t.equal(again.created_at, made.created_at);
  t.equal(again.max, 10);
  t.equal((await get(api, "/v2/scores/q")).json().score.value, 0.5, "a config changed later does not change scores");
  t.equal((await put("x", { data_type: "boolean" }, ANNOTATE_KEY)).statusCode, 403, "configs need admin");
  const audit = (await get(api, "/v2/audit")).json().records as { action: string; target: string }[];
  t.ok(
    audit.some((r) => r.action === "score_config.set" && r.target === "quality"),
    "audited",
  );
});

t.test("PATCH and DELETE: checked as new; 404 for another project's", async (t) => {
  const api = await app(t);
  await api.session("s-1");
  await send(api, "PUT", "/v2/score-configs/quality", { data_type: "numeric", min: 0, max: 1 });
  isSuccess(t, await score(api, [{ id: "p", name: "quality", value: 0.2, session_id: "s-1", comment: "meh" }]), [
    "score_ids",
  ]);
  const changed = isSuccess(t, await send(api, "PATCH", "/v2/scores/p", { value: 0.9, comment: null }, ANNOTATE_KEY), [
    "score",
  ]).score;
  t.match(changed, { value: 0.9, comment: null, name: "quality", session_id: "s-1" });
  t.type(changed.updated_at, "string");
  isInvalid(t, await send(api, "PATCH", "/v2/scores/p", { value: 2 }), ["value"]);
  isInvalid(t, await send(api, "PATCH", "/v2/scores/p", { data_type: "categorical" }), ["value"]);
  isInvalid(t, await send(api, "PATCH", "/v2/scores/p", { data_type: "categorical", value: "high" }), ["data_type"]);
  isInvalid(t, await send(api, "PATCH", "/v2/scores/p", { name: "other" }), ["name"]);
  isInvalid(t, await send(api, "PATCH", "/v2/scores/p", {}), [""]);
  t.equal((await get(api, "/v2/scores/p")).json().score.value, 0.9, "the refused changes changed nothing");
  isError(t, await send(api, "PATCH", "/v2/scores/p", { value: 1 }, OTHER_PROJECT_KEY), 404, "Not found");
  isError(t, await send(api, "DELETE", "/v2/scores/p", undefined, OTHER_PROJECT_KEY), 404, "Not found");
  t.equal(
    (await send(api, "DELETE", "/v2/scores/p", undefined, ANNOTATE_KEY)).statusCode,
    403,
    "annotate may not delete",
  );
  isSuccess(t, await send(api, "DELETE", "/v2/scores/p"), []);
  isError(t, await get(api, "/v2/scores/p"), 404, "Not found");
  isError(t, await send(api, "DELETE", "/v2/scores/p"), 404, "Not found");
});

t.test("SC2: a session's JWT scores its own session only; the annotate scope scores and nothing else", async (t) => {
  const api = await app(t);
  const jwt = await api.session("own");
  await api.session("other");
  const mine = await api.withJwt("/v2/scores", { scores: [{ id: "j1", name: "x", value: 1 }] }, jwt);
  isSuccess(t, mine, ["score_ids"]);
  t.match((await get(api, "/v2/scores/j1")).json().score, { session_id: "own", author: { type: "api_key" } });
  isError(
    t,
    await api.withJwt("/v2/scores", { scores: [{ name: "x", value: 1, session_id: "other" }] }, jwt),
    403,
    "Forbidden",
  );
  isError(
    t,
    await api.withJwt("/v2/scores", { scores: [{ name: "x", value: 1, conversation_id: "c" }] }, jwt),
    403,
    "Forbidden",
  );
  isError(t, await api.withJwt("/v2/scores", { scores: [{ name: "x", value: 1 }] }, "not-a-jwt"), 401);
  // A JWT's score of a response is its own session's: resolved within that session only.
  const byResponse = await api.withJwt(
    "/v2/scores",
    { scores: [{ id: "j-r", name: "x", value: 1, response_id: "chatcmpl-j" }] },
    jwt,
  );
  isSuccess(t, byResponse, ["score_ids"]);
  t.match((await get(api, "/v2/scores/j-r")).json().score, {
    session_id: "own",
    event_id: null,
    response_id: "chatcmpl-j",
  });
  isSuccess(t, await score(api, [{ id: "an", name: "x", value: 1, session_id: "own" }], ANNOTATE_KEY), ["score_ids"]);
  const refused = isError(t, await get(api, "/v2/scores", ANNOTATE_KEY), 403, "Forbidden");
  t.match(refused.message, /has scope annotate; this operation needs read/);
  const noScore = isError(
    t,
    await score(api, [{ name: "x", value: 1, session_id: "own" }], READ_KEY),
    403,
    "Forbidden",
  );
  t.match(noScore.message, /needs ingest or annotate/);
  t.equal(
    (await api.withKey("/v2/create_session", { session: { id: "nope" } }, ANNOTATE_KEY)).statusCode,
    403,
    "annotate does not ingest",
  );
});

t.test("GET /v2/scores: filters and pages, newest first", async (t) => {
  const api = await app(t);
  await api.session("s-1");
  await api.session("s-2");
  const scores = Array.from({ length: 7 }, (_, i) => ({
    id: `l-${i}`,
    name: i % 2 === 0 ? "even" : "odd",
    value: i,
    session_id: i < 4 ? "s-1" : "s-2",
    event_id: i === 3 ? "ev" : null,
    source: i === 6 ? "eval" : "api",
    timestamp: `2026-11-20T10:00:0${i}Z`,
  }));
  isSuccess(t, await score(api, scores), ["score_ids"]);
  const ids = async (query: string) =>
    (isSuccess(t, await get(api, `/v2/scores${query}`), ["scores", "next_cursor"]).scores as { id: string }[]).map(
      (s) => s.id,
    );
  t.same(await ids(""), ["l-6", "l-5", "l-4", "l-3", "l-2", "l-1", "l-0"]);
  t.same(await ids("?name=odd"), ["l-5", "l-3", "l-1"]);
  t.same(await ids("?session_id=s-1"), ["l-3", "l-2", "l-1", "l-0"]);
  t.same(await ids("?event_id=ev"), ["l-3"]);
  t.same(await ids("?source=eval"), ["l-6"]);
  t.same(await ids("?data_type=numeric&from=2026-11-20T10:00:02Z&to=2026-11-20T10:00:04Z"), ["l-3", "l-2"]);
  const first = (await get(api, "/v2/scores?limit=3")).json();
  t.same(
    first.scores.map((s: { id: string }) => s.id),
    ["l-6", "l-5", "l-4"],
  );
  const second = (await get(api, `/v2/scores?limit=3&cursor=${first.next_cursor}`)).json();
  t.same(
    second.scores.map((s: { id: string }) => s.id),
    ["l-3", "l-2", "l-1"],
  );
  const third = (await get(api, `/v2/scores?limit=3&cursor=${second.next_cursor}`)).json();
  t.same(
    third.scores.map((s: { id: string }) => s.id),
    ["l-0"],
  );
  t.equal(third.next_cursor, null);
  isError(t, await get(api, "/v2/scores?cursor=abc"), 400);
  isError(t, await get(api, "/v2/scores?from=soon"), 400);
  t.same(await ids("?name=odd"), ["l-5", "l-3", "l-1"], "nothing of another project");
  t.same((await get(api, "/v2/scores", OTHER_PROJECT_KEY)).json().scores, []);
});

t.test("scores go with their session: delete, bulk delete", async (t) => {
  const api = await app(t);
  await api.session("gone");
  await api.session("bulk", { tags: ["drop"] });
  await api.session("kept");
  isSuccess(
    t,
    await score(api, [
      { id: "g", name: "x", value: 1, session_id: "gone" },
      { id: "b", name: "x", value: 1, session_id: "bulk" },
      { id: "k", name: "x", value: 1, session_id: "kept" },
      { id: "c", name: "x", value: 1, conversation_id: "conv" },
    ]),
    ["score_ids"],
  );
  t.equal((await send(api, "DELETE", "/v2/sessions/gone")).statusCode, 200);
  const bulk = await api.withKey("/v2/delete_sessions", { tag: ["drop"] });
  t.equal(bulk.statusCode, 200, bulk.body);
  const left = (await get(api, "/v2/scores")).json().scores.map((s: { id: string }) => s.id);
  t.same(left.sort(), ["c", "k"]);
});

t.test(
  "GET /v2/sessions filters by score: ranges, labels, booleans, any, none; analytics and export alike",
  async (t) => {
    const api = await app(t);
    for (const id of ["a", "b", "c", "d"]) await api.session(id, { init_timestamp: "2026-11-20T10:00:00Z" });
    isSuccess(
      t,
      await score(api, [
        { name: "quality", value: 0.9, session_id: "a" },
        { name: "quality", value: 0.2, session_id: "b" },
        { name: "quality", value: 0.6, session_id: "c", event_id: "e-1" },
        { name: "verdict", value: "right", session_id: "a" },
        { name: "verdict", value: "wrong", session_id: "b" },
        { name: "ok", value: true, session_id: "c" },
        { name: "ok", value: false, session_id: "d" },
      ]),
      ["score_ids"],
    );
    const ids = async (query: string) => {
      const res = await get(api, `/v2/sessions?${query}`);
      t.equal(res.statusCode, 200, `${query}: ${res.body.slice(0, 200)}`);
      return (res.json().sessions as { session: { id: string } }[]).map((s) => s.session.id).sort();
    };
    t.same(await ids("score.quality=0.5.."), ["a", "c"], "at least, an event's score counting for its session");
    t.same(await ids("score.quality=..0.6"), ["b", "c"], "at most, both bounds included");
    t.same(await ids("score.quality=0.5..0.7"), ["c"]);
    t.same(await ids("score.verdict=right"), ["a"]);
    t.same(await ids("score.ok=true"), ["c"]);
    t.same(await ids("score.ok=false"), ["d"]);
    t.same(await ids("score.quality=*"), ["a", "b", "c"]);
    t.same(await ids("score.quality=-"), ["d"], "sessions without the score");
    t.same(await ids("score.quality=0..1&score.verdict=wrong"), ["b"], "every filter must match");
    t.same(await ids("score.verdict=0.5.."), [], "a range never matches a label");
    for (const bad of ["score.quality=..", "score.quality=1..x", "score.=1", "score.quality=%2B1.."]) {
      isError(t, await get(api, `/v2/sessions?${bad}`), 400, "Invalid request");
    }
    const series = await get(
      api,
      "/v2/analytics/timeseries?bucket=day&from=2026-11-20T00:00:00Z&to=2026-11-21T00:00:00Z&score.quality=0.5..",
    );
    t.equal(series.statusCode, 200, series.body.slice(0, 300));
    t.equal(series.json().points[0].sessions, 2, "analytics filter by score too");
    const exported = await get(api, "/v2/export?format=ndjson&score.quality=-");
    t.equal(exported.statusCode, 200);
    t.same(
      exported.body
        .trim()
        .split("\n")
        .map((line) => JSON.parse(line))
        .filter((line) => line.session)
        .map((line) => line.session.id),
      ["d"],
    );
  },
);

t.test("scores in the session answer, the events page and the export; import stores them back", async (t) => {
  const api = await app(t);
  const jwt = await api.session("r-1");
  await api.withJwt(
    "/v2/create_events",
    {
      events: [
        { type: "llm", id: "e-1", init_timestamp: "2026-11-20T10:00:01Z" },
        { type: "tool", id: "e-2", init_timestamp: "2026-11-20T10:00:02Z" },
      ],
    },
    jwt,
  );
  isSuccess(
    t,
    await score(api, [
      { id: "on-session", name: "overall", value: "good", session_id: "r-1", timestamp: "2026-11-20T10:00:09Z" },
      {
        id: "on-e1",
        name: "correct",
        value: true,
        session_id: "r-1",
        event_id: "e-1",
        timestamp: "2026-11-20T10:00:08Z",
      },
      { id: "on-e2", name: "speed", value: 3, session_id: "r-1", event_id: "e-2", metadata: { by: "judge" } },
    ]),
    ["score_ids"],
  );
  const session = isSuccess(t, await get(api, "/v2/sessions/r-1"), [
    "session",
    "stats",
    "agents",
    "scores",
    "session_url",
  ]);
  t.same(
    session.scores.map((s: { id: string }) => s.id).sort(),
    ["on-e1", "on-e2", "on-session"],
    "the session's and its events'",
  );
  const page = (await get(api, "/v2/sessions/r-1/events?limit=1")).json();
  t.same(
    page.events.map((e: { id: string }) => e.id),
    ["e-1"],
  );
  t.same(
    page.scores.map((s: { id: string }) => s.id),
    ["on-e1"],
    "the page's events' scores",
  );
  const whole = (await get(api, "/v2/sessions/r-1/export")).json();
  t.equal(whole.scores.length, 3);

  const ndjson = (await get(api, "/v2/export?format=ndjson")).body;
  const line = ndjson.split("\n").find((l) => l.includes('"r-1"')) as string;
  t.same(JSON.parse(line).scores.length, 3, "the NDJSON line carries the scores");
  // Into another project, as `agentmon import` does.
  const { importSessions } = await import("../services/import.ts");
  const keys = await api.store.listApiKeys();
  const other = keys.find((k) => k.project_name !== "default")?.project_id as string;
  const mine = keys.find((k) => k.project_name === "default")?.project_id as string;
  t.equal(await api.store.deleteSession(mine, "r-1"), true);
  async function* lines() {
    yield line;
  }
  const report = await importSessions(api.store, other, lines(), { iso: "2026-11-21T00:00:00Z", us: 0 });
  t.equal(report.scores, 3);
  const back = (await get(api, "/v2/scores?session_id=r-1", OTHER_PROJECT_KEY)).json().scores as {
    id: string;
    value: unknown;
    metadata: unknown;
  }[];
  t.same(back.map((s) => s.id).sort(), ["on-e1", "on-e2", "on-session"]);
  t.same(
    back.find((s) => s.id === "on-e2"),
    { ...back.find((s) => s.id === "on-e2"), value: 3, metadata: { by: "judge" } },
  );
  const again = await importSessions(api.store, other, lines(), { iso: "2026-11-21T00:00:00Z", us: 0 });
  t.equal(again.scores, 3, "a second import reads them");
  t.equal(
    (await get(api, "/v2/scores?session_id=r-1", OTHER_PROJECT_KEY)).json().scores.length,
    3,
    "and stores none twice",
  );
});
