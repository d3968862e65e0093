/**
 * Contract section 1, "Every call": rule G3 (status codes and their precedence), through real
 * HTTP (app.inject) on a real `:memory:` SQLite store. Every subtest name starts with its id.
 */
import t from "tap";
import {
  API_KEY,
  build,
  hs256Jwt,
  INVALID_API_KEY,
  INVALID_JWT,
  inspect,
  isError,
  isInvalid,
  json,
  OTHER_PROJECT_KEY,
  rawPost,
  UNKNOWN_KEY,
} from "./helper.ts";

t.test("G3: status codes and their precedence", async (t) => {
  t.test("G3: 401 comes before anything that needs the body (API key routes)", async (t) => {
    const api = await build(t, { bodyLimit: 1024 });
    const noKey = { "content-type": json };
    t.same(isError(t, await rawPost(api, "/v2/create_session", "{not json", noKey), 401), INVALID_API_KEY);
    t.same(
      isError(t, await rawPost(api, "/v2/create_session", '{"session": {"tags": 3}}', noKey), 401),
      INVALID_API_KEY,
      "no key + schema violation",
    );
    const wrong = { "x-agentmon-api-key": UNKNOWN_KEY };
    t.same(
      isError(t, await rawPost(api, "/v2/create_session", "hello", { ...wrong, "content-type": "text/plain" }), 401),
      INVALID_API_KEY,
      "wrong key + text/plain",
    );
    const big = JSON.stringify({ session: { id: "x", pad: "y".repeat(4000) } });
    t.same(isError(t, await rawPost(api, "/v2/create_session", big, noKey), 401), INVALID_API_KEY, "no key + 413");
    t.same(
      isError(t, await rawPost(api, "/v2/create_session", "{}", { ...noKey, "content-encoding": "br" }), 401),
      INVALID_API_KEY,
      "no key + br",
    );
    t.same(
      isError(t, await rawPost(api, "/v2/reauthorize_jwt", "[", { ...noKey, "x-agentmon-api-key": "not-a-uuid" }), 401),
      INVALID_API_KEY,
      "malformed key + malformed JSON",
    );
  });

  t.test("G3: 401 comes before anything that needs the body (JWT routes)", async (t) => {
    const api = await build(t, { bodyLimit: 1024 });
    const bad = { "content-type": json, authorization: "Bearer not.a.jwt" };
    for (const url of ["/v2/create_events", "/create_events", "/v2/update_events", "/v2/update_session"]) {
      t.same(isError(t, await rawPost(api, url, '{"events": [', bad), 401), INVALID_JWT, `${url}: bad JWT + bad JSON`);
    }
    t.same(
      isError(t, await rawPost(api, "/v2/create_agent", "x", { "content-type": "text/plain" }), 401),
      INVALID_JWT,
      "no JWT + text/plain",
    );
    const big = JSON.stringify({ events: [{ type: "llm", pad: "y".repeat(4000) }] });
    t.same(isError(t, await rawPost(api, "/v2/create_events", big, bad), 401), INVALID_JWT, "bad JWT + 413");
    t.same(
      isError(
        t,
        await rawPost(api, "/v2/create_events", "{}", { "content-type": json, "x-agentmon-api-key": API_KEY }),
        401,
      ),
      INVALID_JWT,
      "an API key is no JWT",
    );
    const jwt = await api.session("g3-jwt");
    const key = (await api.store.listApiKeys()).find((k) => k.project_name === "default");
    const claims = { session_id: "g3-jwt", project_id: key?.project_id ?? "", key_id: key?.id ?? "" };
    const now = Math.floor(Date.now() / 1000);
    const expired = hs256Jwt({ ...claims, iat: now - 25 * 60 * 60 });
    const wrongSecret = hs256Jwt({ ...claims, iat: now }, "another-secret-another-secret-another");
    const [, payload] = jwt.split(".");
    const none = `${Buffer.from('{"alg":"none","typ":"JWT"}').toString("base64url")}.${payload}.`;
    for (const [name, token] of [
      ["expired", expired],
      ["wrong secret", wrongSecret],
      ["alg none", none],
    ]) {
      const res = await rawPost(api, "/v2/create_events", "{bad", {
        "content-type": json,
        authorization: `Bearer ${token}`,
      });
      t.same(isError(t, res, 401), INVALID_JWT, `${name} JWT + bad JSON`);
    }
    t.same(await inspect(api.store).listEvents("g3-jwt"), []);
  });

  t.test("G3: 415 for a body that is not JSON, before 400", async (t) => {
    const api = await build(t);
    const key = { "x-agentmon-api-key": API_KEY };
    const body = JSON.stringify({ session: { id: "g3-415" } });
    for (const type of ["text/plain", "application/x-www-form-urlencoded", "application/xml"]) {
      isError(
        t,
        await rawPost(api, "/v2/create_session", body, { ...key, "content-type": type }),
        415,
        "Unsupported media type",
      );
    }
    isError(t, await rawPost(api, "/v2/create_session", "{garbage", { ...key, "content-type": "text/plain" }), 415);
    isError(t, await rawPost(api, "/v2/create_session", body, key), 415, "Unsupported media type");
    t.equal(await inspect(api.store).getSession("g3-415"), undefined, "nothing stored");
  });

  t.test("G3: 413 for a body over the limit, before 415 and 400", async (t) => {
    const api = await build(t, { bodyLimit: 1024 });
    const key = { "x-agentmon-api-key": API_KEY };
    const big = JSON.stringify({ session: { id: "g3-413", pad: "y".repeat(2000) } });
    isError(
      t,
      await rawPost(api, "/v2/create_session", big, { ...key, "content-type": json }),
      413,
      "Payload too large",
    );
    isError(
      t,
      await rawPost(api, "/v2/create_session", `${big}{{`, { ...key, "content-type": json }),
      413,
      "Payload too large",
    );
    isError(
      t,
      await rawPost(api, "/v2/create_session", big, { ...key, "content-type": "text/plain" }),
      413,
      "Payload too large",
    );
    isError(
      t,
      await rawPost(api, "/v2/create_session", big, { ...key, "content-type": json, "content-encoding": "br" }),
      413,
      "Payload too large",
    );
    t.equal(await inspect(api.store).getSession("g3-413"), undefined, "nothing stored");
  });

  t.test("G3: 400 comes before 403, 404 and 409", async (t) => {
    const api = await build(t);
    const jwt = await api.session("g3-a");
    await api.session("g3-b");
    await api.session("g3-theirs", {}, OTHER_PROJECT_KEY);
    const events = { events: [{ type: "llm", session_id: "g3-b" }, { type: "nope" }] };
    isInvalid(t, await api.withJwt("/v2/create_events", events, jwt), ["events[1].type"]);
    isInvalid(t, await api.withJwt("/v2/update_session", { session: { id: "g3-b", tags: "x" } }, jwt), [
      "session.tags",
    ]);
    isInvalid(t, await api.withKey("/v2/create_session", { session: { id: "g3-theirs", tags: [1] } }), [
      "session.tags[0]",
    ]);
    const unknown = { events: [{ event_id: "ghost", session_id: "g3-b", prompt_tokens: 1.5 }] };
    isInvalid(t, await api.withJwt("/v2/update_events", unknown, jwt), ["events[0].prompt_tokens"]);
    isInvalid(t, await api.withKey("/v2/reauthorize_jwt", { session_id: 7 }), ["session_id"]);
  });

  t.test("G3: 403 for a valid JWT used on another session's data", async (t) => {
    const api = await build(t);
    const jwt = await api.session("g3-mine");
    await api.session("g3-yours");
    await api.session("g3-far", {}, OTHER_PROJECT_KEY);
    const forbidden = [
      api.withJwt("/v2/create_events", { events: [{ type: "llm", session_id: "g3-yours" }] }, jwt),
      api.withJwt("/create_events", { events: [{ type: "llm", session_id: "g3-far" }] }, jwt),
      api.withJwt("/v2/update_session", { session: { id: "g3-yours", end_state: "Fail" } }, jwt),
      api.withJwt("/v2/update_session", { session: { session_id: "g3-far" } }, jwt),
      api.withJwt("/v2/create_agent", { id: "a1", session_id: "g3-yours" }, jwt),
    ];
    for (const pending of forbidden) {
      const body = isError(t, await pending, 403, "Forbidden");
      t.equal(body.details, undefined);
    }
    t.same(await inspect(api.store).listEvents("g3-yours"), []);
    t.same(await inspect(api.store).listEvents("g3-mine"), []);
    t.same(await inspect(api.store).listAgents("g3-yours"), []);
    t.same(await inspect(api.store).listAgents("g3-mine"), []);
    t.equal((await inspect(api.store).getSession("g3-yours"))?.end_state, null, "the other session is untouched");
  });

  t.test("G3: 403 comes before 404", async (t) => {
    const api = await build(t);
    const jwt = await api.session("g3-p");
    await api.session("g3-q");
    const res = await api.withJwt("/v2/update_events", { events: [{ event_id: "nope", session_id: "g3-q" }] }, jwt);
    isError(t, res, 403, "Forbidden");
  });

  t.test("G3: 404 for an unknown route, session or event, as JSON", async (t) => {
    const api = await build(t);
    const jwt = await api.session("g3-404");
    await api.session("g3-404-theirs", {}, OTHER_PROJECT_KEY);
    for (const [method, url] of [
      ["GET", "/index.html"],
      ["GET", "/nope"],
      ["POST", "/v2/nope"],
      ["POST", "/v3/create_session"],
      ["GET", "/v2/sessions/g3-404-theirs"],
      ["GET", "/v2/sessions/g3-nobody/events"],
    ] as const) {
      isError(t, await api.inject({ method, url, headers: { "x-agentmon-api-key": API_KEY } }), 404, "Not found");
    }
    isError(t, await api.withKey("/v2/reauthorize_jwt", { session_id: "g3-nobody" }), 404, "Not found");
    isError(t, await api.withKey("/v2/reauthorize_jwt", { session_id: "g3-404-theirs" }), 404, "Not found");
    const events = await api.withJwt("/v2/update_events", { events: [{ event_id: "ghost", model: "m" }] }, jwt);
    const body = isError(t, events, 404, "Not found");
    t.match(body.message, /ghost/);
    t.same(
      body.details?.map((d) => d.path),
      ["events[0].event_id"],
    );
  });

  t.test("G3: 404 for a well-signed JWT whose session does not exist", async (t) => {
    const api = await build(t);
    const key = (await api.store.listApiKeys()).find((k) => k.project_name === "default");
    const claims = { project_id: key?.project_id ?? "", key_id: key?.id ?? "", iat: Math.floor(Date.now() / 1000) };
    const ghost = hs256Jwt({ ...claims, session_id: "g3-ghost" });
    for (const [url, body] of [
      ["/v2/create_events", { events: [{ type: "llm" }] }],
      ["/create_events", { events: [{ type: "llm" }] }],
      ["/v2/update_session", { session: { end_state: "Fail" } }],
      ["/v2/update_events", { events: [{ event_id: "e", model: "m" }] }],
      ["/v2/create_agent", { id: "a" }],
    ] as const) {
      isError(t, await api.withJwt(url, body, ghost), 404, "Not found");
    }
    t.equal(await inspect(api.store).getSession("g3-ghost"), undefined, "no session appears");
    t.same(await inspect(api.store).listEvents("g3-ghost"), []);
  });

  t.test("G3: 405 with an Allow header for a wrong method on a known path", async (t) => {
    const api = await build(t);
    for (const [method, url, allow] of [
      ["GET", "/v2/create_session", "POST"],
      ["GET", "/create_session", "POST"],
      ["PUT", "/v2/create_events", "POST"],
      ["DELETE", "/v2/update_session", "POST"],
      ["PATCH", "/v2/update_events", "POST"],
      ["GET", "/v2/create_agent?x=1", "POST"],
      ["GET", "/v2/reauthorize_jwt", "POST"],
      ["POST", "/v2/openapi.yaml", "GET"],
    ] as const) {
      const res = await api.inject({ method, url, headers: { "x-agentmon-api-key": API_KEY } });
      isError(t, res, 405, "Method not allowed");
      t.match(res.headers.allow, new RegExp(`\\b${allow}\\b`), `${method} ${url}: Allow lists ${allow}`);
    }
  });

  t.test("G3: 409 Session already exists for a session id owned by another project", async (t) => {
    const api = await build(t);
    await api.session("g3-owned", { tags: ["mine"] });
    const v2 = await api.withKey(
      "/v2/create_session",
      { session: { id: "g3-owned", tags: ["theirs"] } },
      OTHER_PROJECT_KEY,
    );
    const body = isError(t, v2, 409, "Session already exists");
    t.match(body.message, /g3-owned/);
    isError(
      t,
      await api.withKey("/create_session", { session_id: "g3-owned" }, OTHER_PROJECT_KEY),
      409,
      "Session already exists",
    );
    const stored = await inspect(api.store).getSession("g3-owned");
    t.same(stored?.tags, ["mine"], "nothing overwritten");
    const mine = (await api.store.listApiKeys()).find((k) => k.project_name === "default");
    t.equal(stored?.project_id, mine?.project_id, "still owned by the first project");
  });

  t.test("G3: 429 with Retry-After once failed key checks pass the limit", async (t) => {
    const api = await build(t, { authFailLimit: 3 });
    for (let i = 0; i < 3; i++) {
      t.same(
        isError(t, await api.withKey("/v2/create_session", { session: { id: "x" } }, UNKNOWN_KEY), 401),
        INVALID_API_KEY,
      );
    }
    const res = await api.withKey("/v2/create_session", { session: { id: "g3-429" } });
    isError(t, res, 429, "Too many requests");
    t.match(res.headers["retry-after"], /^[1-9]\d*$/, "Retry-After is a positive number of seconds");
    t.equal(await inspect(api.store).getSession("g3-429"), undefined);
  });
});
