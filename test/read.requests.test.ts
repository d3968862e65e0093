/**
 * The read API (issue 5): query parameters and cursors checked against the spec, another project's
 * data, API keys, the failure limit (4.6) and storage outages, through real HTTP (inject) on a real
 * SQLite store.
 */
import t from "tap";
import { API_KEY, build, INVALID_API_KEY, isAnswer, isError, OTHER_PROJECT_KEY, UNKNOWN_KEY } from "./helper.ts";
import { createEvents, isBadParameter, notFound, OPERATIONS, read } from "./read.helpers.ts";

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
