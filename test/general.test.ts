/**
 * Contract section 1, "Every call": rules G1-G8, through real HTTP (app.inject) on a real
 * `:memory:` SQLite store. Each top-level test is one rule; every subtest name starts with its id.
 */
import { join } from "node:path";
import { deflateSync, gzipSync } from "node:zlib";
import type { LightMyRequestResponse } from "fastify";
import t from "tap";
import { openDb } from "../db/sqlite/open.ts";
import { sqliteStore } from "../db/sqlite/store.ts";
import { eventView, sessionView } from "../domain/views.ts";
import {
  API_KEY,
  build,
  eventViews,
  hs256Jwt,
  INVALID_API_KEY,
  INVALID_JWT,
  inspect,
  isError,
  isInvalid,
  isSuccess,
  json,
  MIB,
  OTHER_PROJECT_KEY,
  rawPost,
  tempDir,
  UNKNOWN_KEY,
} from "./helper.ts";

/** A stored timestamp in microsecond form, so `…43.5Z` and `…43.500000Z` compare equal. */
function micro(iso: string | null | undefined): string {
  const m = /^(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2})(?:\.(\d{1,6}))?Z$/.exec(iso ?? "");
  return m ? `${m[1]}.${(m[2] ?? "").padEnd(6, "0")}Z` : `not a UTC timestamp with at most 6 decimals: ${iso}`;
}

t.test("G1: every success is 200 with a JSON object carrying status success", async (t) => {
  t.test("G1: create_session (SDK shape with session_id) answers jwt, session_id, session_url", async (t) => {
    const api = await build(t);
    const body = isSuccess(t, await api.withKey("/v2/create_session", { session: { session_id: "g1-s" } }), [
      "jwt",
      "session_id",
      "session_url",
    ]);
    t.equal(body.session_id, "g1-s");
    t.equal(body.session_url, "http://agentmon.test/sessions/g1-s");
    t.match(body.jwt, /^[\w-]+\.[\w-]+\.[\w-]+$/);
  });

  t.test("G1: /create_session answers the same shape", async (t) => {
    const api = await build(t);
    const body = isSuccess(t, await api.withKey("/create_session", { id: "g1-flat" }), [
      "jwt",
      "session_id",
      "session_url",
    ]);
    t.equal(body.session_id, "g1-flat");
  });

  t.test("G1: update_session answers session, token_cost, session_url", async (t) => {
    const api = await build(t);
    const jwt = await api.session("g1-u");
    const res = await api.withJwt("/v2/update_session", { session: { end_state: "Success" } }, jwt);
    const body = isSuccess(t, res, ["session", "token_cost", "session_url"]);
    t.equal(body.session.id, "g1-u");
    t.equal(body.session.end_state, "Success");
    t.equal(body.token_cost, "0.00");
    t.equal(body.session_url, "http://agentmon.test/sessions/g1-u");
  });

  t.test("G1: create_events and /create_events answer event_ids", async (t) => {
    const api = await build(t);
    const jwt = await api.session("g1-e");
    const v2 = await api.withJwt("/v2/create_events", { events: [{ id: "e1", type: "llm" }] }, jwt);
    t.same(isSuccess(t, v2, ["event_ids"]).event_ids, ["e1"]);
    const flat = await api.withJwt("/create_events", { events: [{ id: "e2", event_type: "tools" }] }, jwt);
    t.same(isSuccess(t, flat, ["event_ids"]).event_ids, ["e2"]);
  });

  t.test("G1: update_events answers updated", async (t) => {
    const api = await build(t);
    const jwt = await api.session("g1-ue");
    await api.withJwt("/v2/create_events", { events: [{ id: "e1", type: "llm" }] }, jwt);
    const res = await api.withJwt("/v2/update_events", { events: [{ event_id: "e1", model: "gpt" }] }, jwt);
    t.equal(isSuccess(t, res, ["updated"]).updated, 1);
  });

  t.test("G1: create_agent answers agent_id", async (t) => {
    const api = await build(t);
    const jwt = await api.session("g1-a");
    const res = await api.withJwt("/v2/create_agent", { id: "agent-1", name: "planner" }, jwt);
    t.equal(isSuccess(t, res, ["agent_id"]).agent_id, "agent-1");
  });

  t.test("G1: reauthorize_jwt answers a working jwt", async (t) => {
    const api = await build(t);
    await api.session("g1-r");
    const body = isSuccess(t, await api.withKey("/v2/reauthorize_jwt", { session_id: "g1-r" }), ["jwt"]);
    const use = await api.withJwt("/v2/update_session", { session: { tags: ["x"] } }, body.jwt);
    isSuccess(t, use, ["session", "token_cost", "session_url"]);
  });

  t.test("G1: a gzip-encoded success is still a 200 JSON object", async (t) => {
    const api = await build(t);
    const payload = gzipSync(JSON.stringify({ session: { id: "g1-gz" } }));
    const res = await rawPost(api, "/v2/create_session", payload, {
      "content-type": json,
      "content-encoding": "gzip",
      "x-agentmon-api-key": API_KEY,
    });
    isSuccess(t, res, ["jwt", "session_id", "session_url"]);
  });
});

