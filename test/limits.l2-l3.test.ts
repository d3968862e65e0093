/**
 * Contract section 5, "Limits and versions": rules L2-L3 (the unversioned twins of /v2 routes, the
 * served openapi.yaml), through real HTTP (app.inject) on a real `:memory:` SQLite store. Each
 * top-level test is one rule; every subtest name starts with its id.
 */
import { readFileSync } from "node:fs";
import t from "tap";
import { sessionView } from "../domain/views.ts";
import {
  build,
  eventViews,
  INVALID_API_KEY,
  inspect,
  isError,
  isInvalid,
  isSuccess,
  json,
  OTHER_PROJECT_KEY,
  rawPost,
  type TestApp,
  UNKNOWN_KEY,
} from "./helper.ts";
import { keyHeaders } from "./limits.helpers.ts";

t.test("L2: /create_session and /create_events behave like their /v2 twins", async (t) => {
  const fields = {
    init_timestamp: "2026-11-22T10:39:43.640361+05:30",
    end_state: "completed",
    tags: ["a", "b"],
    host_env: { OS: { OS: "Linux" }, CPU: { "Total cores": 2 } },
    video: null,
    custom: { n: [1, null] },
    jwt: "never stored",
  };
  const view = async (api: TestApp, id: string) => {
    const stored = await inspect(api.store).getSession(id);
    if (!stored) throw new Error(`no session ${id}`);
    return { ...sessionView(stored), id: "*", project_id: stored.project_id };
  };

  t.test("L2: /create_session with a flat body stores what /v2 stores from the wrapped one", async (t) => {
    const api = await build(t);
    const v2 = isSuccess(t, await api.withKey("/v2/create_session", { session: { id: "l2-v2", ...fields } }), [
      "jwt",
      "session_id",
      "session_url",
    ]);
    const flat = isSuccess(t, await api.withKey("/create_session", { id: "l2-flat", ...fields }), [
      "jwt",
      "session_id",
      "session_url",
    ]);
    const sdk = isSuccess(t, await api.withKey("/create_session", { session_id: "l2-sdk", ...fields }), [
      "jwt",
      "session_id",
      "session_url",
    ]);
    t.equal(v2.session_id, "l2-v2");
    t.equal(flat.session_id, "l2-flat");
    t.equal(sdk.session_id, "l2-sdk");
    t.equal(flat.session_url, "http://agentmon.test/sessions/l2-flat");
    t.same(await view(api, "l2-flat"), await view(api, "l2-v2"));
    t.same(await view(api, "l2-sdk"), await view(api, "l2-v2"));
    const stored = await inspect(api.store).getSession("l2-flat");
    t.equal(stored?.init_timestamp, "2026-11-22T05:09:43.640361Z");
    t.equal(stored?.end_state, "Success");
    t.notOk(stored && "jwt" in stored.extra);
    const use = await api.withJwt("/create_events", { events: [{ type: "llm" }] }, flat.jwt);
    isSuccess(t, use, ["event_ids"]);
  });

  t.test("L2: /create_session also takes the wrapped body", async (t) => {
    const api = await build(t);
    const res = await api.withKey("/create_session", { session: { id: "l2-wrapped", ...fields } });
    t.equal(isSuccess(t, res, ["jwt", "session_id", "session_url"]).session_id, "l2-wrapped");
    await api.withKey("/v2/create_session", { session: { id: "l2-twin", ...fields } });
    t.same(await view(api, "l2-wrapped"), await view(api, "l2-twin"));
    const sdk = await api.withKey("/create_session", { session: { session_id: "l2-wrapped-sdk" } });
    t.equal(isSuccess(t, sdk, ["jwt", "session_id", "session_url"]).session_id, "l2-wrapped-sdk");
  });

  t.test("L2: a top-level id makes the body flat; a session field is then an unknown field", async (t) => {
    const api = await build(t);
    const res = await api.withKey("/create_session", { id: "l2-top", session: { id: "inner", tags: ["x"] } });
    t.equal(isSuccess(t, res, ["jwt", "session_id", "session_url"]).session_id, "l2-top");
    const stored = await inspect(api.store).getSession("l2-top");
    t.same(stored?.extra, { session: { id: "inner", tags: ["x"] } });
    t.equal(stored?.tags, null);
    t.equal(await inspect(api.store).getSession("inner"), undefined);
  });

  t.test("L2: /create_session errors match /v2, with flat paths", async (t) => {
    const api = await build(t);
    isInvalid(t, await api.withKey("/create_session", { session: "l2-s" }), ["id"]);
    isInvalid(t, await api.withKey("/create_session", {}), ["id"]);
    isInvalid(t, await api.withKey("/create_session", { id: "l2-e", init_timestamp: "2026-11-22" }), [
      "init_timestamp",
    ]);
    isInvalid(t, await api.withKey("/create_session", { session: { id: "l2-e", init_timestamp: "2026-11-22" } }), [
      "session.init_timestamp",
    ]);
    isInvalid(t, await api.withKey("/create_session", { id: "l2-e", session_id: "other" }), ["session_id"]);
    isInvalid(t, await api.withKey("/create_session", { id: "l2-e", end_state: "done" }), ["end_state"]);
    const noKey = await rawPost(api, "/create_session", JSON.stringify({ id: "l2-e" }), { "content-type": json });
    t.same(isError(t, noKey, 401), INVALID_API_KEY);
    const plain = await rawPost(api, "/create_session", "{}", { ...keyHeaders, "content-type": "text/plain" });
    isError(t, plain, 415, "Unsupported media type");
    await api.session("l2-theirs", {}, OTHER_PROJECT_KEY);
    isError(t, await api.withKey("/create_session", { id: "l2-theirs" }), 409, "Session already exists");
    t.equal(await inspect(api.store).getSession("l2-e"), undefined);
  });

  t.test("L2: /create_events answers and stores exactly like /v2/create_events", async (t) => {
    const api = await build(t);
    const jwtA = await api.session("l2-ev-a");
    const jwtB = await api.session("l2-ev-b");
    const events = [
      { id: "l2-1", event_type: "llms", init_timestamp: "2026-11-22T05:09:43.653700+00:00", cost: 2.1e-6, extra: 1 },
      { id: "l2-2", event_type: "tools", name: "calc", params: { a: 2 }, returns: "4", timestamp: "2026-11-22" },
      { id: "l2-3", type: "error", timestamp: "2026-11-22T05:09:44Z", code: 500, details: null },
    ];
    const badA = await api.withJwt("/v2/create_events", { events }, jwtA);
    const badB = await api.withJwt("/create_events", { events }, jwtB);
    isInvalid(t, badA, ["events[1].timestamp"]);
    t.same(badB.json(), badA.json(), "the same 400");
    const good = events.map((e) => (e.id === "l2-2" ? { ...e, timestamp: "2026-11-22T05:09:43.7Z" } : e));
    const okA = await api.withJwt("/v2/create_events", { events: good }, jwtA);
    const okB = await api.withJwt("/create_events", { events: good }, jwtB);
    t.same(isSuccess(t, okB, ["event_ids"]), isSuccess(t, okA, ["event_ids"]), "the same answer");
    const stored = async (id: string) => (await eventViews(api.store, id)).map((e) => ({ ...e, session_id: "*" }));
    const a = await stored("l2-ev-a");
    t.equal(a.length, 3);
    t.same(await stored("l2-ev-b"), a, "the same records");
    const costA = await api.withJwt("/v2/update_session", { session: {} }, jwtA);
    const costB = await api.withJwt("/v2/update_session", { session: {} }, jwtB);
    t.equal(costA.json().token_cost, "0.0000021");
    t.equal(costB.json().token_cost, costA.json().token_cost);
  });

  t.test("L2: /create_events refuses exactly like /v2/create_events", async (t) => {
    const api = await build(t, { bodyLimit: 4096 });
    const jwt = await api.session("l2-err");
    await api.session("l2-err-other");
    const same = async (body: string, headers: Record<string, string>, status: number) => {
      const v2 = await rawPost(api, "/v2/create_events", body, headers);
      const flat = await rawPost(api, "/create_events", body, headers);
      isError(t, v2, status);
      isError(t, flat, status);
      t.same(flat.json(), v2.json(), `${status}: the same body`);
      t.equal(flat.statusCode, v2.statusCode);
    };
    const bearer = { "content-type": json, authorization: `Bearer ${jwt}` };
    await same(JSON.stringify({ events: [{ type: "llm" }] }), { "content-type": json }, 401);
    await same(JSON.stringify({ events: [{ type: "llm" }] }), { ...bearer, authorization: "Bearer x.y.z" }, 401);
    await same("{", bearer, 400);
    await same(JSON.stringify({ events: [{ type: "nope" }, { type: "llm", cost: -1 }] }), bearer, 400);
    await same(JSON.stringify({ events: [{ type: "llm", session_id: "l2-err-other" }] }), bearer, 403);
    await same(JSON.stringify({ events: [{ type: "llm", pad: "p".repeat(5000) }] }), bearer, 413);
    await same("{}", { ...bearer, "content-type": "text/plain" }, 415);
    await same("{}", { ...bearer, "content-encoding": "br" }, 415);
    t.same(await inspect(api.store).listEvents("l2-err"), []);
    t.same(await inspect(api.store).listEvents("l2-err-other"), []);
  });

  t.test("L2: retries across the two paths never duplicate", async (t) => {
    const api = await build(t);
    const first = await api.withKey("/create_session", { id: "l2-retry", tags: ["first"] });
    const { jwt } = isSuccess(t, first, ["jwt", "session_id", "session_url"]);
    isSuccess(t, await api.withKey("/v2/create_session", { session: { id: "l2-retry", tags: ["second"] } }), [
      "jwt",
      "session_id",
      "session_url",
    ]);
    t.same((await inspect(api.store).getSession("l2-retry"))?.tags, ["first"]);
    const events = { events: [{ id: "r", type: "llm" }] };
    isSuccess(t, await api.withJwt("/create_events", events, jwt), ["event_ids"]);
    isSuccess(t, await api.withJwt("/v2/create_events", events, jwt), ["event_ids"]);
    t.equal((await inspect(api.store).listEvents("l2-retry")).length, 1);
  });
});

