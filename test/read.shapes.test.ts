/**
 * The read API (issue 5): what each operation answers (GET /v2/sessions, GET /v2/sessions/{id}, its
 * events, stats and export, DELETE) and the stats, through real HTTP (inject) on a real SQLite store.
 * Data is always written through the write API, so what is read back is what a client sent.
 */
import t from "tap";
import { API_KEY, build, isAnswer, isSuccess } from "./helper.ts";
import { createEvents, isBadParameter, read } from "./read.helpers.ts";

const SESSION_URL = "http://agentmon.test/sessions/";

// ----------------------------------------------------------------------------------- shapes

t.test("each read operation answers exactly its documented shape", async (t) => {
  const api = await build(t);
  const jwt = await api.session("shape", {
    init_timestamp: "2026-11-22T05:00:00Z",
    tags: ["x"],
    host_env: { OS: { OS: "Linux" } },
    video: null,
  });
  await api.withJwt("/v2/create_agent", { id: "planner", name: "Planner", color: "red", deep: { a: [null] } }, jwt);
  await api.withJwt("/v2/create_agent", { id: "coder" }, jwt);
  await createEvents(api, jwt, [{ type: "tool", id: "t1", init_timestamp: "2026-11-22T05:00:01Z", name: "calc" }]);
  const session = {
    id: "shape",
    init_timestamp: "2026-11-22T05:00:00Z",
    end_timestamp: null,
    end_state: null,
    end_state_reason: null,
    tags: ["x"],
    host_env: { OS: { OS: "Linux" } },
    video: null,
  };
  const stats = {
    events: 1,
    event_counts: { llm: 0, tool: 1, action: 0, error: 0 },
    prompt_tokens: 0,
    completion_tokens: 0,
    cache_read_tokens: 0,
    cache_creation_tokens: 0,
    reasoning_tokens: 0,
    cost: "0.00",
    duration_ms: 1000,
    error_count: 0,
    first_event_at: "2026-11-22T05:00:01Z",
    last_event_at: "2026-11-22T05:00:01Z",
  };
  const agents = [
    { id: "coder", name: null },
    { id: "planner", name: "Planner", color: "red", deep: { a: [null] } },
  ];
  const event = {
    id: "t1",
    type: "tool",
    session_id: "shape",
    init_timestamp: "2026-11-22T05:00:01Z",
    end_timestamp: null,
    agent_id: null,
    name: "calc",
  };

  t.test("GET /v2/sessions: sessions [{session, stats}] and next_cursor", async (t) => {
    const res = await read(api, "/v2/sessions");
    isSuccess(t, res, ["sessions", "next_cursor"]);
    isAnswer(t, res, 200, { status: "success", sessions: [{ session, stats }], next_cursor: null });
  });
  t.test("GET /v2/sessions/{id}: session, stats, agents (by id, extras kept), session_url", async (t) => {
    const res = await read(api, "/v2/sessions/shape");
    isSuccess(t, res, ["session", "stats", "agents", "scores", "session_url"]);
    isAnswer(t, res, 200, {
      status: "success",
      session,
      stats,
      agents,
      scores: [],
      session_url: `${SESSION_URL}shape`,
    });
  });
  t.test("GET /v2/sessions/{id}/events: events and next_cursor", async (t) => {
    const res = await read(api, "/v2/sessions/shape/events");
    isSuccess(t, res, ["events", "scores", "next_cursor"]);
    isAnswer(t, res, 200, { status: "success", events: [event], scores: [], next_cursor: null });
  });
  t.test("GET /v2/sessions/{id}/stats: stats", async (t) => {
    const res = await read(api, "/v2/sessions/shape/stats");
    isSuccess(t, res, ["stats"]);
    isAnswer(t, res, 200, { status: "success", stats });
  });
  t.test("GET /v2/sessions/{id}/export: session, stats, agents, events", async (t) => {
    const res = await read(api, "/v2/sessions/shape/export");
    isSuccess(t, res, ["session", "stats", "agents", "events", "scores"]);
    isAnswer(t, res, 200, { status: "success", session, stats, agents, events: [event], scores: [] });
  });
  t.test("DELETE /v2/sessions/{id}: status only", async (t) => {
    const res = await read(api, "/v2/sessions/shape", API_KEY, "DELETE");
    isSuccess(t, res, []);
    isAnswer(t, res, 200, { status: "success" });
  });
});

t.test("a session id with a slash, spaces and non-ASCII characters is read through its encoded path", async (t) => {
  const api = await build(t);
  const id = "run/42 é ü?#&";
  await api.session(id);
  const path = `/v2/sessions/${encodeURIComponent(id)}`;
  const res = await read(api, path);
  t.equal(res.statusCode, 200);
  t.equal(res.json().session.id, id);
  t.equal(res.json().session_url, `${SESSION_URL}${encodeURIComponent(id)}`);
  t.equal((await read(api, `${path}/stats`)).statusCode, 200);
  t.equal((await read(api, `${path}/events`)).statusCode, 200);
  const long = "L".repeat(256);
  await api.session(long);
  t.equal((await read(api, `/v2/sessions/${long}`)).json().session.id, long, "an id of 256 characters");
  const longUnicode = "é".repeat(256);
  await api.session(longUnicode);
  t.equal(
    (await read(api, `/v2/sessions/${encodeURIComponent(longUnicode)}`)).json().session.id,
    longUnicode,
    "256 characters of two UTF-8 bytes each, percent-encoded",
  );
  isBadParameter(t, await read(api, `/v2/sessions/${"L".repeat(257)}`), ["path.session_id"]);
});