t.test("G2: every failure is {error, message, details?}; details paths are dotted/bracket", async (t) => {
  t.test("G2: one detail per problem across events, paths like events[3].init_timestamp", async (t) => {
    const api = await build(t);
    const jwt = await api.session("g2-ev");
    const res = await api.withJwt(
      "/v2/create_events",
      {
        events: [
          { type: "llm" },
          { type: "llm", prompt_tokens: -1 },
          { type: "bogus" },
          { type: "tool", init_timestamp: "2026-11-22" },
          { event_type: "llms", cost: "free" },
        ],
      },
      jwt,
    );
    const body = isInvalid(t, res, [
      "events[1].prompt_tokens",
      "events[2].type",
      "events[3].init_timestamp",
      "events[4].cost",
    ]);
    t.match(body.message, /events\[1\]\.prompt_tokens/, "the message names the first problem");
    t.same(await inspect(api.store).listEvents("g2-ev"), [], "nothing stored");
  });

  t.test("G2: session paths like session.tags[2], several problems at once", async (t) => {
    const api = await build(t);
    const res = await api.withKey("/v2/create_session", {
      session: { id: "g2-s", tags: ["a", "b", 3], end_timestamp: "soon", host_env: "linux" },
    });
    isInvalid(t, res, ["session.tags[2]", "session.end_timestamp", "session.host_env"]);
    t.equal(await inspect(api.store).getSession("g2-s"), undefined, "nothing stored");
  });

  t.test("G2: nested paths into prompts and host_env", async (t) => {
    const api = await build(t);
    const jwt = await api.session("g2-nested");
    const res = await api.withJwt(
      "/v2/create_events",
      { events: [{ type: "llm", prompt: [{ role: "user", content: "hi" }, { content: "no role" }] }] },
      jwt,
    );
    isInvalid(t, res, ["events[0].prompt[1].role"]);
    const env = await api.withKey("/v2/create_session", { session: { id: "g2-env", host_env: { OS: "Linux" } } });
    isInvalid(t, env, ["session.host_env.OS"]);
  });

  t.test("G2: a missing kind, a missing id and a missing wrapper name their paths", async (t) => {
    const api = await build(t);
    const jwt = await api.session("g2-missing");
    isInvalid(t, await api.withJwt("/v2/create_events", { events: [{ model: "gpt" }] }, jwt), ["events[0].type"]);
    isInvalid(t, await api.withJwt("/v2/create_events", { event: [] }, jwt), ["events"]);
    isInvalid(t, await api.withKey("/v2/create_session", { session: { tags: [] } }), ["session.id"]);
    isInvalid(t, await api.withKey("/v2/create_session", { id: "flat-on-v2" }), ["session"]);
    isInvalid(t, await api.withJwt("/v2/update_events", { events: [{ model: "gpt" }] }, jwt), ["events[0].event_id"]);
    isInvalid(t, await api.withJwt("/v2/create_agent", { name: "no id" }, jwt), ["id"]);
    isInvalid(t, await api.withKey("/v2/create_session", { session: { id: 123 } }), ["session.id"]);
    isInvalid(t, await api.withJwt("/v2/create_events", { events: [{ id: { x: 1 }, type: "llm" }] }, jwt), [
      "events[0].id",
    ]);
  });

  t.test('G2: a body that is not a JSON object is a 400 at path ""', async (t) => {
    const api = await build(t);
    isInvalid(t, await api.withKey("/v2/create_session", [{ session: { id: "x" } }]), [""]);
    isInvalid(t, await api.withKey("/v2/create_session", "session"), [""]);
  });

  t.test("G2: a kind or end_state outside the accepted ones lists them", async (t) => {
    const api = await build(t);
    const jwt = await api.session("g2-kind");
    const kind = isInvalid(t, await api.withJwt("/v2/create_events", { events: [{ type: "llms" }] }, jwt), [
      "events[0].type",
    ]);
    t.match(kind.details?.[0]?.message, /llm.*tool.*action.*error/);
    const end = isInvalid(t, await api.withJwt("/v2/update_session", { session: { end_state: "Done" } }, jwt), [
      "session.end_state",
    ]);
    t.match(end.details?.[0]?.message, /Success.*Fail.*Indeterminate/);
  });

  t.test("G2: malformed and empty JSON are 400 Malformed JSON without details", async (t) => {
    const api = await build(t);
    const headers = { "content-type": json, "x-agentmon-api-key": API_KEY };
    const bad = isError(t, await rawPost(api, "/v2/create_session", '{"session": {"id": "x"', headers), 400);
    t.equal(bad.error, "Malformed JSON");
    t.equal(bad.details, undefined);
    const empty = isError(t, await rawPost(api, "/v2/create_session", "", headers), 400);
    t.equal(empty.error, "Malformed JSON");
  });

  t.test("G2: no error body of any kind leaks a stack, SQL or a file path", async (t) => {
    const api = await build(t, { bodyLimit: 64 * 1024 });
    const jwt = await api.session("g2-leak");
    await api.session("g2-other");
    await api.session("g2-foreign", {}, OTHER_PROJECT_KEY);
    const key = { "content-type": json, "x-agentmon-api-key": API_KEY };
    const bearer = { "content-type": json, authorization: `Bearer ${jwt}` };
    const cases: [string, Promise<LightMyRequestResponse>, number][] = [
      ["malformed JSON", rawPost(api, "/v2/create_events", "{]", bearer), 400],
      ["schema", api.withJwt("/v2/create_events", { events: [{ type: 1, id: [] }] }, jwt), 400],
      [
        "corrupt gzip",
        rawPost(api, "/v2/create_events", Buffer.from("nope"), { ...bearer, "content-encoding": "gzip" }),
        400,
      ],
      ["bad key", api.withKey("/v2/create_session", { session: { id: "x" } }, UNKNOWN_KEY), 401],
      ["bad jwt", api.withJwt("/v2/create_events", { events: [{ type: "llm" }] }, `${jwt}x`), 401],
      ["403", api.withJwt("/v2/create_events", { events: [{ type: "llm", session_id: "g2-other" }] }, jwt), 403],
      ["404 event", api.withJwt("/v2/update_events", { events: [{ event_id: "nope" }] }, jwt), 404],
      ["404 route", api.inject({ method: "GET", url: "/v2/nope/g2-leak" }), 404],
      ["405", api.inject({ method: "GET", url: "/v2/create_events" }), 405],
      ["409", api.withKey("/v2/create_session", { session: { id: "g2-foreign" } }), 409],
      [
        "413",
        rawPost(api, "/v2/create_events", JSON.stringify({ events: [{ type: "llm", x: "y".repeat(70_000) }] }), bearer),
        413,
      ],
      ["415", rawPost(api, "/v2/create_events", "{}", { ...bearer, "content-type": "text/plain" }), 415],
      ["415 br", rawPost(api, "/v2/create_session", "{}", { ...key, "content-encoding": "br" }), 415],
    ];
    for (const [name, pending, status] of cases) {
      t.test(`G2: ${name} (${status})`, async (t) => {
        isError(t, await pending, status);
      });
    }
  });

  t.test("G2: an internal failure (storage closed under the app) tells nothing internal", async (t) => {
    const api = await build(t);
    const jwt = await api.session("g2-down");
    await api.store.close();
    const res = await api.withJwt("/v2/create_events", { events: [{ type: "llm" }] }, jwt);
    t.ok(res.statusCode === 500 || res.statusCode === 503, `500 or 503, got ${res.statusCode}`);
    const body = isError(t, res, res.statusCode);
    if (res.statusCode === 500) {
      t.same(body, {
        error: "Internal server error",
        message: "Something went wrong on the server; the request can be retried",
      });
    } else {
      t.equal(body.error, "Service unavailable");
      t.match(res.headers["retry-after"], /^\d+$/);
    }
  });
});

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

