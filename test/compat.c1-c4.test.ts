/**
 * openapi.yaml "AgentOps compatibility", rules C1..C4: GET /health, POST /v2/developer_errors,
 * POST /v2/create_thread and GET /drilldown, through real HTTP on a real SQLite store. Every
 * subtest name starts with the rule id it pins.
 */
import t from "tap";
import { base, NOW, NOW_ISO, UUID_V7 } from "./events.helpers.ts";
import {
  API_KEY,
  build,
  eventViews,
  forbidden,
  INVALID_API_KEY,
  INVALID_JWT,
  isAnswer,
  isError,
  isInvalid,
  isSuccess,
  OTHER_PROJECT_KEY,
  rawPost,
  UNKNOWN_KEY,
} from "./helper.ts";

const notFound = (id: string) => ({ error: "Not found", message: `No session ${id} in this project` });

// ------------------------------------------------------------------------------------------ C1

t.test("C1: GET /health answers as GET /healthz", async (t) => {
  let now = NOW;
  const api = await build(t, { now: () => now });
  now += 5_000;
  const alias = await api.inject({ method: "GET", url: "/health" });
  const healthz = await api.inject({ method: "GET", url: "/healthz" });
  isAnswer(t, alias, 200, { status: "success", uptime_s: 5 });
  t.equal(alias.body, healthz.body, "the same body");
  t.equal(alias.headers["content-type"], healthz.headers["content-type"], "the same content type");
  const head = await api.inject({ method: "HEAD", url: "/health" });
  t.equal(head.statusCode, 200, "HEAD too, like every GET");
  const post = await api.inject({ method: "POST", url: "/health" });
  isError(t, post, 405, "Method not allowed");
  t.equal(post.headers.allow, "GET");
});

// ------------------------------------------------------------------------------------------ C2

/** What AgentOps SDK 0.3.x's MetaClient.send_exception_to_server posts (agentops/meta_client.py). */
const report = (sessionId?: string | null) => ({
  sdk_version: "0.3.26",
  type: "AttributeError",
  message: "'NoneType' object has no attribute 'flush'",
  stack_trace:
    "Traceback (most recent call last):\n  ...\nAttributeError: 'NoneType' object has no attribute 'flush'\n",
  host_env: { OS: { OS: "Linux", "OS Release": "6.18" }, SDK: { "AgentOps SDK Version": null } },
  ...(sessionId === undefined ? {} : { session_id: sessionId }),
});

/** The error event a report becomes (C2), as the read API gives it. */
const reported = (id: string, sessionId: string, extra: Record<string, unknown> = {}) => ({
  ...base(id, "error", sessionId),
  error_type: "AttributeError",
  details: "'NoneType' object has no attribute 'flush'",
  logs: "Traceback (most recent call last):\n  ...\nAttributeError: 'NoneType' object has no attribute 'flush'\n",
  sdk_version: "0.3.26",
  host_env: { OS: { OS: "Linux", "OS Release": "6.18" }, SDK: { "AgentOps SDK Version": null } },
  ...extra,
});

