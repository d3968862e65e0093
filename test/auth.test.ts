/**
 * Contract part 4, authentication: API keys, JWTs, reauthorization and the failure rate limit,
 * through the real app on real SQLite. The attacks on these rules (forged, tampered, expired,
 * revoked, misdirected and guessed credentials, key brute force) are in attacks.test.ts.
 */
import { createHash, createHmac } from "node:crypto";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import type { LightMyRequestResponse } from "fastify";
import t, { type Test } from "tap";
import { openDb } from "../db/sqlite/open.ts";
import { openThreadedStore } from "../db/sqlite/thread.ts";
import type { Store } from "../db/store.ts";
import { hashApiKey, keyPrefix } from "../domain/keys.ts";
import type { ApiKeyRecord } from "../domain/types.ts";
import {
  API_KEY,
  build,
  decodeJwt,
  type ErrorBody,
  eventIds,
  hs256Jwt,
  INVALID_API_KEY,
  INVALID_JWT,
  inspect,
  JWT_SECRET,
  OTHER_PROJECT_KEY,
  rawPost,
  type TestApp,
  tempDir,
  UNKNOWN_KEY,
} from "./helper.ts";

const DAY = 24 * 60 * 60;
/** A fixed clock, in milliseconds (2027-01-15T08:00:00.500Z). */
const T0 = 1_800_000_000_500;

/** The API-key routes, each with a body that would succeed given a good key. */
const KEY_ROUTES: [string, (id: string) => unknown][] = [
  ["/v2/create_session", (id) => ({ session: { id } })],
  ["/create_session", (id) => ({ session_id: id })],
  ["/v2/reauthorize_jwt", (id) => ({ session_id: id })],
];

/** The JWT routes, in an order where each body succeeds given a good JWT. */
const JWT_ROUTES: [string, unknown][] = [
  ["/v2/update_session", { session: { end_state: "Success" } }],
  ["/v2/create_events", { events: [{ type: "llm", id: "e1", model: "gpt-4o" }] }],
  ["/create_events", { events: [{ type: "tool", id: "e2", name: "search" }] }],
  ["/v2/update_events", { events: [{ event_id: "e1", completion: "done" }] }],
  ["/v2/create_agent", { id: "agent-1", name: "planner" }],
];

const bearer = (jwt: string) => ({ authorization: `Bearer ${jwt}` });

/** A database file in a temporary directory that is removed when the test ends. */
const tempDb = (t: Test) => join(tempDir(t), "agentmon.db");

const b64 = (value: unknown) => Buffer.from(JSON.stringify(value)).toString("base64url");

/** A token built by hand: any header, any claims, an HMAC signature with the given hash and secret. */
function craft(header: unknown, claims: unknown, secret = JWT_SECRET, hash = "sha256"): string {
  const input = `${b64(header)}.${b64(claims)}`;
  return `${input}.${createHmac(hash, secret).update(input).digest("base64url")}`;
}

/**
 * The hand-written verifier agentmon ran before @fastify/jwt (HS256 header, HMAC-SHA256 over the
 * exact bytes, canonical signature, the 4.4 claims and lifetime), kept here only to show that a
 * node still running it accepts the tokens the library issues (the rolling-upgrade test).
 */
function legacyVerify(token: string, secret: string, nowSeconds: number): Record<string, unknown> | undefined {
  const [header = "", payload = "", signature = "", ...rest] = token.split(".");
  const json = (part: string) => JSON.parse(Buffer.from(part, "base64url").toString("utf8"));
  if (rest.length > 0 || json(header).alg !== "HS256") return undefined;
  const expected = createHmac("sha256", secret).update(`${header}.${payload}`).digest("base64url");
  if (signature !== expected) return undefined;
  const claims = json(payload);
  const ok =
    ["session_id", "project_id", "key_id"].every((name) => typeof claims[name] === "string") &&
    typeof claims.iat === "number" &&
    typeof claims.exp === "number" &&
    claims.exp - claims.iat <= DAY &&
    claims.exp > nowSeconds &&
    claims.iat <= nowSeconds + 60;
  return ok ? claims : undefined;
}