t.test("G4: JSON with any parameters, gzip and deflate bodies; the limit applies after decompression", async (t) => {
  t.test("G4: Content-Type application/json with parameters is accepted", async (t) => {
    const api = await build(t);
    for (const [i, type] of [
      "application/json; charset=UTF-8",
      "application/json;charset=utf-8",
      "application/json; charset=utf-8; profile=x",
    ].entries()) {
      const res = await rawPost(api, "/v2/create_session", JSON.stringify({ session: { id: `g4-ct-${i}` } }), {
        "content-type": type,
        "x-agentops-api-key": API_KEY,
      });
      isSuccess(t, res, ["jwt", "session_id", "session_url"]);
      t.ok(await inspect(api.store).getSession(`g4-ct-${i}`), `${type}: stored`);
    }
  });

  t.test("G4: gzip and deflate (zlib) bodies are accepted and stored", async (t) => {
    const api = await build(t);
    const key = { "content-type": json, "x-agentmon-api-key": API_KEY };
    const session = { session: { id: "g4-zip", tags: ["gz"], host_env: { OS: { OS: "Linux" } } } };
    const created = await rawPost(api, "/v2/create_session", gzipSync(JSON.stringify(session)), {
      ...key,
      "content-encoding": "gzip",
    });
    const { jwt } = isSuccess(t, created, ["jwt", "session_id", "session_url"]);
    const stored = await inspect(api.store).getSession("g4-zip");
    t.same(stored?.tags, ["gz"]);
    t.same(stored?.host_env, { OS: { OS: "Linux" } });

    const bearer = { "content-type": "application/json; charset=UTF-8", authorization: `Bearer ${jwt}` };
    const gz = { events: [{ id: "gz-1", type: "llm", model: "gpt-4o", prompt: "2+2?" }] };
    const df = { events: [{ id: "df-1", type: "tool", name: "calc", input: { a: 2 } }] };
    const id = { events: [{ id: "id-1", type: "action" }] };
    const upper = { events: [{ id: "up-1", type: "error" }] };
    isSuccess(
      t,
      await rawPost(api, "/v2/create_events", gzipSync(JSON.stringify(upper)), {
        ...bearer,
        "content-encoding": "GZIP",
      }),
      ["event_ids"],
    );
    isSuccess(
      t,
      await rawPost(api, "/v2/create_events", gzipSync(JSON.stringify(gz)), { ...bearer, "content-encoding": "gzip" }),
      ["event_ids"],
    );
    isSuccess(
      t,
      await rawPost(api, "/v2/create_events", deflateSync(JSON.stringify(df)), {
        ...bearer,
        "content-encoding": "deflate",
      }),
      ["event_ids"],
    );
    isSuccess(
      t,
      await rawPost(api, "/v2/create_events", JSON.stringify(id), { ...bearer, "content-encoding": "identity" }),
      ["event_ids"],
    );
    const byId = new Map((await eventViews(api.store, "g4-zip")).map((e) => [e.id, e]));
    t.equal(byId.get("gz-1")?.model, "gpt-4o");
    t.equal(byId.get("gz-1")?.prompt, "2+2?");
    t.equal(byId.get("df-1")?.name, "calc");
    t.same(byId.get("df-1")?.input, { a: 2 });
    t.ok(byId.has("id-1"));
    t.ok(byId.has("up-1"));

    const update = { session: { end_state: "Success" } };
    const res = await rawPost(api, "/v2/update_session", deflateSync(JSON.stringify(update)), {
      ...bearer,
      "content-encoding": "deflate",
    });
    t.equal(isSuccess(t, res, ["session", "token_cost", "session_url"]).session.end_state, "Success");
  });

  t.test("G4: a body that does not decompress as its Content-Encoding says is a 400", async (t) => {
    const api = await build(t);
    const jwt = await api.session("g4-bad");
    const bearer = { "content-type": json, authorization: `Bearer ${jwt}` };
    const good = gzipSync(JSON.stringify({ events: [{ type: "llm" }] }));
    const cases: [string, Buffer | string, string][] = [
      ["random bytes as gzip", Buffer.from("this is not gzip at all"), "gzip"],
      ["plain JSON as gzip", JSON.stringify({ events: [{ type: "llm" }] }), "gzip"],
      ["truncated gzip", good.subarray(0, good.length - 12), "gzip"],
      ["gzip bytes as deflate", good, "deflate"],
      ["corrupted gzip body", Buffer.concat([good.subarray(0, 12), Buffer.alloc(good.length - 12, 0xff)]), "gzip"],
    ];
    for (const [name, payload, encoding] of cases) {
      const res = await rawPost(api, "/v2/create_events", payload, { ...bearer, "content-encoding": encoding });
      t.test(`G4: ${name}`, async (t) => {
        isError(t, res, 400);
      });
    }
    t.same(await inspect(api.store).listEvents("g4-bad"), [], "nothing stored");
  });

  t.test("G4: a Content-Encoding other than gzip or deflate is a 415", async (t) => {
    const api = await build(t);
    for (const encoding of ["br", "compress", "zstd"]) {
      const res = await rawPost(api, "/v2/create_session", JSON.stringify({ session: { id: `g4-${encoding}` } }), {
        "content-type": json,
        "content-encoding": encoding,
        "x-agentmon-api-key": API_KEY,
      });
      isError(t, res, 415, "Unsupported media type");
      t.equal(await inspect(api.store).getSession(`g4-${encoding}`), undefined);
    }
  });

  t.test("G4: identity in a list of codings is no coding; two real codings are a 415", async (t) => {
    const api = await build(t);
    const headers = (encoding: string) => ({
      "content-type": json,
      "content-encoding": encoding,
      "x-agentmon-api-key": API_KEY,
    });
    const body = (id: string) => gzipSync(JSON.stringify({ session: { id } }));
    isSuccess(t, await rawPost(api, "/v2/create_session", body("g4-list"), headers("identity, GZIP")), [
      "jwt",
      "session_id",
      "session_url",
    ]);
    t.ok(await inspect(api.store).getSession("g4-list"), "stored");
    const plain = JSON.stringify({ session: { id: "g4-identity" } });
    isSuccess(t, await rawPost(api, "/v2/create_session", plain, headers("identity")), [
      "jwt",
      "session_id",
      "session_url",
    ]);
    isError(t, await rawPost(api, "/v2/create_session", body("g4-twice"), headers("gzip, gzip")), 415);
    t.equal(await inspect(api.store).getSession("g4-twice"), undefined);
  });

  t.test("G4: a gzip bomb gets 413", async (t) => {
    const api = await build(t, { bodyLimit: MIB });
    const bomb = `{"session": {"id": "g4-bomb", "pad": "${" ".repeat(20 * MIB)}"}}`;
    const gz = gzipSync(bomb);
    t.ok(gz.length < MIB / 10, "the compressed body is small");
    const headers = { "content-type": json, "content-encoding": "gzip", "x-agentmon-api-key": API_KEY };
    isError(t, await rawPost(api, "/v2/create_session", gz, headers), 413, "Payload too large");
    const deflated = deflateSync(bomb);
    isError(t, await rawPost(api, "/v2/create_session", deflated, { ...headers, "content-encoding": "deflate" }), 413);
    t.equal(await inspect(api.store).getSession("g4-bomb"), undefined, "nothing stored");
    const after = await api.withKey("/v2/create_session", { session: { id: "g4-after" } });
    isSuccess(t, after, ["jwt", "session_id", "session_url"]);
  });
});