// ----------------------------------------------------------------------------------- stats

t.test("Stats: counts, llm-only token sums, cost, duration, first and last event", async (t) => {
  const api = await build(t);
  const jwt = await api.session("st", { init_timestamp: "2026-11-22T05:00:00Z" });
  await createEvents(api, jwt, [
    {
      type: "llm",
      id: "a",
      init_timestamp: "2026-11-22T05:00:01Z",
      end_timestamp: "2026-11-22T05:00:03.5Z",
      prompt_tokens: 100,
      completion_tokens: 20,
      cache_read_tokens: 40,
      cache_creation_tokens: 10,
      // OpenAI's usage, spread into the event: its reasoning count is read.
      completion_tokens_details: { reasoning_tokens: 5 },
      cost: 0.25,
    },
    {
      event_type: "llms",
      id: "b",
      init_timestamp: "2026-11-22T05:00:02Z",
      model: "gpt-4o-mini",
      prompt_tokens: 1000,
      completion_tokens: 500,
    },
    // Tokens on a tool event are kept, but they are not the model's: not summed.
    {
      type: "tool",
      id: "c",
      init_timestamp: "2026-11-22T05:00:04.123456Z",
      end_timestamp: "2026-11-22T10:30:07.5+05:30",
      prompt_tokens: 7,
      cache_read_tokens: 3,
      cost: 9,
    },
    { type: "error", id: "d", init_timestamp: "2026-11-22T05:00:06Z" },
    { event_type: "errors", timestamp: "2026-11-22T05:00:05Z" },
    { type: "action", id: "f", init_timestamp: "2026-11-22T04:59:59Z" },
  ]);
  const expected = {
    events: 6,
    event_counts: { llm: 2, tool: 1, action: 1, error: 2 },
    prompt_tokens: 1100,
    completion_tokens: 520,
    cache_read_tokens: 40,
    cache_creation_tokens: 10,
    reasoning_tokens: 5,
    cost: "0.25045",
    duration_ms: 7500,
    error_count: 2,
    first_event_at: "2026-11-22T04:59:59Z",
    last_event_at: "2026-11-22T05:00:07.5Z",
  };
  isAnswer(t, await read(api, "/v2/sessions/st/stats"), 200, { status: "success", stats: expected });

  t.test("running: the duration runs to the latest event start or end", async (t) => {
    await createEvents(api, jwt, [{ type: "tool", id: "late", init_timestamp: "2026-11-22T05:00:08.000001Z" }]);
    const stats = (await read(api, "/v2/sessions/st/stats")).json().stats;
    t.equal(stats.duration_ms, 8000.001, "microseconds are kept as fractions of a millisecond");
    t.equal(stats.last_event_at, "2026-11-22T05:00:08.000001Z");
    t.equal(stats.events, 7);
  });

  t.test("ended: the duration is end_timestamp - init_timestamp, whatever the events", async (t) => {
    const res = await api.withJwt("/v2/update_session", { session: { end_timestamp: "2026-11-22T05:00:10.25Z" } }, jwt);
    t.equal(res.json().token_cost, "0.25045", "token_cost is the same sum");
    const stats = (await read(api, "/v2/sessions/st/stats")).json().stats;
    t.equal(stats.duration_ms, 10250);
    t.equal(stats.cost, res.json().token_cost);
  });

  t.test("no events: zeros, null first and last, duration 0 until it ends", async (t) => {
    const empty = await api.session("st-empty", { init_timestamp: "2026-11-22T05:00:00Z" });
    const zero = {
      events: 0,
      event_counts: { llm: 0, tool: 0, action: 0, error: 0 },
      prompt_tokens: 0,
      completion_tokens: 0,
      cache_read_tokens: 0,
      cache_creation_tokens: 0,
      reasoning_tokens: 0,
      cost: "0.00",
      duration_ms: 0,
      error_count: 0,
      first_event_at: null,
      last_event_at: null,
    };
    isAnswer(t, await read(api, "/v2/sessions/st-empty/stats"), 200, { status: "success", stats: zero });
    await api.withJwt("/v2/update_session", { session: { end_timestamp: "2026-11-22T05:01:00Z" } }, empty);
    t.equal((await read(api, "/v2/sessions/st-empty/stats")).json().stats.duration_ms, 60000);
  });

  t.test("a session that ends before it starts (a client clock) has duration 0, not a negative one", async (t) => {
    await api.session("st-neg", { init_timestamp: "2026-11-22T05:00:00Z", end_timestamp: "2026-11-22T04:00:00Z" });
    t.equal((await read(api, "/v2/sessions/st-neg/stats")).json().stats.duration_ms, 0);
  });

  t.test("list rows, getSession, stats and export give the same stats", async (t) => {
    const one = (await read(api, "/v2/sessions/st/stats")).json().stats;
    t.strictSame((await read(api, "/v2/sessions/st")).json().stats, one);
    t.strictSame((await read(api, "/v2/sessions/st/export")).json().stats, one);
    const row = (await read(api, "/v2/sessions?limit=200")).json().sessions.find((r: any) => r.session.id === "st");
    t.strictSame(row.stats, one);
  });
});
