/**
 * Contract part 4, authentication, rules 4.1-4.2: the exact 401 bodies for a bad or missing API key
 * or JWT, the API key headers, and session calls judged by the JWT alone, through the real app on
 * real SQLite. The attacks on these rules are in attacks.*.test.ts.
 */
import t, { type Test } from "tap";
import {
  bearer,
  DAY,
  everyJwtRoute,
  everyJwtRouteOk,
  is401,
  KEY_ROUTES,
  keyRecord,
  T0,
  tempDb,
} from "./auth.helpers.ts";
import {
  API_KEY,
  build,
  decodeJwt,
  INVALID_API_KEY,
  INVALID_JWT,
  inspect,
  OTHER_PROJECT_KEY,
  type TestApp,
  UNKNOWN_KEY,
} from "./helper.ts";

/** Every API-key route, asked about the session "existing", answers the API key 401 with the headers given. */
async function everyKeyRoute(t: Test, app: TestApp, headers: Record<string, string>, what: string) {
  for (const [url, body] of KEY_ROUTES) {
    is401(t, await app.post(url, body("existing"), headers), INVALID_API_KEY, `${what} on ${url}`);
  }
}

/**
 * Every API-key route answers 200 and a JWT with API_KEY sent under `header`; the sessions it
 * creates are named `${prefix}-${url}`, and reauthorize_jwt asks for an existing session.
 */
async function everyKeyRouteOk(t: Test, app: TestApp, header: string, prefix: string) {
  await app.session("existing");
  for (const [url, body] of KEY_ROUTES) {
    const id = url === "/v2/reauthorize_jwt" ? "existing" : `${prefix}-${url}`;
    const res = await app.post(url, body(id), { [header]: API_KEY });
    t.equal(res.statusCode, 200, `${url}: ${res.body}`);
    t.type(res.json().jwt, "string", `${url}: a JWT`);
  }
}

t.test("4.1 bad or missing API key or JWT: 401 with the exact bodies", async (t) => {
  t.test("4.1 a missing API key on every API-key route", async (t) => {
    const app = await build(t);
    await app.session("existing");
    await everyKeyRoute(t, app, {}, "missing key");
    await everyKeyRoute(t, app, { "x-agentmon-api-key": "" }, "empty key");
  });

  t.test("4.1 a malformed API key on every API-key route", async (t) => {
    const app = await build(t);
    await app.session("existing");
    await everyKeyRoute(t, app, { "x-agentmon-api-key": "not-a-key" }, "malformed key");
  });

  t.test("4.1 a refused create_session stores nothing and hands out no JWT", async (t) => {
    const app = await build(t);
    const res = await app.post("/v2/create_session", { session: { id: "refused" } }, { "x-agentmon-api-key": "x" });
    is401(t, res, INVALID_API_KEY, "bad key");
    t.equal(await inspect(app.store).getSession("refused"), undefined);
    t.notMatch(res.body, /jwt|eyJ/);
  });

  t.test("4.1 the API key is checked before the body is read", async (t) => {
    const app = await build(t);
    const malformed = await app.inject({
      method: "POST",
      url: "/v2/create_session",
      headers: { "content-type": "application/json" },
      payload: "{not json",
    });
    is401(t, malformed, INVALID_API_KEY, "missing key, malformed JSON");
    const notJson = await app.inject({
      method: "POST",
      url: "/v2/create_session",
      headers: { "content-type": "text/plain", "x-agentmon-api-key": UNKNOWN_KEY },
      payload: "hello",
    });
    is401(t, notJson, INVALID_API_KEY, "unknown key, text/plain body");
    const invalid = await app.post("/v2/reauthorize_jwt", {}, { "x-agentmon-api-key": UNKNOWN_KEY });
    is401(t, invalid, INVALID_API_KEY, "unknown key, body without session_id");
  });

  t.test("4.1 a missing JWT on every JWT route", async (t) => {
    const app = await build(t);
    await everyJwtRoute(t, app, {}, "no Authorization header");
    await everyJwtRoute(t, app, { authorization: "" }, "empty Authorization header");
    await everyJwtRoute(t, app, { authorization: "Bearer " }, "Bearer with no token");
  });

  t.test("4.1 a garbage JWT on every JWT route", async (t) => {
    const app = await build(t);
    await everyJwtRoute(t, app, bearer("garbage"), "garbage token");
    await everyJwtRoute(t, app, bearer("a.b.c"), "three garbage parts");
    await everyJwtRoute(t, app, bearer("eyJhbGciOiJIUzI1NiJ9.e30"), "two parts");
  });

  t.test("4.1 a JWT expired by the clock (a later app on the same database) on every JWT route", async (t) => {
    const dbPath = tempDb(t);
    const first = await build(t, { dbPath, now: () => T0 });
    const jwt = await first.session("s1");
    const { claims } = decodeJwt(jwt);
    t.equal(claims.exp, Math.floor(T0 / 1000) + DAY, "exp is 24 h after iat");

    const almost = await build(t, { dbPath, now: () => T0 + (DAY - 1) * 1000 });
    await everyJwtRouteOk(t, almost, jwt, "one second before expiry");

    const later = await build(t, { dbPath, now: () => T0 + (DAY + 1) * 1000 });
    await everyJwtRoute(t, later, bearer(jwt), "24 h + 1 s after issue");
  });

  t.test("4.1 the JWT is checked before the body is read", async (t) => {
    const app = await build(t);
    const malformed = await app.inject({
      method: "POST",
      url: "/v2/create_events",
      headers: { "content-type": "application/json", authorization: "Bearer garbage" },
      payload: "{not json",
    });
    is401(t, malformed, INVALID_JWT, "bad JWT, malformed JSON");
    const notJson = await app.inject({
      method: "POST",
      url: "/v2/update_session",
      headers: { "content-type": "text/plain" },
      payload: "hello",
    });
    is401(t, notJson, INVALID_JWT, "no JWT, text/plain body");
    is401(t, await app.post("/v2/create_agent", {}, bearer("garbage")), INVALID_JWT, "bad JWT, body without id");
  });
});