t.test("G5: unknown fields are kept exactly; jwt is never stored; null means not given", async (t) => {
  const nested = { list: [1, null, { deep: true, empty: {} }], text: "é ✓", zero: 0 };

  t.test("G5: unknown session fields are stored and returned as sent, jwt dropped", async (t) => {
    const api = await build(t);
    const res = await api.withKey("/v2/create_session", {
      session: {
        session_id: "g5-s",
        video: null,
        custom: nested,
        "odd key": "x",
        flag: false,
        ratio: 0.25,
        jwt: "eyJ.secret.token",
      },
    });
    const { jwt } = isSuccess(t, res, ["jwt", "session_id", "session_url"]);
    const stored = await inspect(api.store).getSession("g5-s");
    t.same(stored?.extra, { video: null, custom: nested, "odd key": "x", flag: false, ratio: 0.25 });
    t.notOk(stored && "jwt" in stored.extra, "jwt not stored");
    t.notOk(JSON.stringify(stored).includes("eyJ.secret.token"), "the token is nowhere in the record");

    const update = await api.withJwt(
      "/v2/update_session",
      { session: { more: [{ a: null }], flag: true, jwt: { token: "eyJ.other" } } },
      jwt,
    );
    const body = isSuccess(t, update, ["session", "token_cost", "session_url"]);
    t.same(body.session, {
      id: "g5-s",
      init_timestamp: stored?.init_timestamp,
      end_timestamp: null,
      end_state: null,
      end_state_reason: null,
      tags: null,
      host_env: null,
      video: null,
      custom: nested,
      "odd key": "x",
      flag: true,
      ratio: 0.25,
      more: [{ a: null }],
    });
    t.notOk("jwt" in body.session, "jwt is not returned");
    const after = await inspect(api.store).getSession("g5-s");
    t.notOk(after && "jwt" in after.extra, "jwt not stored by update");
    t.same(sessionView(after as NonNullable<typeof after>), body.session, "the answer is the stored session");
  });

  t.test("G5: unknown event fields are kept exactly, including inside messages", async (t) => {
    const api = await build(t);
    const jwt = await api.session("g5-e");
    const prompt = [
      { role: "system", content: "terse", cache: { ttl: null } },
      { role: "user", content: [{ type: "text", text: "2+2?" }], name: "bob" },
    ];
    const completion = { role: "assistant", content: null, tool_calls: [{ id: "c1", args: { a: 2 } }] };
    const res = await api.withJwt(
      "/v2/create_events",
      {
        events: [
          { id: "g5-llm", type: "llm", prompt, completion, metric: nested, nothing: null, jwt: "eyJ.x.y" },
          { id: "g5-err", event_type: "errors", stack_hint: ["a", "b"], details: { any: [null] }, event_id: "ref-9" },
        ],
      },
      jwt,
    );
    isSuccess(t, res, ["event_ids"]);
    const events = await inspect(api.store).listEvents("g5-e");
    const llm = events.find((e) => e.id === "g5-llm");
    const err = events.find((e) => e.id === "g5-err");
    t.same(llm?.extra, { metric: nested, nothing: null }, "unknown fields stored as sent, jwt dropped");
    const view = eventView(llm as NonNullable<typeof llm>, "g5-e");
    t.same(view.prompt, prompt);
    t.same(view.completion, completion);
    t.same(view.metric, nested);
    t.equal(view.nothing, null);
    t.notOk("jwt" in view);
    t.same(err?.extra, { stack_hint: ["a", "b"], event_id: "ref-9" }, "event_id is not a create field: kept as sent");
    t.same(eventView(err as NonNullable<typeof err>, "g5-e").details, { any: [null] });

    const patch = { events: [{ event_id: "g5-llm", added: { x: [1] }, metric: "replaced", jwt: "eyJ.z" }] };
    isSuccess(t, await api.withJwt("/v2/update_events", patch, jwt), ["updated"]);
    const patched = (await inspect(api.store).listEvents("g5-e")).find((e) => e.id === "g5-llm");
    t.same(patched?.extra, { metric: "replaced", nothing: null, added: { x: [1] } });
  });

  t.test("G5: unknown fields named __proto__ or constructor are kept as plain data", async (t) => {
    const api = await build(t);
    const headers = { "content-type": json, "x-agentmon-api-key": API_KEY };
    const proto = '{"session": {"id": "g5-proto", "__proto__": {"polluted": 1}}}';
    isSuccess(t, await rawPost(api, "/v2/create_session", proto, headers), ["jwt", "session_id", "session_url"]);
    const ctor = '{"session": {"id": "g5-ctor", "constructor": {"prototype": {"polluted": 2}}}}';
    isSuccess(t, await rawPost(api, "/v2/create_session", ctor, headers), ["jwt", "session_id", "session_url"]);
    t.equal(JSON.stringify((await inspect(api.store).getSession("g5-proto"))?.extra), '{"__proto__":{"polluted":1}}');
    t.equal(
      JSON.stringify((await inspect(api.store).getSession("g5-ctor"))?.extra),
      '{"constructor":{"prototype":{"polluted":2}}}',
    );
    t.equal(({} as Record<string, unknown>).polluted, undefined, "no prototype was polluted");
  });

  t.test("G5: unknown agent fields are kept exactly, jwt dropped", async (t) => {
    const api = await build(t);
    const jwt = await api.session("g5-a");
    const body = { id: "g5-agent", name: "planner", role: "lead", config: { tools: null, depth: [2] }, jwt: "t" };
    isSuccess(t, await api.withJwt("/v2/create_agent", body, jwt), ["agent_id"]);
    t.same(await inspect(api.store).listAgents("g5-a"), [
      { id: "g5-agent", name: "planner", extra: { role: "lead", config: { tools: null, depth: [2] } } },
    ]);
  });

  t.test("G5: null on a named field means not given (and is not an unknown field)", async (t) => {
    const api = await build(t);
    const res = await api.withKey("/v2/create_session", {
      session: {
        id: "g5-null",
        session_id: null,
        init_timestamp: null,
        end_timestamp: null,
        end_state: null,
        end_state_reason: null,
        tags: null,
        host_env: null,
      },
    });
    const { jwt } = isSuccess(t, res, ["jwt", "session_id", "session_url"]);
    const stored = await inspect(api.store).getSession("g5-null");
    t.match(stored?.init_timestamp, /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,6})?Z$/, "receive time");
    t.same(stored?.extra, {}, "named nulls are not unknown fields");
    t.equal(stored?.tags, null);

    await api.withJwt("/v2/update_session", { session: { tags: ["keep"], end_state: "ok" } }, jwt);
    const update = await api.withJwt(
      "/v2/update_session",
      { session: { tags: null, end_state: null, host_env: null, end_timestamp: null } },
      jwt,
    );
    const session = isSuccess(t, update, ["session", "token_cost", "session_url"]).session;
    t.same(session.tags, ["keep"], "tags: null changes nothing");
    t.equal(session.end_state, "Success", "end_state: null changes nothing");

    const events = { events: [{ id: "n1", type: "llm", model: null, cost: null, prompt: null, agent_id: null }] };
    isSuccess(t, await api.withJwt("/v2/create_events", events, jwt), ["event_ids"]);
    const [event] = await inspect(api.store).listEvents("g5-null");
    t.equal(event?.model, null);
    t.equal(event?.cost, null);
    t.equal(event?.agent_id, null);
    t.same(event?.extra, {}, "named nulls are not unknown fields");
  });
});

