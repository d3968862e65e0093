/**
 * Contract section 1, "Every call": rules G1-G2 (the success and failure bodies), through real
 * HTTP (app.inject) on a real `:memory:` SQLite store. Each top-level test is one rule; every
 * subtest name starts with its id. G3..G8 are in the other general.*.test.ts files.
 */
import { gzipSync } from "node:zlib";
import type { LightMyRequestResponse } from "fastify";
import t from "tap";
import {
  API_KEY,
  build,
  inspect,
  isError,
  isInvalid,
  isSuccess,
  json,
  OTHER_PROJECT_KEY,
  rawExchange,
  rawPost,
  UNKNOWN_KEY,
} from "./helper.ts";

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

  t.test("G2: a request without Host, over a real socket, is a 400 with a G2 body, not Node's bare 400", async (t) => {
    const api = await build(t);
    await api.app.listen({ port: 0, host: "127.0.0.1" });
    const address = api.app.server.address();
    if (address === null || typeof address === "string") throw new Error("not listening on a port");
    /** Sends raw HTTP/1.x and answers all the server wrote before it closed the connection. */
    const exchange = (request: string) => rawExchange(address.port, request);
    const parse = (raw: string) => {
      const [head = "", body = ""] = raw.split("\r\n\r\n");
      return { status: Number(head.split(" ")[1]), head: head.toLowerCase(), body };
    };
    const refused = [
      ["GET /healthz", "GET /healthz HTTP/1.1\r\nConnection: close\r\n\r\n", "a Host header naming"],
      [
        "with an API key",
        `GET /v2/sessions HTTP/1.1\r\nX-Agentmon-Api-Key: ${API_KEY}\r\n\r\n`,
        "a Host header naming",
      ],
      ["an unknown path", "GET /nowhere HTTP/1.1\r\n\r\n", "a Host header naming"],
      [
        "a body",
        "POST /v2/create_session HTTP/1.1\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}",
        "a Host header naming",
      ],
      ["an empty Host", "GET /healthz HTTP/1.1\r\nHost:\r\n\r\n", "a Host header naming"],
      ["two Host lines", "GET /healthz HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n", "one Host header, not several"],
    ] as const;
    for (const [name, request, says] of refused) {
      const answer = parse(await exchange(request));
      t.equal(answer.status, 400, `${name}: 400`);
      t.match(answer.head, /content-type: application\/json/, `${name}: a JSON body`);
      t.match(answer.head, /connection: close/, `${name}: and the connection is closed`);
      const body = JSON.parse(answer.body);
      t.same(Object.keys(body).sort(), ["error", "message"], `${name}: {error, message}`);
      t.equal(body.error, "Bad request");
      t.match(body.message, says, `${name}: the message says what is missing`);
    }
    const ok = parse(await exchange("GET /healthz HTTP/1.1\r\nHost: agentmon\r\nConnection: close\r\n\r\n"));
    t.equal(ok.status, 200, "with Host: 200");
    const old = parse(await exchange("GET /healthz HTTP/1.0\r\n\r\n"));
    t.equal(old.status, 200, "HTTP/1.0 without Host: 200, as Node allows it");
    const listed = await api.inject({ method: "GET", url: "/v2/sessions", headers: { "x-agentmon-api-key": API_KEY } });
    t.strictSame(listed.json().sessions, [], "the create_session without Host stored nothing");
  });
});