async function keyRecord(store: Store, key: string): Promise<ApiKeyRecord> {
  const record = await store.apiKeyByHash(hashApiKey(key));
  if (!record) throw new Error(`no key ${keyPrefix(key)} in the store`);
  return record;
}

/** Valid claims for a session of the API_KEY's project, from `nowSeconds`. */
async function claimsFor(store: Store, sessionId: string, nowSeconds: number) {
  const key = await keyRecord(store, API_KEY);
  return {
    session_id: sessionId,
    project_id: key.project_id,
    key_id: key.id,
    iat: nowSeconds,
    exp: nowSeconds + DAY,
  };
}

function is401(t: Test, res: LightMyRequestResponse, body: ErrorBody, what: string) {
  t.equal(res.statusCode, 401, `${what}: 401`);
  t.match(res.headers["content-type"], /^application\/json/, `${what}: JSON`);
  t.strictSame(res.json(), body, `${what}: exact body`);
}

/** Every API-key route, asked about the session "existing", answers the API key 401 with the headers given. */
async function everyKeyRoute(t: Test, app: TestApp, headers: Record<string, string>, what: string) {
  for (const [url, body] of KEY_ROUTES) {
    is401(t, await app.post(url, body("existing"), headers), INVALID_API_KEY, `${what} on ${url}`);
  }
}

/** Every JWT route answers the JWT 401, body exact, with the headers given. */
async function everyJwtRoute(t: Test, app: TestApp, headers: Record<string, string>, what: string) {
  for (const [url, body] of JWT_ROUTES) is401(t, await app.post(url, body, headers), INVALID_JWT, `${what} on ${url}`);
}