t.test("G6: timestamps are parsed as RFC 3339 / ISO 8601 and stored as UTC with Z", async (t) => {
  const good: [string, string][] = [
    ["2026-11-22T10:39:43.640361+05:30", "2026-11-22T05:09:43.640361Z"],
    ["2026-11-22T05:09:43.640361+00:00", "2026-11-22T05:09:43.640361Z"],
    ["2026-11-22T05:09:43.640361Z", "2026-11-22T05:09:43.640361Z"],
    ["2026-11-22T05:09:43.640361", "2026-11-22T05:09:43.640361Z"],
    ["2026-11-22 05:09:43.640361", "2026-11-22T05:09:43.640361Z"],
    ["2026-11-22 10:39:43.640361+05:30", "2026-11-22T05:09:43.640361Z"],
    ["2026-11-21T21:09:43.640361-08:00", "2026-11-22T05:09:43.640361Z"],
    ["2026-11-22T05:09:43.640361789Z", "2026-11-22T05:09:43.640361Z"],
    ["2026-11-22T05:09:43.6403619Z", "2026-11-22T05:09:43.640361Z"],
    ["2026-11-22T05:09:43.5Z", "2026-11-22T05:09:43.500000Z"],
    ["2026-11-22T05:09:43Z", "2026-11-22T05:09:43.000000Z"],
    ["2026-11-22T05:09:43", "2026-11-22T05:09:43.000000Z"],
    ["2026-11-22 05:09:43+00:00", "2026-11-22T05:09:43.000000Z"],
    ["2027-01-01T04:30:00.000001+05:30", "2026-12-31T23:00:00.000001Z"],
    ["2028-02-29T12:00:00Z", "2028-02-29T12:00:00.000000Z"],
    ["2026-11-22T10:39:43.640361+0530", "2026-11-22T05:09:43.640361Z"],
    ["2026-11-22T10:09:43.640361+05", "2026-11-22T05:09:43.640361Z"],
    ["2026-11-22t05:09:43.640361z", "2026-11-22T05:09:43.640361Z"],
    ["2026-11-22T10:39+05:30", "2026-11-22T05:09:00.000000Z"],
  ];

  t.test("G6: session init_timestamp is converted to UTC", async (t) => {
    const api = await build(t);
    for (const [i, [given, expected]] of good.entries()) {
      const res = await api.withKey("/v2/create_session", { session: { id: `g6-${i}`, init_timestamp: given } });
      isSuccess(t, res, ["jwt", "session_id", "session_url"]);
      const stored = await inspect(api.store).getSession(`g6-${i}`);
      t.match(stored?.init_timestamp, /Z$/, `${given}: ends in Z`);
      t.equal(micro(stored?.init_timestamp), expected, `${given} -> ${expected}`);
    }
    const exact = await inspect(api.store).getSession("g6-0");
    t.equal(exact?.init_timestamp, "2026-11-22T05:09:43.640361Z", "the documented example, exactly");
  });

  t.test("G6: event timestamps (and the timestamp alias) are converted to UTC", async (t) => {
    const api = await build(t);
    const jwt = await api.session("g6-events");
    const events: Record<string, unknown>[] = good.map(([given], i) => ({
      id: `ev-${i}`,
      type: "llm",
      init_timestamp: given,
      end_timestamp: given,
    }));
    events.push({ id: "ev-alias", event_type: "errors", timestamp: "2026-11-22T10:39:43.640361+05:30" });
    isSuccess(t, await api.withJwt("/v2/create_events", { events }, jwt), ["event_ids"]);
    const stored = new Map((await inspect(api.store).listEvents("g6-events")).map((e) => [e.id, e]));
    for (const [i, [given, expected]] of good.entries()) {
      t.equal(micro(stored.get(`ev-${i}`)?.init_timestamp), expected, `init ${given}`);
      t.equal(micro(stored.get(`ev-${i}`)?.end_timestamp), expected, `end ${given}`);
    }
    t.equal(stored.get("ev-alias")?.init_timestamp, "2026-11-22T05:09:43.640361Z", "timestamp alias");
  });

  t.test("G6: update_session and update_events convert too, and answer UTC", async (t) => {
    const api = await build(t);
    const jwt = await api.session("g6-upd", { init_timestamp: "2026-11-22T10:00:00+05:30" });
    const res = await api.withJwt(
      "/v2/update_session",
      { session: { end_timestamp: "2026-11-22 12:39:43.640361789+05:30" } },
      jwt,
    );
    const session = isSuccess(t, res, ["session", "token_cost", "session_url"]).session;
    t.equal(micro(session.init_timestamp), "2026-11-22T04:30:00.000000Z");
    t.equal(session.end_timestamp, "2026-11-22T07:09:43.640361Z");
    await api.withJwt("/v2/create_events", { events: [{ id: "u1", type: "tool" }] }, jwt);
    const patch = { events: [{ event_id: "u1", end_timestamp: "2026-11-22T00:00:00.1234567-05:00" }] };
    isSuccess(t, await api.withJwt("/v2/update_events", patch, jwt), ["updated"]);
    const [event] = await inspect(api.store).listEvents("g6-upd");
    t.equal(event?.end_timestamp, "2026-11-22T05:00:00.123456Z");
  });

  t.test("G6: no timestamp given means the receive time, in UTC", async (t) => {
    const api = await build(t, { now: () => Date.UTC(2026, 10, 22, 5, 9, 43, 640) });
    const jwt = await api.session("g6-now");
    await api.withJwt("/v2/create_events", { events: [{ id: "n", type: "llm" }] }, jwt);
    t.equal(micro((await inspect(api.store).getSession("g6-now"))?.init_timestamp), "2026-11-22T05:09:43.640000Z");
    t.equal(micro((await inspect(api.store).listEvents("g6-now"))[0]?.init_timestamp), "2026-11-22T05:09:43.640000Z");
  });

  const bad: unknown[] = [
    "2026-11-22",
    "yesterday",
    "",
    "2026-11-22T",
    "05:09:43",
    "2026-02-30T00:00:00Z",
    "2026-02-29T12:00:00Z",
    "2026-13-01T00:00:00Z",
    "2026-11-31T00:00:00Z",
    "2026-11-22T25:00:00Z",
    "2026-11-22T05:60:00Z",
    "2026-11-22T05:09:43+25:00",
    "22/11/2026 05:09:43",
    "1763788183",
    "2026-11-22T05:09:43.640361Z trailing",
    " 2026-11-22T05:09:43Z",
    "2026-11-22T05:09:43.Z",
    "2026-11-22T05:09:43ZZ",
    1763788183,
    true,
    { at: "2026-11-22T05:09:43Z" },
  ];

  t.test("G6: a date alone or anything else is a 400 naming the field path", async (t) => {
    const api = await build(t);
    for (const [i, value] of bad.entries()) {
      const res = await api.withKey("/v2/create_session", { session: { id: `g6-bad-${i}`, init_timestamp: value } });
      t.test(`G6: session.init_timestamp = ${JSON.stringify(value)}`, async (t) => {
        isInvalid(t, res, ["session.init_timestamp"]);
      });
      t.equal(await inspect(api.store).getSession(`g6-bad-${i}`), undefined);
    }
  });

  t.test("G6: bad timestamps in events and updates name their paths, one detail each", async (t) => {
    const api = await build(t);
    const jwt = await api.session("g6-bad-ev");
    const res = await api.withJwt(
      "/v2/create_events",
      {
        events: [
          { type: "llm", init_timestamp: "2026-11-22T05:09:43Z" },
          { type: "llm", init_timestamp: "2026-11-22" },
          { type: "tool", end_timestamp: "2026-02-30T00:00:00" },
          { event_type: "errors", timestamp: "later" },
        ],
      },
      jwt,
    );
    isInvalid(t, res, ["events[1].init_timestamp", "events[2].end_timestamp", "events[3].timestamp"]);
    t.same(await inspect(api.store).listEvents("g6-bad-ev"), []);
    const upd = await api.withJwt("/v2/update_session", { session: { end_timestamp: "2026-11-22" } }, jwt);
    isInvalid(t, upd, ["session.end_timestamp"]);
    await api.withJwt("/v2/create_events", { events: [{ id: "ok", type: "llm" }] }, jwt);
    const patch = { events: [{ event_id: "ok", end_timestamp: "noon" }] };
    isInvalid(t, await api.withJwt("/v2/update_events", patch, jwt), ["events[0].end_timestamp"]);
    const flat = await api.withKey("/create_session", { id: "g6-flat", init_timestamp: "2026-11-22" });
    isInvalid(t, flat, ["init_timestamp"]);
  });
});