t.test("4.2 API key headers, and session calls judged by the JWT alone", async (t) => {
  t.test("4.2 X-Agentmon-Api-Key is accepted on every API-key route", async (t) => {
    await everyKeyRouteOk(t, await build(t), "X-Agentmon-Api-Key", "agentmon");
  });

  t.test("4.2 X-Agentops-Api-Key is accepted on every API-key route", async (t) => {
    const app = await build(t);
    await everyKeyRouteOk(t, app, "X-Agentops-Api-Key", "agentops");
    const created = await inspect(app.store).getSession("agentops-/v2/create_session");
    t.equal(created?.project_id, (await keyRecord(app.store, API_KEY)).project_id, "in the key's project");
  });

  t.test("4.2 the JWT from an X-Agentops-Api-Key session works on every JWT route", async (t) => {
    const app = await build(t);
    const res = await app.post("/v2/create_session", { session: { id: "s1" } }, { "x-agentops-api-key": API_KEY });
    await everyJwtRouteOk(t, app, res.json().jwt, "JWT from an agentops-header session");
  });

  t.test("4.2 when both headers are sent, X-Agentmon-Api-Key is the one checked", async (t) => {
    const app = await build(t);
    const good = await app.post(
      "/v2/create_session",
      { session: { id: "both-good" } },
      { "x-agentmon-api-key": API_KEY, "x-agentops-api-key": UNKNOWN_KEY },
    );
    t.equal(good.statusCode, 200, good.body);
    const bad = await app.post(
      "/v2/create_session",
      { session: { id: "both-bad" } },
      { "x-agentmon-api-key": UNKNOWN_KEY, "x-agentops-api-key": API_KEY },
    );
    is401(t, bad, INVALID_API_KEY, "bad agentmon header, good agentops header");
  });

  t.test("4.2 session calls carrying an invalid API key and a valid JWT are judged by the JWT: 200", async (t) => {
    const app = await build(t);
    const jwt = await app.session("s1");
    await everyJwtRouteOk(t, app, jwt, "malformed X-Agentmon-Api-Key", { "x-agentmon-api-key": "not-a-key" });
    const jwt2 = await app.session("s2");
    await everyJwtRouteOk(t, app, jwt2, "unknown X-Agentops-Api-Key", { "x-agentops-api-key": UNKNOWN_KEY });
  });

  t.test("4.2 session calls carrying a valid API key of another project and a valid JWT: 200", async (t) => {
    const app = await build(t);
    const jwt = await app.session("s1");
    await everyJwtRouteOk(t, app, jwt, "other project's key", { "x-agentmon-api-key": OTHER_PROJECT_KEY });
    const events = await inspect(app.store).listEvents("s1");
    t.same(events.map((e) => e.id).sort(), ["e1", "e2"], "stored in the JWT's session");
  });

  t.test("4.2 session calls with a valid API key but no JWT: the JWT 401", async (t) => {
    const app = await build(t);
    await app.session("s1");
    await everyJwtRoute(t, app, { "x-agentmon-api-key": API_KEY }, "valid key, no JWT");
  });

  t.test("4.2 session calls with a valid API key and a bad JWT: the JWT 401", async (t) => {
    const app = await build(t);
    await app.session("s1");
    await everyJwtRoute(t, app, { "x-agentmon-api-key": API_KEY, ...bearer("garbage") }, "valid key, bad JWT");
  });

  t.test("4.2 invalid API keys sent on session calls are not counted as failed key checks", async (t) => {
    const app = await build(t, { authFailLimit: 2, authFailWindowMs: 60_000 });
    const jwt = await app.session("s1");
    for (let i = 0; i < 3; i++) {
      await everyJwtRouteOk(t, app, jwt, `round ${i}`, { "x-agentmon-api-key": UNKNOWN_KEY });
    }
    const res = await app.withKey("/v2/create_session", { session: { id: "s2" } });
    t.equal(res.statusCode, 200, "the address is not rate limited");
  });
});
