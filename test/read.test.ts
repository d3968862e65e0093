/**
 * The read API (issue 5): GET /v2/sessions, GET /v2/sessions/{id}, its events, stats and export,
 * and DELETE, through real HTTP (inject) on a real SQLite store. Data is always written through
 * the write API, so what is read back is what a client sent.
 */
import type { LightMyRequestResponse } from "fastify";
import t, { type Test } from "tap";
import {
  API_KEY,
  build,
  eventViews,
  INVALID_API_KEY,
  inspect,
  isAnswer,
  isError,
  isInvalid,
  isSuccess,
  OTHER_PROJECT_KEY,
  type TestApp,
  UNKNOWN_KEY,
} from "./helper.ts";

const SESSION_URL = "http://agentmon.test/sessions/";
const at = (ms: number) => new Date(ms).toISOString();
const T0 = Date.UTC(2026, 10, 22, 5, 0, 0);

/** GET (or another method) with an API key, X-Agentmon-Api-Key unless another header is named. */
function read(api: TestApp, url: string, key = API_KEY, method: "GET" | "DELETE" | "HEAD" = "GET") {
  return api.inject({ method, url, headers: { "x-agentmon-api-key": key } });
}

const notFound = (id: string) => ({ error: "Not found", message: `No session ${id} in this project` });

/** A 400 of the read API naming exactly these parameters. */
function isBadParameter(t: Test, res: LightMyRequestResponse, paths: string[]) {
  const body = isInvalid(t, res, paths);
  t.match(body.message, /^The request is not valid: /, "the message speaks of the request, not a body");
  return body;
}

async function createEvents(api: TestApp, jwt: string, events: unknown[]) {
  for (let i = 0; i < events.length; i += 1000) {
    const res = await api.withJwt("/v2/create_events", { events: events.slice(i, i + 1000) }, jwt);
    if (res.statusCode !== 200) throw new Error(`create_events answered ${res.statusCode}: ${res.body}`);
  }
}

/** Every page of a list, following next_cursor; answers the rows and how many pages it took. */
async function allPages<T>(api: TestApp, url: string, key: "sessions" | "events", each?: (page: number) => unknown) {
  const rows: T[] = [];
  let cursor: string | null = null;
  let pages = 0;
  do {
    const sep = url.includes("?") ? "&" : "?";
    const res = await read(api, cursor === null ? url : `${url}${sep}cursor=${encodeURIComponent(cursor)}`);
    if (res.statusCode !== 200) throw new Error(`${url} answered ${res.statusCode}: ${res.body}`);
    const body = res.json();
    rows.push(...body[key]);
    cursor = body.next_cursor;
    pages += 1;
    await each?.(pages);
    if (pages > 1000) throw new Error("no end to the pages");
  } while (cursor !== null);
  return { rows, pages };
}