t.test("G7: writes are atomic per call", async (t) => {
  t.test("G7: a batch whose last event is invalid stores nothing", async (t) => {
    const api = await build(t);
    const jwt = await api.session("g7-last");
    const events = [
      { id: "g7-1", type: "llm", model: "gpt" },
      { id: "g7-2", type: "tool", name: "calc" },
      { id: "g7-3", type: "action", init_timestamp: "not a time" },
    ];
    isInvalid(t, await api.withJwt("/v2/create_events", { events }, jwt), ["events[2].init_timestamp"]);
    t.same(await inspect(api.store).listEvents("g7-last"), [], "nothing stored");
    isInvalid(t, await api.withJwt("/create_events", { events }, jwt), ["events[2].init_timestamp"]);
    t.same(await inspect(api.store).listEvents("g7-last"), [], "nothing stored (unversioned)");
    const fixed = events.map((e) => ({ ...e, init_timestamp: "2026-11-22T05:09:43Z" }));
    t.same(isSuccess(t, await api.withJwt("/v2/create_events", { events: fixed }, jwt), ["event_ids"]).event_ids, [
      "g7-1",
      "g7-2",
      "g7-3",
    ]);
    t.equal((await inspect(api.store).listEvents("g7-last")).length, 3, "the corrected batch is stored whole");
  });

  t.test("G7: a batch with an event naming another session (403) stores nothing", async (t) => {
    const api = await build(t);
    const jwt = await api.session("g7-mine");
    await api.session("g7-other");
    const events = [
      { id: "g7-a", type: "llm", session_id: "g7-mine" },
      { id: "g7-b", type: "llm" },
      { id: "g7-c", type: "llm", session_id: "g7-other" },
    ];
    isError(t, await api.withJwt("/v2/create_events", { events }, jwt), 403, "Forbidden");
    t.same(await inspect(api.store).listEvents("g7-mine"), []);
    t.same(await inspect(api.store).listEvents("g7-other"), []);
  });

  t.test("G7: update_events with one unknown id applies nothing", async (t) => {
    const api = await build(t);
    const jwt = await api.session("g7-upd");
    await api.withJwt("/v2/create_events", { events: [{ id: "known", type: "llm", model: "before" }] }, jwt);
    const patch = {
      events: [
        { event_id: "known", model: "after" },
        { event_id: "unknown", model: "x" },
      ],
    };
    const body = isError(t, await api.withJwt("/v2/update_events", patch, jwt), 404, "Not found");
    t.same(
      body.details?.map((d) => d.path),
      ["events[1].event_id"],
    );
    const invalid = {
      events: [
        { event_id: "known", model: "after" },
        { event_id: "known", cost: -1 },
      ],
    };
    isInvalid(t, await api.withJwt("/v2/update_events", invalid, jwt), ["events[1].cost"]);
    const [event] = await inspect(api.store).listEvents("g7-upd");
    t.equal(event?.model, "before", "nothing applied");
  });

  t.test("G7: update_session with one bad field changes nothing", async (t) => {
    const api = await build(t);
    const jwt = await api.session("g7-sess", { tags: ["before"], custom: 1 });
    const res = await api.withJwt(
      "/v2/update_session",
      { session: { tags: ["after"], custom: 2, end_state: "Finished" } },
      jwt,
    );
    isInvalid(t, res, ["session.end_state"]);
    const stored = await inspect(api.store).getSession("g7-sess");
    t.same(stored?.tags, ["before"]);
    t.same(stored?.extra, { custom: 1 });
    t.equal(stored?.end_state, null);
  });

  t.test("G7: a 200 means the data is committed to disk", async (t) => {
    const dir = tempDir(t);
    const dbPath = join(dir, "agentmon.db");
    const api = await build(t, { dbPath });
    const jwt = await api.session("g7-disk", { tags: ["durable"] });
    const events = {
      events: [
        { id: "d1", type: "llm", cost: 0.5 },
        { id: "d2", type: "tool" },
      ],
    };
    isSuccess(t, await api.withJwt("/v2/create_events", events, jwt), ["event_ids"]);
    isSuccess(t, await api.withJwt("/v2/create_agent", { id: "ag", name: "n" }, jwt), ["agent_id"]);
    const reader = sqliteStore(openDb(dbPath));
    t.teardown(() => reader.close());
    t.same((await inspect(reader).getSession("g7-disk"))?.tags, ["durable"]);
    t.same((await inspect(reader).listEvents("g7-disk")).map((e) => e.id).sort(), ["d1", "d2"]);
    t.same(
      (await inspect(reader).listAgents("g7-disk")).map((a) => a.id),
      ["ag"],
    );
  });

  t.test("G7: a lone UTF-16 surrogate escape is a 400 and stores nothing; a surrogate pair is kept", async (t) => {
    const api = await build(t);
    const keyHeaders = { "content-type": json, "x-agentmon-api-key": API_KEY };
    const lone = await rawPost(api, "/v2/create_session", '{"session":{"id":"g7-\\ud800"}}', keyHeaders);
    const error = isError(t, lone, 400, "Bad request");
    t.match(error.message, /lone UTF-16 surrogate \(\\ud800\)/, "the message names the escape");
    t.equal(await inspect(api.store).getSession("g7-\ud800"), undefined, "no session was half-created");
    t.equal(await inspect(api.store).getSession("g7-\ufffd"), undefined);

    const jwt = await api.session("g7-unicode");
    const headers = { "content-type": json, authorization: `Bearer ${jwt}` };
    const batch = '{"events":[{"type":"llm","id":"ok","model":"m"},{"type":"llm","id":"bad","model":"x\\udfffy"}]}';
    isError(t, await rawPost(api, "/v2/create_events", batch, headers), 400, "Bad request");
    t.same(await inspect(api.store).listEvents("g7-unicode"), [], "nothing of the batch was stored");

    const pair = '{"events":[{"type":"llm","id":"emoji","model":"\\ud83d\\ude00 ok","note":"\\uD83D\\uDE00"}]}';
    isSuccess(t, await rawPost(api, "/v2/create_events", pair, headers), ["event_ids"]);
    const [stored] = await eventViews(api.store, "g7-unicode");
    t.equal(stored?.model, "😀 ok", "the pair is one character, stored as sent");
    t.equal(stored?.note, "😀");
  });

  t.test("G7: a number beyond a double's range is a 400, never stored as null", async (t) => {
    const api = await build(t);
    const jwt = await api.session("g7-numbers");
    const headers = { "content-type": json, authorization: `Bearer ${jwt}` };
    for (const number of ["1e400", "-1e400", "1E+309", `1${"0".repeat(400)}`]) {
      const body = `{"events":[{"type":"llm","id":"n","extra":{"deep":[${number}]}}]}`;
      const error = isError(t, await rawPost(api, "/v2/create_events", body, headers), 400, "Bad request");
      t.match(error.message, /^The request body has a number too large for a double \(.{1,40}\) at position \d+$/);
    }
    t.same(await inspect(api.store).listEvents("g7-numbers"), [], "nothing was stored");
    const fine = '{"events":[{"type":"llm","id":"n","big":1.7976931348623157e308,"tiny":1e-400,"e":"1e400"}]}';
    isSuccess(t, await rawPost(api, "/v2/create_events", fine, headers), ["event_ids"]);
    const [stored] = await eventViews(api.store, "g7-numbers");
    t.equal(stored?.big, Number.MAX_VALUE, "the largest double is kept");
    t.equal(stored?.tiny, 0, "an underflow rounds to 0, as any JSON reader does");
    t.equal(stored?.e, "1e400", "inside a string it is just text");
  });
});