/** Every JWT route answers 200 with this JWT (and the extra headers). */
async function everyJwtRouteOk(t: Test, app: TestApp, jwt: string, what: string, extra: Record<string, string> = {}) {
  for (const [url, body] of JWT_ROUTES) {
    const res = await app.post(url, body, { ...extra, ...bearer(jwt) });
    t.equal(res.statusCode, 200, `${what} on ${url}: ${res.body}`);
    t.equal(res.json().status, "success", `${what} on ${url}: success`);
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

t.test("4.3 API keys: UUIDs, stored only as hashes, revocable at once", async (t) => {
  t.test("4.3 keys that are not UUID strings are refused", async (t) => {
    const app = await build(t);
    const shapes = [
      "not-a-key",
      API_KEY.replaceAll("-", ""),
      `{${API_KEY}}`,
      `${API_KEY}0`,
      API_KEY.slice(0, 35),
      hashApiKey(API_KEY),
      `urn:uuid:${API_KEY}`,
    ];
    for (const shape of shapes) {
      const res = await app.post("/v2/create_session", { session: { id: "s1" } }, { "x-agentmon-api-key": shape });
      is401(t, res, INVALID_API_KEY, `key ${JSON.stringify(shape)}`);
    }
    t.equal(await inspect(app.store).getSession("s1"), undefined, "nothing stored");
  });

  t.test("4.3 the database keeps only hashes of the keys", async (t) => {
    const dbPath = tempDb(t);
    const app = await build(t, { dbPath });
    const jwt = await app.session("s1", { tags: ["a"] });
    await app.post("/v2/create_session", { session: { id: "s2" } }, { "x-agentops-api-key": OTHER_PROJECT_KEY });
    await app.withJwt("/v2/create_events", { events: [{ type: "llm", id: "e1" }] }, jwt);
    await app.post("/v2/reauthorize_jwt", { session_id: "s1" }, { "x-agentmon-api-key": API_KEY });

    const db = openDb(dbPath);
    t.teardown(() => db.close());
    const tables = db.prepare("SELECT name FROM sqlite_master WHERE type = 'table'").all() as { name: string }[];
    const cells: string[] = [];
    for (const { name } of tables) {
      for (const row of db.prepare(`SELECT * FROM "${name}"`).all() as Record<string, unknown>[]) {
        for (const value of Object.values(row)) cells.push(String(value).toLowerCase());
      }
    }
    t.ok(
      cells.some((cell) => cell === "s1"),
      "control: the scan sees the stored data",
    );
    for (const key of [API_KEY, OTHER_PROJECT_KEY]) {
      const plain = key.toLowerCase();
      t.notOk(
        cells.some((cell) => cell.includes(plain) || cell.includes(plain.replaceAll("-", ""))),
        `no row holds key ${keyPrefix(key)}…`,
      );
      const sha256 = createHash("sha256").update(plain).digest("hex");
      t.ok(cells.includes(sha256), `the SHA-256 hash of key ${keyPrefix(key)}… is stored`);
    }
    const dir = join(dbPath, "..");
    for (const file of readdirSync(dir)) {
      const path = join(dir, file);
      if (!existsSync(path)) continue;
      const bytes = readFileSync(path);
      for (const key of [API_KEY, OTHER_PROJECT_KEY]) {
        t.notOk(bytes.includes(key), `${file} does not contain key ${keyPrefix(key)}… anywhere`);
      }
    }
  });

  t.test("4.3 revoking through another connection to the database takes effect at once", async (t) => {
    const dbPath = tempDb(t);
    const app = await build(t, { dbPath });
    const jwt = await app.session("s1");
    const db = openDb(dbPath);
    t.teardown(() => db.close());
    db.prepare("UPDATE api_keys SET revoked_at = ? WHERE key_hash = ?").run(
      new Date().toISOString(),
      hashApiKey(API_KEY),
    );
    is401(t, await app.withKey("/v2/create_session", { session: { id: "s2" } }), INVALID_API_KEY, "revoked key");
    await everyJwtRoute(t, app, bearer(jwt), "JWT of the revoked key");
  });

  for (const storage of ["in-thread", "storage thread"] as const) {
    t.test(`4.3 + G3 (${storage}): after a revoke by another process, every answer is the 401`, async (t) => {
      const dbPath = tempDb(t);
      const app = await build(
        t,
        storage === "storage thread" ? { store: await openThreadedStore({ path: dbPath }) } : { dbPath },
      );
      const jwt = await app.session("s1");
      t.equal(
        (await app.withJwt("/v2/create_events", { events: [{ id: "before", type: "llm" }] }, jwt)).statusCode,
        200,
      );
      const db = openDb(dbPath);
      db.prepare("UPDATE api_keys SET revoked_at = ? WHERE key_hash = ?").run(
        new Date().toISOString(),
        hashApiKey(API_KEY),
      );
      db.close();
      const bad: [string, unknown, string][] = [
        ["/v2/create_events", { events: [{ id: "x", type: "nope" }] }, "a body that breaks the schema (400)"],
        [
          "/v2/create_events",
          { events: [{ id: "x", type: "llm", session_id: "other" }] },
          "another session's event (403)",
        ],
        ["/v2/update_events", { events: [{ event_id: "unknown", model: "m" }] }, "an unknown event (404)"],
        ["/v2/update_session", { session: { end_state: "bogus" } }, "a bad end_state (400)"],
        ["/v2/create_events", { events: [{ id: "after", type: "llm" }] }, "a valid body"],
        ["/v2/create_agent", { id: "a1", name: "agent" }, "a valid agent"],
      ];
      for (const [url, body, what] of bad) is401(t, await app.withJwt(url, body, jwt), INVALID_JWT, what);
      const notJson = await rawPost(app, "/v2/create_events", "events", {
        "content-type": "text/plain",
        authorization: `Bearer ${jwt}`,
      });
      is401(t, notJson, INVALID_JWT, "a body that is not JSON (415)");
      t.same(await eventIds(app.store, "s1"), ["before"], "nothing was stored after the revoke");
    });
  }

  t.test("4.3 + G3: a revoked key's JWT past its rate limit gets the 401, not the 429", async (t) => {
    const dbPath = tempDb(t);
    const app = await build(t, { dbPath, rateLimit: 2 });
    const jwt = await app.session("s1"); // one request of the key's two
    t.equal((await app.withJwt("/v2/create_agent", { id: "a1" }, jwt)).statusCode, 200);
    t.equal((await app.withJwt("/v2/create_agent", { id: "a1" }, jwt)).statusCode, 429, "the limit holds");
    const db = openDb(dbPath);
    db.prepare("UPDATE api_keys SET revoked_at = ? WHERE key_hash = ?").run(
      new Date().toISOString(),
      hashApiKey(API_KEY),
    );
    db.close();
    is401(t, await app.withJwt("/v2/create_agent", { id: "a2" }, jwt), INVALID_JWT, "revoked and throttled");
  });

  t.test("4.3 revoking one key of a project leaves the JWTs of its other keys working", async (t) => {
    const app = await build(t);
    const second = "44444444-4444-4444-8444-444444444444";
    await app.store.createApiKey(hashApiKey(second), keyPrefix(second), "default", new Date().toISOString());
    await app.session("s1");
    const res = await app.post("/v2/reauthorize_jwt", { session_id: "s1" }, { "x-agentmon-api-key": second });
    t.equal(res.statusCode, 200, res.body);
    const jwt = res.json().jwt as string;
    t.equal(decodeJwt(jwt).claims.key_id, (await keyRecord(app.store, second)).id, "key_id names the second key");
    await app.store.revokeApiKey((await keyRecord(app.store, API_KEY)).id, new Date().toISOString());
    await everyJwtRouteOk(t, app, jwt, "JWT obtained through the unrevoked key");
  });
});

t.test("4.4 JWTs: HS256, the claims, refusal of anything else, restart-proof", async (t) => {
  t.test("4.4 the header is HS256/JWT and the claims are those of 4.4", async (t) => {
    const app = await build(t, { now: () => T0 });
    const res = await app.withKey("/v2/create_session", { session: { id: "s1" } });
    const jwt = res.json().jwt as string;
    const parts = jwt.split(".");
    t.equal(parts.length, 3, "three parts");
    const { header, claims } = decodeJwt(jwt);
    t.strictSame(header, { alg: "HS256", typ: "JWT" }, "header");
    const key = await keyRecord(app.store, API_KEY);
    t.equal(claims.session_id, "s1", "session_id");
    t.equal(claims.project_id, key.project_id, "project_id is the key's project");
    t.equal(claims.key_id, key.id, "key_id is the id of the key");
    t.not(claims.key_id, API_KEY, "key_id is not the key");
    t.equal(claims.iat, Math.floor(T0 / 1000), "iat is the issue time in seconds");
    t.equal(claims.exp, Math.floor(T0 / 1000) + 86400, "exp = iat + 24 h");
    t.notOk(JSON.stringify(claims).toLowerCase().includes(API_KEY), "the key appears nowhere in the claims");
    t.notOk(JSON.stringify(claims).includes(hashApiKey(API_KEY)), "nor its hash");
    const signature = createHmac("sha256", JWT_SECRET).update(`${parts[0]}.${parts[1]}`).digest("base64url");
    t.equal(parts[2], signature, "signed with HMAC-SHA256 under the configured secret");

    const other = await app.withKey("/v2/create_session", { session: { id: "o1" } }, OTHER_PROJECT_KEY);
    const otherClaims = decodeJwt(other.json().jwt).claims;
    t.equal(otherClaims.project_id, (await keyRecord(app.store, OTHER_PROJECT_KEY)).project_id, "other project");
    t.not(otherClaims.project_id, claims.project_id, "projects differ");
  });

  t.test("4.4 the create_session retry and reauthorize_jwt JWTs carry the same claims", async (t) => {
    const app = await build(t, { now: () => T0 });
    await app.session("s1");
    const retry = await app.withKey("/v2/create_session", { session: { id: "s1" } });
    const flat = await app.withKey("/create_session", { session_id: "f1" });
    const reauth = await app.withKey("/v2/reauthorize_jwt", { session_id: "s1" });
    const key = await keyRecord(app.store, API_KEY);
    for (const [what, res, session] of [
      ["retry", retry, "s1"],
      ["unversioned", flat, "f1"],
      ["reauthorize", reauth, "s1"],
    ] as const) {
      t.equal(res.statusCode, 200, `${what}: ${res.body}`);
      const { header, claims } = decodeJwt(res.json().jwt);
      t.strictSame(header, { alg: "HS256", typ: "JWT" }, `${what}: header`);
      t.match(
        claims,
        { session_id: session, project_id: key.project_id, key_id: key.id, iat: 1_800_000_000, exp: 1_800_086_400 },
        `${what}: claims`,
      );
    }
  });

  t.test("4.4 control: a hand-made HS256 token with valid claims is accepted", async (t) => {
    const app = await build(t);
    await app.session("s1");
    const token = craft({ alg: "HS256", typ: "JWT" }, await claimsFor(app.store, "s1", Math.floor(Date.now() / 1000)));
    await everyJwtRouteOk(t, app, token, "hand-made HS256");
  });

  t.test(
    "4.4 rolling upgrade: the hand-written signer's tokens and @fastify/jwt's are the same bytes, each accepted by the other",
    async (t) => {
      // A node still on the hand-written node:crypto code and a node on @fastify/jwt share the
      // secret during a rolling upgrade (decision 010): neither may log the other's clients out.
      const app = await build(t, { now: () => T0 });
      const issued = await app.session("s1");
      const iat = Math.floor(T0 / 1000);
      const claims = await claimsFor(app.store, "s1", iat);
      const { session_id, project_id, key_id } = claims;
      t.equal(
        issued,
        hs256Jwt({ session_id, project_id, key_id, iat }),
        "the library issues the very bytes of the old signer",
      );
      t.strictSame(legacyVerify(issued, JWT_SECRET, iat), claims, "the old verifier accepts the library's token");
      const reissued = (await app.withKey("/v2/reauthorize_jwt", { session_id: "s1" })).json().jwt as string;
      t.strictSame(legacyVerify(reissued, JWT_SECRET, iat + 1), claims, "and its reauthorized token");
      const older = hs256Jwt({ session_id, project_id, key_id, iat: iat - 3600 });
      t.not(older, issued, "an old node's token, issued an hour earlier");
      t.ok(legacyVerify(older, JWT_SECRET, iat), "(which the old verifier accepts)");
      await everyJwtRouteOk(t, app, older, "the old signer's token on the library's verifier");
      t.equal(
        legacyVerify(issued, "another-secret-another-secret-another", iat),
        undefined,
        "control: old verifier, other secret",
      );
    },
  );

  t.test("4.4 a JWT issued by an app with another secret is refused on the same database", async (t) => {
    const dbPath = tempDb(t);
    const first = await build(t, { dbPath, jwtSecret: "first-secret-first-secret-first-secret" });
    const jwt = await first.session("s1");
    const second = await build(t, { dbPath });
    await everyJwtRoute(t, second, bearer(jwt), "JWT signed under another secret");
  });

  t.test("4.4 a JWT whose project or key claims do not match its key is refused", async (t) => {
    const app = await build(t);
    await app.session("s1");
    const claims = await claimsFor(app.store, "s1", Math.floor(Date.now() / 1000));
    const other = await keyRecord(app.store, OTHER_PROJECT_KEY);
    const wrongProject = craft({ alg: "HS256", typ: "JWT" }, { ...claims, project_id: other.project_id });
    await everyJwtRoute(t, app, bearer(wrongProject), "project of another key");
    const unknownKey = craft({ alg: "HS256", typ: "JWT" }, { ...claims, key_id: "no-such-key" });
    await everyJwtRoute(t, app, bearer(unknownKey), "unknown key_id");
  });

  t.test("4.4 a JWT issued before a restart still works after it (same database, same secret)", async (t) => {
    const dbPath = tempDb(t);
    const first = await build(t, { dbPath });
    const jwt = await first.session("s1");
    await first.app.close();
    const second = await build(t, { dbPath });
    await everyJwtRouteOk(t, second, jwt, "after the restart");
    t.equal((await inspect(second.store).listEvents("s1")).length, 2, "the events are stored");
  });
});

t.test("4.5 reauthorize_jwt", async (t) => {
  t.test("4.5 answers {status, jwt} and the JWT works", async (t) => {
    const app = await build(t);
    await app.session("s1");
    const res = await app.withKey("/v2/reauthorize_jwt", { session_id: "s1" });
    t.equal(res.statusCode, 200, res.body);
    const body = res.json();
    t.strictSame(Object.keys(body).sort(), ["jwt", "status"], "exactly status and jwt");
    t.equal(body.status, "success");
    t.equal(decodeJwt(body.jwt).claims.session_id, "s1", "for the session asked");
    await everyJwtRouteOk(t, app, body.jwt, "reauthorized JWT");
  });

  t.test("4.5 renews an expired JWT", async (t) => {
    let clock = T0;
    const app = await build(t, { now: () => clock });
    const old = await app.session("s1");
    clock += (DAY + 1) * 1000;
    await everyJwtRoute(t, app, bearer(old), "the expired JWT");
    const res = await app.withKey("/v2/reauthorize_jwt", { session_id: "s1" });
    t.equal(res.statusCode, 200, res.body);
    const fresh = res.json().jwt as string;
    t.equal(decodeJwt(fresh).claims.iat, Math.floor(clock / 1000), "issued now");
    t.equal(decodeJwt(fresh).claims.exp, Math.floor(clock / 1000) + DAY, "valid 24 h from now");
    await everyJwtRouteOk(t, app, fresh, "the renewed JWT");
  });

  t.test("4.5 works with X-Agentops-Api-Key", async (t) => {
    const app = await build(t);
    await app.session("s1");
    const res = await app.post("/v2/reauthorize_jwt", { session_id: "s1" }, { "x-agentops-api-key": API_KEY });
    t.equal(res.statusCode, 200, res.body);
    await everyJwtRouteOk(t, app, res.json().jwt, "agentops-header JWT");
  });

  t.test("4.5 an unknown session: 404", async (t) => {
    const app = await build(t);
    const res = await app.withKey("/v2/reauthorize_jwt", { session_id: "never-created" });
    t.equal(res.statusCode, 404, res.body);
    t.equal(res.json().error, "Not found");
    t.type(res.json().message, "string");
  });

  t.test("4.5 a missing session_id: 400 with details", async (t) => {
    const app = await build(t);
    await app.session("s1");
    for (const body of [{}, { id: "s1" }, { session_id: null }, { session_id: 42 }]) {
      const res = await app.withKey("/v2/reauthorize_jwt", body);
      t.equal(res.statusCode, 400, `${JSON.stringify(body)}: ${res.body}`);
      const json = res.json();
      t.type(json.error, "string", "error");
      t.type(json.message, "string", "message");
      t.ok(Array.isArray(json.details) && json.details.length > 0, "details");
      t.match(JSON.stringify(json.details), /session_id/, "details name session_id");
    }
  });

  t.test("4.5 a bad or missing API key: 401", async (t) => {
    const app = await build(t);
    const jwt = await app.session("s1");
    for (const headers of [
      {},
      { "x-agentmon-api-key": "not-a-key" },
      { "x-agentmon-api-key": UNKNOWN_KEY },
      { "x-agentops-api-key": UNKNOWN_KEY },
      bearer(jwt),
    ]) {
      const res = await app.post("/v2/reauthorize_jwt", { session_id: "s1" }, headers);
      is401(t, res, INVALID_API_KEY, `headers ${Object.keys(headers).join(", ") || "none"}`);
    }
  });
});

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