t.test("C2: POST /v2/developer_errors", async (t) => {
  const api = await build(t, { now: () => NOW });
  /** As the SDK sends it: its own API-key header. */
  const send = (body: unknown, key = API_KEY) => api.post("/v2/developer_errors", body, { "x-agentops-api-key": key });

  t.test("C2: a report naming a session of the key's project is an error event of it, every field kept", async (t) => {
    await api.session("dev-1");
    const res = await send({ ...report("dev-1"), custom: { nested: [1, null] }, agent_id: 7 });
    const body = isSuccess(t, res, ["session_id", "event_id"]);
    t.equal(body.session_id, "dev-1");
    t.match(body.event_id, UUID_V7, "a new event id (the report has none)");
    t.strictSame(
      await eventViews(api.store, "dev-1"),
      [reported(body.event_id, "dev-1", { custom: { nested: [1, null] }, agent_id: 7 })],
      "error_type, details and logs from type, message and stack_trace; the rest as sent, even a field an event names",
    );
    const stats = await api.inject({
      method: "GET",
      url: "/v2/sessions/dev-1/stats",
      headers: { "x-agentmon-api-key": API_KEY },
    });
    t.equal(stats.json().stats.error_count, 1, "it counts as the session's error");
  });

  t.test("C2: the X-Agentmon-Api-Key header works too; null message parts are not given", async (t) => {
    await api.session("dev-2");
    const res = await api.withKey("/v2/developer_errors", {
      type: "KeyError",
      message: "",
      stack_trace: null,
      session_id: "dev-2",
    });
    const body = isSuccess(t, res, ["session_id", "event_id"]);
    t.strictSame(await eventViews(api.store, "dev-2"), [
      { ...base(body.event_id, "error", "dev-2"), error_type: "KeyError", details: "" },
    ]);
  });

  t.test("C2: a report naming no session is answered 200 and stored nowhere", async (t) => {
    await api.session("dev-quiet");
    for (const body of [report(), report(null)]) {
      const res = await send(body);
      isAnswer(t, res, 200, { status: "success", session_id: null, event_id: null });
    }
    t.strictSame(await eventViews(api.store, "dev-quiet"), [], "no session got an event");
  });

  t.test("C2: an unknown session is a 404 and creates nothing", async (t) => {
    isAnswer(t, await send(report("never-created")), 404, notFound("never-created"));
    const read = await api.inject({
      method: "GET",
      url: "/v2/sessions/never-created",
      headers: { "x-agentmon-api-key": API_KEY },
    });
    t.equal(read.statusCode, 404, "no session was created");
  });

  t.test("C2: another project's session is a 404, exactly like an unknown one, and is not written", async (t) => {
    await api.session("dev-theirs", {}, OTHER_PROJECT_KEY);
    isAnswer(t, await send(report("dev-theirs")), 404, notFound("dev-theirs"));
    t.strictSame(await eventViews(api.store, "dev-theirs"), [], "the other project's session has no new event");
    const res = await send(report("dev-theirs"), OTHER_PROJECT_KEY);
    isSuccess(t, res, ["session_id", "event_id"]);
    t.equal((await eventViews(api.store, "dev-theirs")).length, 1, "with its own project's key it is stored");
  });

  t.test("C2: a JWT beside the key (old SDKs keep the last one in their headers) changes nothing", async (t) => {
    await api.session("dev-3");
    const otherJwt = await api.session("dev-4");
    const res = await api.post("/v2/developer_errors", report("dev-3"), {
      "x-agentops-api-key": API_KEY,
      authorization: `Bearer ${otherJwt}`,
    });
    isSuccess(t, res, ["session_id", "event_id"]);
    t.equal((await eventViews(api.store, "dev-3")).length, 1, "stored in the session the body names");
    t.equal((await eventViews(api.store, "dev-4")).length, 0, "not in the JWT's");
  });

  t.test("C2: the API key is required: none, an unknown one, a JWT alone are 401", async (t) => {
    await api.session("dev-5");
    const jwt = await api.session("dev-6");
    isAnswer(t, await api.post("/v2/developer_errors", report("dev-5")), 401, INVALID_API_KEY, "no key");
    isAnswer(t, await send(report("dev-5"), UNKNOWN_KEY), 401, INVALID_API_KEY, "an unknown key");
    isAnswer(t, await send(report("dev-5"), "not-a-uuid"), 401, INVALID_API_KEY, "not a key at all");
    isAnswer(t, await api.withJwt("/v2/developer_errors", report("dev-5"), jwt), 401, INVALID_API_KEY, "a JWT alone");
    t.strictSame(await eventViews(api.store, "dev-5"), [], "nothing stored");
  });

  t.test("C2: bad bodies are 400s naming each problem, nothing stored", async (t) => {
    await api.session("dev-7");
    isInvalid(t, await send({ session_id: "dev-7" }), ["type", "message"]);
    isInvalid(t, await send({ ...report("dev-7"), type: 5, message: ["x"] }), ["type", "message"]);
    isInvalid(t, await send({ ...report("dev-7"), type: "" }), ["type"]);
    isInvalid(t, await send({ ...report("dev-7"), stack_trace: 12, sdk_version: false }), [
      "stack_trace",
      "sdk_version",
    ]);
    isInvalid(t, await send(report("")), ["session_id"]);
    isInvalid(t, await send(report("x".repeat(257))), ["session_id"]);
    isInvalid(t, await send([report("dev-7")]), [""]);
    const malformed = await rawPost(api, "/v2/developer_errors", '{"type": "X", ', {
      "content-type": "application/json",
      "x-agentops-api-key": API_KEY,
    });
    isError(t, malformed, 400, "Malformed JSON");
    const text = await rawPost(api, "/v2/developer_errors", "AttributeError", {
      "content-type": "text/plain",
      "x-agentops-api-key": API_KEY,
    });
    isError(t, text, 415, "Unsupported media type");
    t.strictSame(await eventViews(api.store, "dev-7"), [], "nothing stored");
  });

  t.test("G3: a bad key is a 401 before a bad body is looked at", async (t) => {
    isAnswer(t, await send({}, UNKNOWN_KEY), 401, INVALID_API_KEY);
  });
});