t.test("G8: every call is safe to retry", async (t) => {
  t.test("G8: create_session repeated answers 200 and overwrites nothing", async (t) => {
    const api = await build(t);
    const first = await api.withKey("/v2/create_session", { session: { id: "g8-s", tags: ["first"], x: 1 } });
    isSuccess(t, first, ["jwt", "session_id", "session_url"]);
    const again = await api.withKey("/v2/create_session", { session: { id: "g8-s", tags: ["second"], x: 2 } });
    const { jwt } = isSuccess(t, again, ["jwt", "session_id", "session_url"]);
    const flat = await api.withKey("/create_session", { session_id: "g8-s", tags: ["third"] });
    isSuccess(t, flat, ["jwt", "session_id", "session_url"]);
    const stored = await inspect(api.store).getSession("g8-s");
    t.same(stored?.tags, ["first"]);
    t.same(stored?.extra, { x: 1 });
    const use = await api.withJwt("/v2/create_events", { events: [{ type: "llm" }] }, jwt);
    isSuccess(t, use, ["event_ids"]);
  });

  t.test("G8: create_events repeated with the same ids never duplicates", async (t) => {
    const api = await build(t);
    const jwt = await api.session("g8-e");
    const batch = {
      events: [
        { id: "r1", type: "llm", model: "first" },
        { id: "r2", type: "tool" },
      ],
    };
    const one = isSuccess(t, await api.withJwt("/v2/create_events", batch, jwt), ["event_ids"]);
    const changed = {
      events: [
        { id: "r1", type: "llm", model: "second" },
        { id: "r2", type: "tool" },
      ],
    };
    const two = isSuccess(t, await api.withJwt("/v2/create_events", changed, jwt), ["event_ids"]);
    const three = isSuccess(t, await api.withJwt("/create_events", batch, jwt), ["event_ids"]);
    t.same(one.event_ids, ["r1", "r2"]);
    t.same(two.event_ids, ["r1", "r2"]);
    t.same(three.event_ids, ["r1", "r2"]);
    const stored = await inspect(api.store).listEvents("g8-e");
    t.equal(stored.length, 2, "two events, not six");
    t.equal(stored.find((e) => e.id === "r1")?.model, "first", "the first stored copy stays");
  });

  t.test("G8: the same id twice in one call is stored once and listed twice", async (t) => {
    const api = await build(t);
    const jwt = await api.session("g8-twice");
    const batch = {
      events: [
        { id: "dup", type: "llm", model: "a" },
        { id: "dup", type: "llm", model: "b" },
      ],
    };
    t.same(isSuccess(t, await api.withJwt("/v2/create_events", batch, jwt), ["event_ids"]).event_ids, ["dup", "dup"]);
    const stored = await inspect(api.store).listEvents("g8-twice");
    t.equal(stored.length, 1);
    t.equal(stored[0]?.model, "b");
  });

  t.test("G8: events without ids are the documented exception", async (t) => {
    const api = await build(t);
    const jwt = await api.session("g8-noid");
    const batch = { events: [{ type: "error", error_type: "E" }] };
    const one = isSuccess(t, await api.withJwt("/v2/create_events", batch, jwt), ["event_ids"]);
    const two = isSuccess(t, await api.withJwt("/v2/create_events", batch, jwt), ["event_ids"]);
    const uuid7 = /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
    t.match(one.event_ids[0], uuid7);
    t.match(two.event_ids[0], uuid7);
    t.not(one.event_ids[0], two.event_ids[0]);
    t.equal((await inspect(api.store).listEvents("g8-noid")).length, 2);
  });

  t.test("G8: create_agent repeated is an upsert", async (t) => {
    const api = await build(t);
    const jwt = await api.session("g8-a");
    for (const name of ["one", "one", "two"]) {
      isSuccess(t, await api.withJwt("/v2/create_agent", { id: "agent", name }, jwt), ["agent_id"]);
    }
    t.same(await inspect(api.store).listAgents("g8-a"), [{ id: "agent", name: "two", extra: {} }]);
  });

  t.test("G8: update_session and update_events repeated answer 200 the same", async (t) => {
    const api = await build(t);
    const jwt = await api.session("g8-u");
    await api.withJwt("/v2/create_events", { events: [{ id: "x", type: "llm", cost: 0.25 }] }, jwt);
    const update = { session: { end_state: "Fail", end_timestamp: "2026-11-22T05:09:43Z", tags: ["t"] } };
    const one = isSuccess(t, await api.withJwt("/v2/update_session", update, jwt), [
      "session",
      "token_cost",
      "session_url",
    ]);
    const two = isSuccess(t, await api.withJwt("/v2/update_session", update, jwt), [
      "session",
      "token_cost",
      "session_url",
    ]);
    t.same(two, one);
    t.equal(one.token_cost, "0.25");
    const patch = { events: [{ event_id: "x", completion: "4", completion_tokens: 1 }] };
    t.equal(isSuccess(t, await api.withJwt("/v2/update_events", patch, jwt), ["updated"]).updated, 1);
    t.equal(isSuccess(t, await api.withJwt("/v2/update_events", patch, jwt), ["updated"]).updated, 1);
    const stored = await inspect(api.store).listEvents("g8-u");
    t.equal(stored.length, 1);
    t.equal(stored[0]?.completion_tokens, 1);
    t.equal(stored[0]?.fields.completion, "4");
  });

  t.test("G8: reauthorize_jwt repeated answers 200 with working tokens", async (t) => {
    const api = await build(t);
    await api.session("g8-r");
    for (let i = 0; i < 2; i++) {
      const { jwt } = isSuccess(t, await api.withKey("/v2/reauthorize_jwt", { session_id: "g8-r" }), ["jwt"]);
      isSuccess(t, await api.withJwt("/v2/create_events", { events: [{ id: "same", type: "llm" }] }, jwt), [
        "event_ids",
      ]);
    }
    t.equal((await inspect(api.store).listEvents("g8-r")).length, 1);
  });
});