t.test("L3: GET /v2/openapi.yaml serves the document byte for byte", async (t) => {
  const file = readFileSync(new URL("../openapi.yaml", import.meta.url));

  t.test("L3: the body is exactly openapi.yaml, with a YAML content type", async (t) => {
    const api = await build(t);
    const res = await api.inject({ method: "GET", url: "/v2/openapi.yaml" });
    t.equal(res.statusCode, 200);
    t.match(res.headers["content-type"], /^application\/(yaml|x-yaml)\b|^text\/(yaml|x-yaml)\b/);
    t.equal(res.rawPayload.length, file.length, "the same length");
    t.ok(res.rawPayload.equals(file), "the same bytes");
    t.match(res.body, /^openapi: 3\.1\.0\n/);
  });

  t.test("L3: no credential is needed, and a bad one does not matter", async (t) => {
    const api = await build(t);
    const res = await api.inject({
      method: "GET",
      url: "/v2/openapi.yaml",
      headers: { "x-agentmon-api-key": UNKNOWN_KEY, authorization: "Bearer x" },
    });
    t.equal(res.statusCode, 200);
    t.ok(res.rawPayload.equals(file));
  });

  t.test("L3: the served document does not change with maxEvents", async (t) => {
    const api = await build(t, { maxEvents: 5 });
    const res = await api.inject({ method: "GET", url: "/v2/openapi.yaml" });
    t.equal(res.statusCode, 200);
    t.ok(res.rawPayload.equals(file), "still byte for byte the file");
  });

  t.test("L3: other methods on the path are 405", async (t) => {
    const api = await build(t);
    const res = await api.inject({
      method: "POST",
      url: "/v2/openapi.yaml",
      headers: { "content-type": json },
      payload: "{}",
    });
    isError(t, res, 405, "Method not allowed");
    t.match(res.headers.allow, /\bGET\b/);
  });
});