// ------------------------------------------------------------------------------------------ C3

t.test("C3: POST /v2/create_thread", async (t) => {
  const api = await build(t, { now: () => NOW });

  /** The action event a thread becomes (C3), as the read API gives it. */
  const thread = (id: string, sessionId: string, extra: Record<string, unknown> = {}) => ({
    ...base(`thread:${id}`, "action", sessionId),
    action_type: "create_thread",
    thread_id: id,
    ...extra,
  });

  t.test("C3: a thread is an action event of the JWT's session, unknown fields kept", async (t) => {
    const jwt = await api.session("th-1");
    const res = await api.withJwt("/v2/create_thread", { id: "t-1", agent_id: "planner", color: { hue: null } }, jwt);
    isAnswer(t, res, 200, { status: "success", thread_id: "t-1", event_id: "thread:t-1" });
    t.strictSame(await eventViews(api.store, "th-1"), [
      thread("t-1", "th-1", { agent_id: "planner", color: { hue: null } }),
    ]);
    t.equal(NOW_ISO, (await eventViews(api.store, "th-1"))[0]?.init_timestamp, "at the time it arrived");
  });

  t.test("C3: repeating it stores nothing new (E3: the first copy stays); a thread without agent", async (t) => {
    const jwt = await api.session("th-2");
    await api.withJwt("/v2/create_thread", { id: "t-2", agent_id: "a" }, jwt);
    const again = await api.withJwt("/v2/create_thread", { id: "t-2", agent_id: "b" }, jwt);
    isAnswer(t, again, 200, { status: "success", thread_id: "t-2", event_id: "thread:t-2" });
    const bare = await api.withJwt("/v2/create_thread", { id: "t-3", agent_id: null }, jwt);
    isAnswer(t, bare, 200, { status: "success", thread_id: "t-3", event_id: "thread:t-3" });
    t.strictSame(await eventViews(api.store, "th-2"), [
      thread("t-2", "th-2", { agent_id: "a" }),
      thread("t-3", "th-2"),
    ]);
  });

  t.test("C3: llm events name the thread by thread_id, beside it in the session", async (t) => {
    const jwt = await api.session("th-3");
    await api.withJwt("/v2/create_thread", { id: "t-4" }, jwt);
    await api.withJwt("/v2/create_events", { events: [{ type: "llm", id: "l1", thread_id: "t-4" }] }, jwt);
    const threads = (await eventViews(api.store, "th-3")).map((event) => [event.id, event.thread_id]);
    t.strictSame(threads, [
      ["l1", "t-4"],
      ["thread:t-4", "t-4"],
    ]);
  });

  t.test("E5: a session_id naming another session is a 403, even another project's", async (t) => {
    const jwt = await api.session("th-4");
    await api.session("th-theirs", {}, OTHER_PROJECT_KEY);
    for (const other of ["th-5", "th-theirs"]) {
      const res = await api.withJwt("/v2/create_thread", { id: "t-5", session_id: other }, jwt);
      isAnswer(t, res, 403, forbidden("th-4", other));
    }
    const own = await api.withJwt("/v2/create_thread", { id: "t-5", session_id: "th-4" }, jwt);
    isAnswer(t, own, 200, { status: "success", thread_id: "t-5", event_id: "thread:t-5" }, "its own session is fine");
    t.strictSame(await eventViews(api.store, "th-theirs"), [], "the other project's session is untouched");
  });

  t.test("C3: the JWT is required; a deleted session's JWT is a 404", async (t) => {
    const jwt = await api.session("th-6");
    isAnswer(t, await api.withKey("/v2/create_thread", { id: "t-6" }), 401, INVALID_JWT, "an API key is not enough");
    isAnswer(t, await api.post("/v2/create_thread", { id: "t-6" }), 401, INVALID_JWT, "nothing");
    isAnswer(t, await api.withJwt("/v2/create_thread", { id: "t-6" }, `${jwt}x`), 401, INVALID_JWT, "a forged JWT");
    const deleted = await api.inject({
      method: "DELETE",
      url: "/v2/sessions/th-6",
      headers: { "x-agentmon-api-key": API_KEY },
    });
    t.equal(deleted.statusCode, 200);
    isAnswer(t, await api.withJwt("/v2/create_thread", { id: "t-6" }, jwt), 404, notFound("th-6"));
  });

  t.test("C3: bad bodies are 400s naming each problem, nothing stored", async (t) => {
    const jwt = await api.session("th-7");
    isInvalid(t, await api.withJwt("/v2/create_thread", {}, jwt), ["id"]);
    isInvalid(t, await api.withJwt("/v2/create_thread", { id: "" }, jwt), ["id"]);
    isInvalid(t, await api.withJwt("/v2/create_thread", { id: "x".repeat(257) }, jwt), ["id"]);
    isInvalid(t, await api.withJwt("/v2/create_thread", { id: 4, agent_id: {} }, jwt), ["id", "agent_id"]);
    const malformed = await rawPost(api, "/v2/create_thread", "{", {
      "content-type": "application/json",
      authorization: `Bearer ${jwt}`,
    });
    isError(t, malformed, 400, "Malformed JSON");
    t.strictSame(await eventViews(api.store, "th-7"), [], "nothing stored");
  });
});

