/**
 * Contract part 4, authentication, rules 4.4-4.5: JWTs (HS256, the claims, refusal of anything else,
 * restart-proof) and reauthorize_jwt, through the real app on real SQLite. The attacks on these
 * rules (forged, tampered, expired, revoked tokens) are in attacks.*.test.ts.
 */
import { createHmac } from "node:crypto";
import t from "tap";
import type { Store } from "../db/store.ts";
import { hashApiKey } from "../domain/keys.ts";
import { bearer, DAY, everyJwtRoute, everyJwtRouteOk, is401, keyRecord, T0, tempDb } from "./auth.helpers.ts";
import {
  API_KEY,
  build,
  decodeJwt,
  hs256Jwt,
  INVALID_API_KEY,
  inspect,
  JWT_SECRET,
  OTHER_PROJECT_KEY,
  UNKNOWN_KEY,
} from "./helper.ts";

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
