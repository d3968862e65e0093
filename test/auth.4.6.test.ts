/**
 * Contract part 4, authentication, rule 4.6: failed API key checks are rate limited per client
 * address, through the real app on real SQLite. Key brute force is in attacks.key-guessing.test.ts.
 */
import t, { type Test } from "tap";
import { bearer, is401, JWT_ROUTES, KEY_ROUTES, T0 } from "./auth.helpers.ts";
import { API_KEY, build, INVALID_API_KEY, inspect, type TestApp, UNKNOWN_KEY } from "./helper.ts";

t.test("4.6 failed API key checks are rate limited per client address", async (t) => {
  /** One failed key check: create_session from this address with these headers is the API key 401. */
  const failKeyCheck = async (t: Test, app: TestApp, headers: Record<string, string>, from: string, what: string) =>
    is401(t, await app.post("/v2/create_session", { session: { id: "x" } }, headers, from), INVALID_API_KEY, what);

  t.test("4.6 after the limit even a valid key gets 429 with Retry-After until the window passes", async (t) => {
    let clock = T0;
    const app = await build(t, { authFailLimit: 3, authFailWindowMs: 60_000, now: () => clock });
    const from = "10.0.0.1";
    const failures: Record<string, string>[] = [
      {},
      { "x-agentmon-api-key": "not-a-key" },
      { "x-agentmon-api-key": UNKNOWN_KEY },
    ];
    for (const [i, headers] of failures.entries()) {
      const res = await app.post("/v2/create_session", { session: { id: `f${i}` } }, headers, from);
      is401(t, res, INVALID_API_KEY, `failure ${i + 1}`);
    }
    const ok = { "x-agentmon-api-key": API_KEY };
    for (const [url, body] of KEY_ROUTES) {
      const res = await app.post(url, body("limited"), ok, from);
      t.equal(res.statusCode, 429, `valid key on ${url} is refused`);
      const retryAfter = res.headers["retry-after"];
      t.match(retryAfter, /^\d+$/, `${url}: Retry-After is whole seconds`);
      t.ok(Number(retryAfter) >= 1 && Number(retryAfter) <= 60, `${url}: Retry-After ${retryAfter} within the window`);
      t.match(res.headers["content-type"], /^application\/json/);
      const json = res.json();
      t.strictSame(Object.keys(json).sort(), ["error", "message"], `${url}: error and message`);
      t.equal(json.error, "Too many requests");
      t.type(json.message, "string");
      t.ok(json.message.length > 0, "message is not empty");
    }
    t.equal(await inspect(app.store).getSession("limited"), undefined, "nothing stored while limited");
    const badWhileLimited = await app.post("/v2/create_session", { session: { id: "x" } }, {}, from);
    t.equal(badWhileLimited.statusCode, 429, "a missing key while limited: 429 too");

    const elsewhere = await app.post("/v2/create_session", { session: { id: "elsewhere" } }, ok, "10.0.0.2");
    t.equal(elsewhere.statusCode, 200, "another address is not affected");
    const elsewhereBad = await app.post("/v2/create_session", { session: { id: "x" } }, {}, "10.0.0.2");
    is401(t, elsewhereBad, INVALID_API_KEY, "another address still gets 401, not 429");

    clock = T0 + 59_000;
    const stillLimited = await app.post("/v2/create_session", { session: { id: "late" } }, ok, from);
    t.equal(stillLimited.statusCode, 429, "still limited 59 s in");
    t.match(stillLimited.headers["retry-after"], /^\d+$/);
    t.ok(Number(stillLimited.headers["retry-after"]) >= 1, "Retry-After at least 1");

    clock = T0 + 61_000;
    const again = await app.post("/v2/create_session", { session: { id: "again" } }, ok, from);
    t.equal(again.statusCode, 200, `after the window the valid key works: ${again.body}`);
    const retried = await app.post("/v2/reauthorize_jwt", { session_id: "again" }, ok, from);
    t.equal(retried.statusCode, 200, "reauthorize_jwt works too");
  });

  t.test("4.6 JWT calls from a limited address are not refused", async (t) => {
    const app = await build(t, { authFailLimit: 3, authFailWindowMs: 60_000 });
    const from = "10.0.0.3";
    const created = await app.post("/v2/create_session", { session: { id: "s1" } }, { "x-agentmon-api-key": API_KEY });
    const jwt = created.json().jwt as string;
    for (let i = 0; i < 3; i++) {
      await app.post("/v2/create_session", { session: { id: "x" } }, { "x-agentmon-api-key": UNKNOWN_KEY }, from);
    }
    const limited = await app.post(
      "/v2/create_session",
      { session: { id: "y" } },
      { "x-agentmon-api-key": API_KEY },
      from,
    );
    t.equal(limited.statusCode, 429, "the address is limited");
    for (const [url, body] of JWT_ROUTES) {
      const res = await app.post(url, body, bearer(jwt), from);
      t.equal(res.statusCode, 200, `${url} with a JWT: ${res.body}`);
    }
  });

  t.test("4.6 behind a trusted proxy, clients are told apart by X-Forwarded-For", async (t) => {
    const app = await build(t, { authFailLimit: 3, authFailWindowMs: 60_000, trustProxy: "10.0.4.1" });
    const proxy = "10.0.4.1";
    const bad = { "x-agentmon-api-key": UNKNOWN_KEY, "x-forwarded-for": "192.0.2.1" };
    for (let i = 0; i < 3; i++) await failKeyCheck(t, app, bad, proxy, `failure ${i} from 192.0.2.1`);
    const good = (client: string) =>
      app.post(
        "/v2/create_session",
        { session: { id: client } },
        { "x-agentmon-api-key": API_KEY, "x-forwarded-for": client },
        proxy,
      );
    t.equal((await good("192.0.2.1")).statusCode, 429, "the failing client is limited");
    t.equal((await good("192.0.2.2")).statusCode, 200, "another client behind the same proxy is not");
    const untrusted = await app.post("/v2/create_session", { session: { id: "u" } }, { ...bad }, "10.0.4.2");
    t.equal(untrusted.statusCode, 401, "an untrusted sender's X-Forwarded-For is not believed, only its own address");
  });

  t.test("4.6 failures spread beyond the window do not add up", async (t) => {
    let clock = T0;
    const app = await build(t, { authFailLimit: 3, authFailWindowMs: 60_000, now: () => clock });
    const from = "10.0.2.1";
    const bad = { "x-agentmon-api-key": UNKNOWN_KEY };
    for (let i = 0; i < 6; i++) {
      clock = T0 + i * 61_000;
      await failKeyCheck(t, app, bad, from, `failure ${i}`);
    }
    const res = await app.post(
      "/v2/create_session",
      { session: { id: "ok" } },
      { "x-agentmon-api-key": API_KEY },
      from,
    );
    t.equal(res.statusCode, 200, "one failure a window never reaches the limit");
  });
});