// ------------------------------------------------------------------------------------------ C4

t.test("C4: GET /drilldown?session_id= redirects to the session's page", async (t) => {
  const api = await build(t);
  for (const [id, location] of [
    ["6fbb6581-44b2-42ad-9cf4-13a41f4ceeb7", "/sessions/6fbb6581-44b2-42ad-9cf4-13a41f4ceeb7"],
    ["run/42 ?&#", "/sessions/run%2F42%20%3F%26%23"],
    ["x".repeat(256), `/sessions/${"x".repeat(256)}`],
  ] as const) {
    const res = await api.inject({ method: "GET", url: `/drilldown?session_id=${encodeURIComponent(id)}` });
    t.equal(res.statusCode, 302, `302 for ${id.slice(0, 20)}`);
    t.equal(res.headers.location, location, "to /sessions/<id>, encoded");
    const page = await api.inject({ method: "GET", url: location });
    t.equal(page.statusCode, 200, "where the session page is");
  }
  for (const query of ["", "?session_id=", `?session_id=${"x".repeat(257)}`, "?other=1"]) {
    isInvalid(t, await api.inject({ method: "GET", url: `/drilldown${query}` }), ["query.session_id"]);
  }
  const post = await api.inject({ method: "POST", url: "/drilldown?session_id=a" });
  isError(t, post, 405, "Method not allowed");
});