const ids = (rows: { session?: { id: string }; id?: string }[]) => rows.map((r) => r.session?.id ?? r.id);

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
    isSuccess(t, res, ["session", "stats", "agents", "session_url"]);
    isAnswer(t, res, 200, { status: "success", session, stats, agents, session_url: `${SESSION_URL}shape` });
  });
  t.test("GET /v2/sessions/{id}/events: events and next_cursor", async (t) => {
    const res = await read(api, "/v2/sessions/shape/events");
    isSuccess(t, res, ["events", "next_cursor"]);
    isAnswer(t, res, 200, { status: "success", events: [event], next_cursor: null });
  });
  t.test("GET /v2/sessions/{id}/stats: stats", async (t) => {
    const res = await read(api, "/v2/sessions/shape/stats");
    isSuccess(t, res, ["stats"]);
    isAnswer(t, res, 200, { status: "success", stats });
  });
  t.test("GET /v2/sessions/{id}/export: session, stats, agents, events", async (t) => {
    const res = await read(api, "/v2/sessions/shape/export");
    isSuccess(t, res, ["session", "stats", "agents", "events"]);
    isAnswer(t, res, 200, { status: "success", session, stats, agents, events: [event] });
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

// ----------------------------------------------------------------------------------- events

t.test("events are returned as they were sent (G5), with cost_source on llm events", async (t) => {
  const api = await build(t);
  const jwt = await api.session("g5");
  const sent = [
    {
      event_type: "tools",
      id: "t1",
      timestamp: "2026-11-22T10:39:43.640361+05:30",
      tool_name: "calc",
      params: { a: 1 },
      returns: "2",
      logs: null,
      agent_id: "planner",
      custom: { nested: [1, null, { deep: true }] },
      nothing: null,
    },
    {
      type: "llm",
      id: "l1",
      init_timestamp: "2026-11-22T05:09:44Z",
      end_timestamp: "2026-11-22T05:09:45.5Z",
      model: "gpt-4o-mini",
      prompt: [{ role: "user", content: "2+2?" }],
      completion: { role: "assistant", content: "4" },
      prompt_tokens: 10,
      completion_tokens: 5,
      thread_id: "th",
      params: { temperature: 0 },
      cost_source: "mine",
    },
    {
      type: "llm",
      id: "l2",
      init_timestamp: "2026-11-22T05:09:46Z",
      cost: 0.5,
      model: "gpt-4o-mini",
      prompt_tokens: 1,
    },
    { type: "llm", id: "l3", init_timestamp: "2026-11-22T05:09:47Z", model: "no-such-model", prompt_tokens: 1 },
    {
      type: "error",
      id: "e1",
      init_timestamp: "2026-11-22T05:09:48Z",
      code: 42,
      details: { why: "x" },
      cost_source: 7,
    },
  ];
  await createEvents(api, jwt, sent);
  const res = await read(api, "/v2/sessions/g5/events");
  const events = isSuccess(t, res, ["events", "next_cursor"]).events;
  t.strictSame(events, [
    {
      id: "t1",
      type: "tool",
      session_id: "g5",
      init_timestamp: "2026-11-22T05:09:43.640361Z",
      end_timestamp: null,
      agent_id: "planner",
      name: "calc",
      input: { a: 1 },
      output: "2",
      event_type: "tools",
      timestamp: "2026-11-22T05:09:43.640361Z",
      tool_name: "calc",
      params: { a: 1 },
      returns: "2",
      custom: { nested: [1, null, { deep: true }] },
      nothing: null,
    },
    {
      id: "l1",
      type: "llm",
      session_id: "g5",
      init_timestamp: "2026-11-22T05:09:44Z",
      end_timestamp: "2026-11-22T05:09:45.5Z",
      agent_id: null,
      model: "gpt-4o-mini",
      prompt_tokens: 10,
      completion_tokens: 5,
      prompt: [{ role: "user", content: "2+2?" }],
      completion: { role: "assistant", content: "4" },
      thread_id: "th",
      params: { temperature: 0 },
      cost: 0.0000045,
      cost_source: "table",
    },
    {
      id: "l2",
      type: "llm",
      session_id: "g5",
      init_timestamp: "2026-11-22T05:09:46Z",
      end_timestamp: null,
      agent_id: null,
      model: "gpt-4o-mini",
      prompt_tokens: 1,
      cost: 0.5,
      cost_source: "client",
    },
    {
      id: "l3",
      type: "llm",
      session_id: "g5",
      init_timestamp: "2026-11-22T05:09:47Z",
      end_timestamp: null,
      agent_id: null,
      model: "no-such-model",
      prompt_tokens: 1,
      cost_source: "unknown",
    },
    {
      id: "e1",
      type: "error",
      session_id: "g5",
      init_timestamp: "2026-11-22T05:09:48Z",
      end_timestamp: null,
      agent_id: null,
      code: 42,
      details: { why: "x" },
      cost_source: 7,
    },
  ]);

  t.test("each event is the write side's view of it, plus the cost the server knows on llm events", async (t) => {
    const written = await eventViews(api.store, "g5");
    t.equal(written.length, events.length);
    events.forEach((event: Record<string, unknown>, i: number) => {
      const written_ = written[i] as Record<string, unknown>;
      if (event.type !== "llm") {
        t.strictSame(event, written_, `${event.id} is exactly the write side's view`);
        return;
      }
      const { cost_source, cost, ...rest } = event;
      const { cost: sentCost, cost_source: sentSource, ...writtenRest } = written_;
      t.strictSame(rest, writtenRest, `${event.id}: the same fields`);
      t.equal(
        sentCost,
        cost_source === "client" ? cost : undefined,
        `${event.id}: the write side shows only a client's cost`,
      );
      t.equal(
        sentSource,
        event.id === "l1" ? "mine" : undefined,
        `${event.id}: a client's own cost_source is kept in storage`,
      );
    });
  });

  t.test("export lists the same events in the same order", async (t) => {
    t.strictSame((await read(api, "/v2/sessions/g5/export")).json().events, events);
  });

  t.test("type filters by kind, one or several, singular or the SDK's plural", async (t) => {
    const kinds = async (query: string) => ids((await read(api, `/v2/sessions/g5/events?${query}`)).json().events);
    t.strictSame(await kinds("type=llm"), ["l1", "l2", "l3"]);
    t.strictSame(await kinds("type=llms"), ["l1", "l2", "l3"]);
    t.strictSame(await kinds("type=tools&type=error"), ["t1", "e1"]);
    t.strictSame(await kinds("type=tool&type=tools"), ["t1"], "a kind named twice is listed once");
    t.strictSame(await kinds("type=action"), []);
    t.strictSame(await kinds("type=llm&type=tool&type=action&type=error"), ["t1", "l1", "l2", "l3", "e1"]);
  });
});

t.test("events: 2500 in a session, pages of 1000 in (init_timestamp, id) order, each exactly once", async (t) => {
  const api = await build(t);
  const jwt = await api.session("many");
  // Three events share each millisecond, so the id decides their order; sent in reverse.
  const all = Array.from({ length: 2500 }, (_, i) => ({
    type: ["llm", "tool", "action", "error"][i % 4],
    id: `e${String(i).padStart(4, "0")}`,
    init_timestamp: at(T0 + Math.floor(i / 3)),
  }));
  await createEvents(api, jwt, [...all].reverse());
  const order = all.map((e) => e.id);

  const seen: string[] = [];
  const { rows, pages } = await allPages<{ id: string }>(api, "/v2/sessions/many/events?limit=1000", "events");
  seen.push(...ids(rows).map(String));
  t.equal(pages, 3, "three pages");
  t.equal(rows.length, 2500);
  t.equal(new Set(seen).size, 2500, "no event twice");
  t.strictSame(seen, order, "in (init_timestamp, id) order");

  t.test("the default page is 100 events", async (t) => {
    const res = (await read(api, "/v2/sessions/many/events")).json();
    t.equal(res.events.length, 100);
    t.type(res.next_cursor, "string");
  });

  t.test("filtered by kind, across pages", async (t) => {
    const { rows } = await allPages<{ id: string }>(
      api,
      "/v2/sessions/many/events?limit=333&type=llm&type=errors",
      "events",
    );
    t.strictSame(
      ids(rows),
      all.filter((e) => e.type === "llm" || e.type === "error").map((e) => e.id),
    );
  });

  t.test("stable while events arrive: earlier ones are not seen, later ones are, none twice", async (t) => {
    const extra = [
      { type: "tool", id: "x-early", init_timestamp: at(T0 - 1000) },
      { type: "tool", id: "x-tie", init_timestamp: at(T0 + 100) }, // e0300's millisecond: inside the first page
      { type: "tool", id: "x-late", init_timestamp: at(T0 + 10_000) },
    ];
    let added = false;
    const { rows } = await allPages<{ id: string }>(
      api,
      "/v2/sessions/many/events?limit=1000",
      "events",
      async (page) => {
        if (page === 1 && !added) {
          added = true;
          await createEvents(api, jwt, extra);
        }
      },
    );
    const got = ids(rows).map(String);
    t.equal(new Set(got).size, got.length, "no event twice");
    t.strictSame(
      got.filter((id) => id.startsWith("e")),
      order,
      "every event there before paging began, once, in order",
    );
    t.notOk(got.includes("x-early"), "an event before the first page's end is not seen");
    t.notOk(got.includes("x-tie"), "nor one in the first page's span");
    t.ok(got.includes("x-late"), "an event after the cursor is");
  });
});

// ----------------------------------------------------------------------------------- session pages

t.test("sessions: 450 sessions, pages of 200, newest first, each exactly once", async (t) => {
  const api = await build(t);
  // Two sessions share each second, so the id (descending) decides between them.
  const created: { id: string; us: number }[] = [];
  for (let i = 0; i < 450; i += 1) {
    const id = `p${String(i).padStart(3, "0")}`;
    const ms = T0 + Math.floor(i / 2) * 1000;
    await api.session(id, { init_timestamp: at(ms) });
    created.push({ id, us: ms * 1000 });
  }
  await api.session("elsewhere", { init_timestamp: at(T0 + 10_000_000) }, OTHER_PROJECT_KEY);
  const order = [...created].sort((a, b) => b.us - a.us || (a.id < b.id ? 1 : a.id > b.id ? -1 : 0)).map((s) => s.id);

  const { rows, pages } = await allPages<{ session: { id: string } }>(api, "/v2/sessions?limit=200", "sessions");
  t.equal(pages, 3);
  t.equal(rows.length, 450);
  t.equal(new Set(ids(rows)).size, 450, "no session twice");
  t.strictSame(ids(rows), order, "init_timestamp descending, then id descending");
  t.notOk(ids(rows).includes("elsewhere"), "another project's sessions are never listed");

  t.test("the default page is 50", async (t) => {
    const body = (await read(api, "/v2/sessions")).json();
    t.equal(body.sessions.length, 50);
    t.strictSame(ids(body.sessions), order.slice(0, 50));
  });

  t.test("a page of exactly the rest has no next_cursor", async (t) => {
    const first = (await read(api, "/v2/sessions?limit=200")).json();
    const second = (await read(api, `/v2/sessions?limit=200&cursor=${first.next_cursor}`)).json();
    const third = (await read(api, `/v2/sessions?limit=50&cursor=${second.next_cursor}`)).json();
    t.equal(third.sessions.length, 50);
    t.equal(third.next_cursor, null);
  });

  t.test("stable while sessions arrive: newer ones wait for a new first page; none is listed twice", async (t) => {
    let added = false;
    const { rows } = await allPages<{ session: { id: string } }>(
      api,
      "/v2/sessions?limit=200",
      "sessions",
      async () => {
        if (added) return;
        added = true;
        await api.session("new-newest", { init_timestamp: at(T0 + 9_000_000) });
        await api.session("new-tie", { init_timestamp: at(T0 + 224_000) }); // the newest pair's second
        await api.session("new-oldest", { init_timestamp: at(T0 - 1000) });
      },
    );
    const got = ids(rows).map(String);
    t.equal(new Set(got).size, got.length, "no session twice");
    t.strictSame(
      got.filter((id) => /^p\d+$/.test(id)),
      order,
      "every session there before paging began, once, in order",
    );
    t.notOk(got.includes("new-newest"));
    t.notOk(got.includes("new-tie"), "a session sorting before the cursor is not seen");
    t.ok(got.includes("new-oldest"), "one sorting after the cursor is");
    t.equal(ids((await read(api, "/v2/sessions?limit=1")).json().sessions)[0], "new-newest", "a new first page has it");
  });
});

// ----------------------------------------------------------------------------------- filters

interface Row {
  id: string;
  us: number;
  tags: string[] | null;
  state: string | null;
  reason: string | null;
  agents: Set<string>;
}

t.test("filters: each alone and every combination, as one page and across pages", async (t) => {
  const api = await build(t);
  const model: Row[] = [];
  const STATES = [
    ["completed", "Success"],
    ["failed", "Fail"],
    ["unknown", "Indeterminate"],
    [null, null],
  ] as const;
  const REASONS = [null, "Timeout in step", "ÉCHEC du réseau", "ok"];
  for (let i = 0; i < 40; i += 1) {
    const id = `f${String(i).padStart(2, "0")}`;
    const ms = T0 + Math.floor(i / 2) * 60_000;
    const tags = i % 10 === 9 ? null : ([["red"], ["red", "blue"], ["blue", "green"]][i % 3] ?? null);
    const [alias, state] = STATES[i % 4] ?? [null, null];
    const text = REASONS[(i + Math.floor(i / 4)) % 4]; // not in step with the end states
    const reason = text === null ? null : `${text} ${i}`;
    const fields: Record<string, unknown> = { init_timestamp: at(ms), tags };
    if (alias !== null) fields.end_state = alias;
    if (reason !== null) fields.end_state_reason = reason;
    const jwt = await api.session(id, fields);
    const agents = new Set<string>();
    if (i % 5 === 0) {
      await api.withJwt("/v2/create_agent", { id: "planner", name: "P" }, jwt); // registered only
      agents.add("planner");
    }
    if (i % 5 === 1) {
      await createEvents(api, jwt, [{ type: "tool", agent_id: "planner" }]); // named by an event only
      agents.add("planner");
    }
    if (i % 7 === 0) {
      await createEvents(api, jwt, [{ type: "llm", agent_id: "coder" }]);
      agents.add("coder");
    }
    model.push({ id, us: ms * 1000, tags, state, reason, agents });
  }
  // Another project's sessions match every filter too, and must never show.
  const other = await api.session(
    "other-f",
    { init_timestamp: at(T0 + 600_000), tags: ["red", "blue"], end_state: "failed", end_state_reason: "Timeout" },
    OTHER_PROJECT_KEY,
  );
  await api.withJwt("/v2/create_agent", { id: "planner" }, other);

  const order = (rows: Row[]) =>
    [...rows].sort((a, b) => b.us - a.us || (a.id < b.id ? 1 : a.id > b.id ? -1 : 0)).map((r) => r.id);
  const FROM = T0 + 5 * 60_000;
  const TO = T0 + 15 * 60_000;

  const TAGS = [undefined, ["red"], ["red", "blue"]];
  const STATE = [undefined, "failed"];
  const RANGE = [undefined, true];
  const AGENT = [undefined, "planner"];
  const Q = [undefined, "TIMEOUT"];
  let combinations = 0;
  let nonEmpty = 0;
  for (const tags of TAGS)
    for (const state of STATE)
      for (const range of RANGE)
        for (const agent of AGENT)
          for (const q of Q) {
            const params = new URLSearchParams();
            for (const tag of tags ?? []) params.append("tag", tag);
            if (state) params.set("end_state", state);
            // from with an offset: 10:35+05:30 is 05:05Z.
            if (range) params.set("from", "2026-11-22T10:35:00+05:30");
            if (range) params.set("to", at(TO));
            if (agent) params.set("agent_id", agent);
            if (q) params.set("q", q);
            const expected = order(
              model.filter(
                (r) =>
                  (tags ?? []).every((tag) => r.tags?.includes(tag)) &&
                  (!state || r.state === "Fail") &&
                  (!range || (r.us >= FROM * 1000 && r.us < TO * 1000)) &&
                  (!agent || r.agents.has(agent)) &&
                  (!q || (r.reason ?? "").toLowerCase().includes(q.toLowerCase())),
              ),
            );
            if (expected.length > 0) nonEmpty += 1;
            const name = params.toString() || "no filter";
            const page = (await read(api, `/v2/sessions?limit=200&${params}`)).json();
            t.strictSame(ids(page.sessions), expected, `${name}: one page`);
            const { rows } = await allPages<{ session: { id: string } }>(
              api,
              `/v2/sessions?limit=3&${params}`,
              "sessions",
            );
            t.strictSame(ids(rows), expected, `${name}: pages of 3`);
            combinations += 1;
          }
  t.equal(combinations, 48);
  t.ok(nonEmpty >= 40, `most combinations select some sessions, not none (${nonEmpty})`);

  t.test("all six filters at once", async (t) => {
    const query = `tag=red&end_state=Fail&from=${at(T0)}&to=${at(T0 + 20 * 60_000)}&agent_id=planner&q=timeout`;
    const expected = order(
      model.filter(
        (r) =>
          r.tags?.includes("red") &&
          r.state === "Fail" &&
          r.agents.has("planner") &&
          (r.reason ?? "").toLowerCase().includes("timeout"),
      ),
    );
    t.ok(expected.length > 0);
    t.strictSame(ids((await read(api, `/v2/sessions?${query}`)).json().sessions), expected);
  });

  const list = async (query: string) => ids((await read(api, `/v2/sessions?limit=200&${query}`)).json().sessions);
  t.test("tag: a session must have every tag given; an unknown tag matches nothing", async (t) => {
    t.strictSame(await list("tag=green"), order(model.filter((r) => r.tags?.includes("green"))));
    t.strictSame(await list("tag=red&tag=green"), []);
    t.strictSame(await list("tag=red&tag=red"), await list("tag=red"), "a tag named twice is one condition");
    t.strictSame(await list("tag=nope"), []);
  });
  t.test("end_state: canonical names and S5 aliases, any case", async (t) => {
    const of = (state: string | null) => order(model.filter((r) => r.state === state));
    t.strictSame(await list("end_state=Success"), of("Success"));
    t.strictSame(await list("end_state=OK"), of("Success"));
    t.strictSame(await list("end_state=errored"), of("Fail"));
    t.strictSame(await list("end_state=INDETERMINATE"), of("Indeterminate"));
    t.strictSame(await list("end_state="), of("Indeterminate"), 'the alias "" is Indeterminate (S5)');
  });
  t.test("from is inclusive, to exclusive, on init_timestamp", async (t) => {
    const first = model.find((r) => r.id === "f10") as Row; // T0 + 5 min exactly
    t.equal(first.us, FROM * 1000);
    t.strictSame(await list(`from=${at(FROM)}&to=${at(FROM + 1)}`), ["f11", "f10"]);
    t.strictSame(await list(`from=${at(FROM - 60_000)}&to=${at(FROM)}`), ["f09", "f08"]);
    t.strictSame(await list(`to=${at(T0)}`), []);
    t.strictSame(await list(`from=${encodeURIComponent("2026-11-22 05:19:00")}`), ["f39", "f38"], "no offset: UTC");
  });
  t.test("agent_id: a registered agent or an event's agent_id", async (t) => {
    t.strictSame(await list("agent_id=coder"), order(model.filter((r) => r.agents.has("coder"))));
    t.ok((await list("agent_id=planner")).includes("f00"), "registered only");
    t.ok((await list("agent_id=planner")).includes("f01"), "named by an event only");
    t.strictSame(await list("agent_id=nobody"), []);
  });
  t.test("q: a case-insensitive substring of end_state_reason, Unicode included", async (t) => {
    const with_ = (text: string) => order(model.filter((r) => (r.reason ?? "").includes(text)));
    t.strictSame(await list("q=%C3%A9chec"), with_("ÉCHEC"), "échec finds ÉCHEC");
    t.strictSame(await list("q=step%201"), with_("step 1"));
    t.strictSame(await list("q="), order(model), "an empty q filters nothing");
    t.strictSame(await list("q=%25"), [], "% is a character, not a wildcard");
  });
});

// ----------------------------------------------------------------------------------- validation

t.test("query parameters are checked against the spec; failures name query.<name>", async (t) => {
  const api = await build(t);
  await api.session("v");
  const cases: [string, string[]][] = [
    ["/v2/sessions?limit=0", ["query.limit"]],
    ["/v2/sessions?limit=201", ["query.limit"]],
    ["/v2/sessions?limit=abc", ["query.limit"]],
    ["/v2/sessions?limit=1.5", ["query.limit"]],
    ["/v2/sessions?limit=", ["query.limit"]],
    ["/v2/sessions?limit=5&limit=6", ["query.limit"]],
    ["/v2/sessions?from=2026-11-22", ["query.from"]],
    ["/v2/sessions?to=yesterday", ["query.to"]],
    ["/v2/sessions?end_state=finished", ["query.end_state"]],
    ["/v2/sessions?agent_id=", ["query.agent_id"]],
    [`/v2/sessions?tag=a&tag=${"x".repeat(257)}`, ["query.tag[1]"]],
    [`/v2/sessions?q=${"x".repeat(257)}`, ["query.q"]],
    ["/v2/sessions?limit=0&from=nope&tag=ok", ["query.limit", "query.from"]],
    ["/v2/sessions/v/events?limit=1001", ["query.limit"]],
    ["/v2/sessions/v/events?limit=0", ["query.limit"]],
    ["/v2/sessions/v/events?type=chat", ["query.type[0]"]],
    ["/v2/sessions/v/events?type=llm&type=chat", ["query.type[1]"]],
  ];
  for (const [url, paths] of cases) {
    t.test(url.slice(0, 80), async (t) => {
      const body = isBadParameter(t, await read(api, url), paths);
      if (paths[0] === "query.limit" && url.includes("=201")) {
        t.strictSame(body.details, [{ path: "query.limit", message: "must be <= 200" }]);
      }
    });
  }
  t.test("the end_state message lists the accepted values", async (t) => {
    const body = isBadParameter(t, await read(api, "/v2/sessions?end_state=finished"), ["query.end_state"]);
    t.match(body.details?.[0]?.message, /must be one of Success, Fail, Indeterminate/);
  });
  t.test("a single tag or type works as well as several", async (t) => {
    t.equal((await read(api, "/v2/sessions?tag=a")).statusCode, 200);
    t.equal((await read(api, "/v2/sessions?tag=a&tag=b")).statusCode, 200);
    t.equal((await read(api, "/v2/sessions/v/events?type=llm")).statusCode, 200);
    t.equal((await read(api, "/v2/sessions/v/events?type=llm&type=tools")).statusCode, 200);
    t.equal((await read(api, "/v2/sessions?limit=200&unknown=1")).statusCode, 200, "unknown parameters are ignored");
  });
  t.test("a bad parameter on a session of another project is still a 400 (checked before the lookup)", async (t) => {
    isBadParameter(t, await read(api, "/v2/sessions/v/events?limit=0", OTHER_PROJECT_KEY), ["query.limit"]);
  });
});

t.test("cursors are opaque, and a cursor that was altered is a 400 naming query.cursor", async (t) => {
  const api = await build(t);
  for (let i = 0; i < 3; i += 1) await api.session(`c${i}`);
  const jwt = await api.session("cev");
  await createEvents(api, jwt, [{ type: "tool" }, { type: "tool" }, { type: "tool" }]);
  const sessionsCursor = (await read(api, "/v2/sessions?limit=1")).json().next_cursor as string;
  const eventsCursor = (await read(api, "/v2/sessions/cev/events?limit=1")).json().next_cursor as string;
  t.match(sessionsCursor, /^[A-Za-z0-9_-]+$/, "base64url");
  t.match(eventsCursor, /^[A-Za-z0-9_-]+$/);
  t.equal((await read(api, `/v2/sessions?limit=1&cursor=${sessionsCursor}`)).statusCode, 200, "the cursor as given");

  const flip = (text: string, i: number) => `${text.slice(0, i)}${text[i] === "A" ? "B" : "A"}${text.slice(i + 1)}`;
  const bad = [
    flip(sessionsCursor, 3),
    flip(sessionsCursor, sessionsCursor.length - 1),
    sessionsCursor.slice(0, -2),
    `${sessionsCursor}AA`,
    Buffer.from(JSON.stringify(["sessions", 0, "c1"])).toString("base64url"),
    "not a cursor!",
    "",
    "A".repeat(1025),
  ];
  for (const cursor of bad) {
    const res = await read(api, `/v2/sessions?cursor=${encodeURIComponent(cursor)}`);
    isBadParameter(t, res, ["query.cursor"]);
  }
  isAnswer(t, await read(api, `/v2/sessions?cursor=${flip(sessionsCursor, 5)}`), 400, {
    error: "Invalid request",
    message:
      "The request is not valid: query.cursor is not a cursor this operation made; pass next_cursor back as it was given",
    details: [
      {
        path: "query.cursor",
        message: "is not a cursor this operation made; pass next_cursor back as it was given",
      },
    ],
  });
  isBadParameter(t, await read(api, `/v2/sessions/cev/events?cursor=${sessionsCursor}`), ["query.cursor"]);
  isBadParameter(t, await read(api, `/v2/sessions?cursor=${eventsCursor}`), ["query.cursor"]);
  isBadParameter(t, await read(api, `/v2/sessions/cev/events?cursor=${flip(eventsCursor, 4)}`), ["query.cursor"]);
});

// ----------------------------------------------------------------------------------- auth, isolation

const OPERATIONS: [string, "GET" | "DELETE", string][] = [
  ["getSession", "GET", ""],
  ["listSessionEvents", "GET", "/events"],
  ["getSessionStats", "GET", "/stats"],
  ["exportSession", "GET", "/export"],
  ["deleteSession", "DELETE", ""],
];

t.test("isolation: another project's session is a 404 exactly like an unknown one, for every operation", async (t) => {
  const api = await build(t);
  const jwt = await api.session("mine", { tags: ["shared"] });
  await createEvents(api, jwt, [{ type: "llm", agent_id: "a" }]);
  await api.withJwt("/v2/create_agent", { id: "a" }, jwt);
  const before = (await read(api, "/v2/sessions/mine/export")).body;
  for (const [op, method, suffix] of OPERATIONS) {
    const foreign = await read(api, `/v2/sessions/mine${suffix}`, OTHER_PROJECT_KEY, method);
    isError(t, foreign, 404, "Not found");
    t.strictSame(foreign.json(), notFound("mine"), `${op}: the other project gets a 404`);
    const unknown = await read(api, `/v2/sessions/nope${suffix}`, API_KEY, method);
    t.strictSame(unknown.json(), notFound("nope"), `${op}: an unknown id, the same 404`);
  }
  for (const query of ["", "?tag=shared", "?agent_id=a", "?limit=200"]) {
    const res = await read(api, `/v2/sessions${query}`, OTHER_PROJECT_KEY);
    isAnswer(t, res, 200, { status: "success", sessions: [], next_cursor: null }, `list${query} is empty`);
  }
  t.equal((await read(api, "/v2/sessions/mine/export")).body, before, "the other project's DELETE changed nothing");
});

t.test("auth: every read operation needs an API key (either header); a JWT is not one", async (t) => {
  // Many failed checks from one address here; the limit of 4.6 is not what this test is about.
  const api = await build(t, { authFailLimit: 1000 });
  const jwt = await api.session("auth");
  for (const [op, method, suffix] of [["listSessions", "GET", "x"] as const, ...OPERATIONS]) {
    const url = op === "listSessions" ? "/v2/sessions" : `/v2/sessions/auth${suffix}`;
    isAnswer(t, await api.inject({ method, url }), 401, INVALID_API_KEY, `${op}: no key`);
    isAnswer(t, await read(api, url, UNKNOWN_KEY, method), 401, INVALID_API_KEY, `${op}: unknown key`);
    isAnswer(
      t,
      await api.inject({ method, url, headers: { authorization: `Bearer ${jwt}` } }),
      401,
      INVALID_API_KEY,
      `${op}: a JWT`,
    );
    isAnswer(
      t,
      await api.inject({ method, url: `${url}${url.includes("?") ? "&" : "?"}limit=0` }),
      401,
      INVALID_API_KEY,
      `${op}: 401 comes before the 400 of a bad parameter (G3)`,
    );
    if (method === "GET") {
      const head = await api.inject({ method: "HEAD", url });
      t.equal(head.statusCode, 401, `${op}: HEAD needs the key too`);
    }
  }
  const agentops = await api.inject({
    method: "GET",
    url: "/v2/sessions/auth",
    headers: { "x-agentops-api-key": API_KEY },
  });
  t.equal(agentops.statusCode, 200, "X-Agentops-Api-Key works");
  const head = await api.inject({
    method: "HEAD",
    url: "/v2/sessions/auth",
    headers: { "x-agentmon-api-key": API_KEY },
  });
  t.equal(head.statusCode, 200, "HEAD with the key");
  t.equal(head.body, "", "HEAD has no body");
});

t.test("429: after too many failed key checks from an address, reads are refused too (4.6)", async (t) => {
  const api = await build(t, { authFailLimit: 2 });
  await api.session("limited");
  for (let i = 0; i < 2; i += 1) t.equal((await read(api, "/v2/sessions", UNKNOWN_KEY)).statusCode, 401);
  const res = await read(api, "/v2/sessions/limited");
  isError(t, res, 429, "Too many requests");
  t.match(res.headers["retry-after"], /^\d+$/, "with Retry-After");
});

t.test("503 with Retry-After when storage is unavailable, and nothing internal in the body", async (t) => {
  const api = await build(t);
  await api.session("down");
  await api.store.close();
  for (const url of ["/v2/sessions", "/v2/sessions/down", "/v2/sessions/down/events", "/v2/sessions/down/stats"]) {
    const res = await read(api, url);
    isError(t, res, 503, "Service unavailable");
    t.match(res.headers["retry-after"], /^\d+$/, `${url}: Retry-After`);
  }
});

// ----------------------------------------------------------------------------------- delete

t.test("DELETE removes the session, its events and agents, and nothing else", async (t) => {
  const api = await build(t);
  const jwt = await api.session("doomed", { tags: ["t"] });
  await createEvents(
    api,
    jwt,
    Array.from({ length: 1500 }, (_, i) => ({ type: "llm", id: `d${i}`, agent_id: "ag" })),
  );
  await api.withJwt("/v2/create_agent", { id: "ag", name: "Agent" }, jwt);
  const keepJwt = await api.session("kept", { tags: ["t"] });
  await createEvents(api, keepJwt, [{ type: "llm", id: "d1", agent_id: "ag" }]);
  await api.withJwt("/v2/create_agent", { id: "ag", name: "Agent" }, keepJwt);
  const keptBefore = (await read(api, "/v2/sessions/kept/export")).body;

  isAnswer(t, await read(api, "/v2/sessions/doomed", API_KEY, "DELETE"), 200, { status: "success" });
  t.equal(await inspect(api.store).getSession("doomed"), undefined, "the session is gone");
  t.strictSame(await inspect(api.store).listEvents("doomed"), [], "its events are gone");
  t.strictSame(await inspect(api.store).listAgents("doomed"), [], "its agents are gone");
  for (const [, , suffix] of OPERATIONS.filter(([, method]) => method === "GET")) {
    isAnswer(t, await read(api, `/v2/sessions/doomed${suffix}`), 404, notFound("doomed"));
  }
  t.strictSame(ids((await read(api, "/v2/sessions?tag=t")).json().sessions), ["kept"], "no longer listed");
  t.equal((await read(api, "/v2/sessions/kept/export")).body, keptBefore, "the other session is untouched");
  isAnswer(t, await read(api, "/v2/sessions/doomed", API_KEY, "DELETE"), 404, notFound("doomed"), "a second delete");

  t.test("the deleted session's JWT: every write is a 404; create_session makes a new, empty session", async (t) => {
    const writes: [string, unknown][] = [
      ["/v2/update_session", { session: { end_state: "Success" } }],
      ["/v2/create_events", { events: [{ type: "tool" }] }],
      ["/create_events", { events: [{ type: "tool" }] }],
      ["/v2/update_events", { events: [{ event_id: "d1", cost: 1 }] }],
      ["/v2/create_agent", { id: "ag" }],
    ];
    for (const [url, body] of writes) {
      isAnswer(t, await api.withJwt(url, body, jwt), 404, notFound("doomed"), url);
    }
    isAnswer(t, await api.withKey("/v2/reauthorize_jwt", { session_id: "doomed" }), 404, notFound("doomed"));
    t.equal(await inspect(api.store).getSession("doomed"), undefined, "nothing was written");
    await api.session("doomed");
    const stats = (await read(api, "/v2/sessions/doomed/stats")).json().stats;
    t.equal(stats.events, 0, "a new session with the same id starts empty");
    t.equal(
      (await api.withJwt("/v2/create_agent", { id: "ag" }, jwt)).statusCode,
      200,
      "and the old JWT names it again",
    );
  });
});
