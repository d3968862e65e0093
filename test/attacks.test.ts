/**
 * Credential attacks (contract part 4), one test each. Every forged, stale, misdirected or
 * guessed credential gets the exact 401 body of 4.1, or the 403/404/409/429 the contract names
 * for it, and leaves the database exactly as it was: each test reads every row of every table
 * before and after the attack. Each test ends with a control (the honest credential on the same
 * calls succeeds), so a refusal cannot come from a body that would have failed anyway.
 *
 * The app runs on a fixed clock (build's `now`), so tokens and windows are exact, never timed.
 */
import { createHash, createHmac, generateKeyPair, type KeyObject, sign } from "node:crypto";
import { createServer } from "node:http";
import { connect } from "node:net";
import { join } from "node:path";
import { promisify } from "node:util";
import type { LightMyRequestResponse } from "fastify";
import t, { type Test } from "tap";
import type { AppOptions } from "../app.ts";
import { openDb } from "../db/sqlite/open.ts";
import { sqliteStore } from "../db/sqlite/store.ts";
import { hashApiKey, keyPrefix } from "../domain/keys.ts";
import {
  API_KEY,
  build,
  decodeJwt,
  forbidden,
  INVALID_API_KEY,
  INVALID_JWT,
  inspect,
  isError,
  JWT_SECRET,
  OTHER_PROJECT_KEY,
  type TestApp,
  tempDir,
  UNKNOWN_KEY,
} from "./helper.ts";

const DAY = 24 * 60 * 60;
/** The fixed clock every arena starts at, in milliseconds (2027-01-15T08:00:00.500Z). */
const T0 = 1_800_000_000_500;
const T0_SECONDS = Math.floor(T0 / 1000);

type Claims = Record<string, unknown>;

// The attacker's key pairs, made once on the thread pool: generating them synchronously inside a
// test would stall the event loop the app under test runs on.
const keyPair = promisify(generateKeyPair);
const RSA = await keyPair("rsa", { modulusLength: 2048 });
const EC = await keyPair("ec", { namedCurve: "P-256" });

/**
 * The JWT operations, each with a body that succeeds given an honest JWT of the arena's sessions
 * (both hold an event "e0" for update_events to complete): a refusal is the credential's doing.
 */
const JWT_ROUTES: [string, unknown][] = [
  ["/v2/update_session", { session: { end_state: "Fail", end_state_reason: "forged" } }],
  ["/v2/create_events", { events: [{ type: "llm", id: "forged-1", model: "evil" }] }],
  ["/create_events", { events: [{ type: "tool", id: "forged-2", name: "evil" }] }],
  ["/v2/update_events", { events: [{ event_id: "e0", completion: "forged" }] }],
  ["/v2/create_agent", { id: "forged-agent", name: "evil" }],
];

/** The API-key operations, each with a body that succeeds given API_KEY. */
const KEY_ROUTES: [string, unknown][] = [
  ["/v2/create_session", { session: { id: "intruder" } }],
  ["/create_session", { session_id: "intruder-flat" }],
  ["/v2/reauthorize_jwt", { session_id: "mine" }],
];

interface Arena extends TestApp {
  /** Moves the app's clock. */
  setClock(ms: number): void;
  /** An honest JWT of session "mine" (project "default", issued through API_KEY at T0). */
  jwt: string;
  /** An honest JWT of session "theirs" (project "other", issued through OTHER_PROJECT_KEY at T0). */
  theirJwt: string;
  /** Every row of every table, as one string: equal strings mean nothing was written. */
  snapshot(): string;
}

/**
 * The app on a real SQLite database whose connection the test keeps, so that it can read every
 * table: session "mine" (event e0, agent a0) in project "default", session "theirs" (events e0
 * and t0, agent b0) in project "other". Failed key checks are not limited unless `limitFailures`
 * (then with the defaults of 4.6, or `authFailLimit`), so a test about something else is not cut short.
 */
async function arena(t: Test, options: Partial<AppOptions> = {}, limitFailures = false): Promise<Arena> {
  let clock = T0;
  const db = openDb(":memory:");
  const unlimited = limitFailures ? {} : { authFailLimit: 1_000_000 };
  // O2 (503 while the event loop lags) is off: these tests are about credentials, and a noisy
  // machine must not turn a refusal under test into a 503.
  const api = await build(t, {
    store: sqliteStore(db),
    now: () => clock,
    maxEventLoopDelayMs: 0,
    ...unlimited,
    ...options,
  });
  const jwt = await api.session("mine");
  const theirJwt = await api.session("theirs", {}, OTHER_PROJECT_KEY);
  for (const [token, events, agent] of [
    [jwt, ["e0"], "a0"],
    [theirJwt, ["e0", "t0"], "b0"],
  ] as const) {
    const batch = { events: events.map((id) => ({ type: "llm", id })) };
    const created = await api.withJwt("/v2/create_events", batch, token);
    const registered = await api.withJwt("/v2/create_agent", { id: agent, name: "real" }, token);
    if (created.statusCode !== 200 || registered.statusCode !== 200) throw new Error("arena setup failed");
  }
  const snapshot = () => {
    const tables = db.prepare("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name").all() as {
      name: string;
    }[];
    return JSON.stringify(
      tables.map(({ name }) => [
        name,
        (db.prepare(`SELECT * FROM "${name}"`).all() as unknown[]).map((row) => JSON.stringify(row)).sort(),
      ]),
    );
  };
  return {
    ...api,
    jwt,
    theirJwt,
    snapshot,
    setClock: (ms) => {
      clock = ms;
    },
  };
}

// ----------------------------------------------------------------------------- tokens by hand

const b64 = (value: unknown) => Buffer.from(JSON.stringify(value)).toString("base64url");
const b64text = (text: string) => Buffer.from(text).toString("base64url");

/** A token with any header and claims, HMAC-signed over `header.payload` with the hash and secret given. */
function hmacToken(header: unknown, claims: unknown, secret: string | Buffer = JWT_SECRET, hash = "sha256"): string {
  const input = `${b64(header)}.${b64(claims)}`;
  return `${input}.${createHmac(hash, secret).update(input).digest("base64url")}`;
}

/** A token signed with a private key (RS256 with an RSA key, ES256 with an EC key). */
function keyToken(header: unknown, claims: unknown, key: KeyObject): string {
  const input = `${b64(header)}.${b64(claims)}`;
  const dsaEncoding = key.asymmetricKeyType === "ec" ? "ieee-p1363" : "der";
  return `${input}.${sign("sha256", Buffer.from(input), { key, dsaEncoding }).toString("base64url")}`;
}

const HS256 = { alg: "HS256", typ: "JWT" };
const bearer = (jwt: string) => ({ authorization: `Bearer ${jwt}` });
const parts = (jwt: string) => jwt.split(".") as [string, string, string];

// ----------------------------------------------------------------------------- assertions

/** Status 401, a JSON content type and exactly the 4.1 body. */
function is401(t: Test, res: LightMyRequestResponse, body: typeof INVALID_JWT, what: string) {
  t.equal(res.statusCode, 401, `${what}: 401`);
  t.match(res.headers["content-type"], /^application\/json/, `${what}: JSON`);
  t.strictSame(res.json(), body, `${what}: exact body`);
}

/** Every JWT operation answers the exact JWT 401 to these headers, and nothing is written. */
async function jwtRefused(t: Test, a: Arena, headers: Record<string, string>, what: string) {
  const before = a.snapshot();
  for (const [url, body] of JWT_ROUTES) is401(t, await a.post(url, body, headers), INVALID_JWT, `${what} on ${url}`);
  t.equal(a.snapshot(), before, `${what}: nothing written`);
}

/** Every API-key operation answers the exact API-key 401 to these headers, hands out no JWT, writes nothing. */
async function keyRefused(t: Test, a: Arena, headers: Record<string, string>, what: string, from?: string) {
  const before = a.snapshot();
  for (const [url, body] of KEY_ROUTES) {
    const res = await a.post(url, body, headers, from);
    is401(t, res, INVALID_API_KEY, `${what} on ${url}`);
    t.notMatch(res.body, /eyJ/, `${what} on ${url}: no JWT in the answer`);
  }
  t.equal(a.snapshot(), before, `${what}: nothing written`);
}

/** Control: every JWT operation answers 200 with this JWT (and the extra headers). */
async function jwtAccepted(t: Test, a: Arena, jwt: string, what: string, from?: string) {
  for (const [url, body] of JWT_ROUTES) {
    const res = await a.post(url, body, bearer(jwt), from);
    t.equal(res.statusCode, 200, `${what} on ${url}: ${res.body}`);
    t.equal(res.json().status, "success", `${what} on ${url}: success`);
  }
}

/** Control: every API-key operation answers 200 and a JWT with this key. */
async function keyAccepted(t: Test, a: Arena, key: string, what: string, from?: string) {
  for (const [url, body] of KEY_ROUTES) {
    const res = await a.post(url, body, { "x-agentmon-api-key": key }, from);
    t.equal(res.statusCode, 200, `${what} on ${url}: ${res.body}`);
    t.type(res.json().jwt, "string", `${what} on ${url}: a JWT`);
  }
}

/** The G2 body of a 429 with an honest Retry-After (whole seconds within the window); answers its seconds. */
function is429(t: Test, res: LightMyRequestResponse, windowSeconds: number, what: string): number {
  isError(t, res, 429, "Too many requests");
  t.strictSame(Object.keys(res.json()).sort(), ["error", "message"], `${what}: error and message only`);
  const retryAfter = res.headers["retry-after"];
  t.match(retryAfter, /^\d+$/, `${what}: Retry-After is whole seconds`);
  const seconds = Number(retryAfter);
  t.ok(seconds >= 1 && seconds <= windowSeconds, `${what}: Retry-After ${retryAfter} lies within the window`);
  return seconds;
}

// ============================================================================= the attacks named by the issue

t.test("attack: alg none (an unsigned token) is refused on every JWT operation", async (t) => {
  const a = await arena(t);
  const { claims } = decodeJwt(a.jwt);
  const unsigned = (header: unknown) => `${b64(header)}.${b64(claims)}.`;
  await jwtRefused(t, a, bearer(unsigned({ alg: "none", typ: "JWT" })), "alg none, empty signature");
  await jwtRefused(t, a, bearer(`${b64({ alg: "none" })}.${b64(claims)}`), "alg none, two parts");
  await jwtRefused(t, a, bearer(hmacToken({ alg: "none", typ: "JWT" }, claims)), "alg none, HS256 signature");
  for (const alg of ["None", "NONE", "nOnE"]) {
    await jwtRefused(t, a, bearer(unsigned({ alg, typ: "JWT" })), `alg ${alg}, empty signature`);
    await jwtRefused(t, a, bearer(hmacToken({ alg, typ: "JWT" }, claims)), `alg ${alg}, HS256 signature`);
  }
  await jwtRefused(t, a, bearer(hmacToken({ typ: "JWT" }, claims)), "no alg, HS256 signature");
  await jwtRefused(t, a, bearer(unsigned({ typ: "JWT" })), "no alg, empty signature");
  // Duplicate keys: JSON.parse keeps the last, so this header says none whatever its first alg says.
  const twoAlgs = Buffer.from('{"alg":"HS256","alg":"none","typ":"JWT"}').toString("base64url");
  await jwtRefused(t, a, bearer(`${twoAlgs}.${b64(claims)}.`), "alg HS256 then alg none, empty signature");
  await jwtAccepted(t, a, hmacToken(HS256, claims), "control: the same claims signed HS256");
});

t.test("attack: an HS256 token signed with a guessed secret is refused on every JWT operation", async (t) => {
  const a = await arena(t);
  const { claims } = decodeJwt(a.jwt);
  const guesses: [string, string | Buffer][] = [
    ["another secret", "another-secret-another-secret-another"],
    ["the empty secret", ""],
    ["a common secret", "secret"],
    ["a common secret", "changeme"],
    ["the product name", "agentmon"],
    ["the right secret with one character changed", `${JWT_SECRET.slice(0, -1)}?`],
    ["the right secret with a trailing newline", `${JWT_SECRET}\n`],
    ["the right secret's prefix", JWT_SECRET.slice(0, 16)],
    ["the attacker's own API key", API_KEY],
    ["the SHA-256 of the API key (what the database keeps)", hashApiKey(API_KEY)],
    ["the session id", "mine"],
    ["32 zero bytes", Buffer.alloc(32)],
  ];
  for (const [what, secret] of guesses) {
    await jwtRefused(t, a, bearer(hmacToken(HS256, claims, secret)), `signed with ${what}`);
  }
  await jwtAccepted(t, a, hmacToken(HS256, claims), "control: signed with the right secret");
});

t.test("attack: RS256/HS256 confusion (public key as HMAC secret, real RS256/ES256 tokens)", async (t) => {
  const a = await arena(t);
  const { claims } = decodeJwt(a.jwt);
  const { publicKey, privateKey } = RSA;
  // The classic confusion: a verifier that takes `alg` from the token would use its RSA public
  // key, which the attacker knows, as the HMAC secret. Every common encoding of that key:
  const publicForms: [string, string | Buffer][] = [
    ["the SPKI PEM public key", publicKey.export({ type: "spki", format: "pem" })],
    ["the PKCS#1 PEM public key", publicKey.export({ type: "pkcs1", format: "pem" })],
    ["the PEM public key without its final newline", String(publicKey.export({ type: "spki", format: "pem" })).trim()],
    ["the DER public key", publicKey.export({ type: "spki", format: "der" })],
  ];
  for (const [what, secret] of publicForms) {
    await jwtRefused(t, a, bearer(hmacToken(HS256, claims, secret)), `HS256 signed with ${what}`);
  }
  await jwtRefused(t, a, bearer(keyToken({ alg: "RS256", typ: "JWT" }, claims, privateKey)), "a real RS256 token");
  const jwk = publicKey.export({ format: "jwk" });
  const embedded = keyToken({ alg: "RS256", typ: "JWT", jwk }, claims, privateKey);
  await jwtRefused(t, a, bearer(embedded), "RS256 carrying its own public key in a jwk header");
  await jwtRefused(t, a, bearer(hmacToken({ alg: "RS256", typ: "JWT" }, claims)), "RS256 header, HMAC signature");
  await jwtRefused(t, a, bearer(keyToken({ alg: "ES256", typ: "JWT" }, claims, EC.privateKey)), "a real ES256 token");
  await jwtAccepted(t, a, hmacToken(HS256, claims), "control: signed HS256 with the right secret");
});

t.test("attack: an expired token is refused on every JWT operation, at and after exp", async (t) => {
  const a = await arena(t);
  const { claims } = decodeJwt(a.jwt);
  t.equal(claims.exp, T0_SECONDS + DAY, "the honest JWT expires 24 h after T0");

  a.setClock((T0_SECONDS + DAY - 1) * 1000);
  await jwtAccepted(t, a, a.jwt, "control: one second before exp");
  a.setClock((T0_SECONDS + DAY) * 1000);
  await jwtRefused(t, a, bearer(a.jwt), "the honest JWT at exp");
  a.setClock((T0_SECONDS + DAY + 1) * 1000);
  await jwtRefused(t, a, bearer(a.jwt), "the honest JWT 24 h + 1 s after issue");
  a.setClock((T0_SECONDS + 365 * DAY) * 1000);
  await jwtRefused(t, a, bearer(a.jwt), "the honest JWT a year later");

  // A correctly signed token whose exp has passed, and the same one unexpired as its control.
  a.setClock(T0);
  const expired = hmacToken(HS256, { ...claims, iat: T0_SECONDS - DAY - 60, exp: T0_SECONDS - 60 });
  await jwtRefused(t, a, bearer(expired), "correctly signed, exp in the past");
  // Moving exp forward breaks the signature, so an old token cannot be revived.
  const [header, , signature] = parts(a.jwt);
  a.setClock((T0_SECONDS + DAY + 1) * 1000);
  const revived = `${header}.${b64({ ...claims, exp: T0_SECONDS + 2 * DAY })}.${signature}`;
  await jwtRefused(t, a, bearer(revived), "the expired JWT with exp moved forward");
  a.setClock(T0);
  await jwtAccepted(
    t,
    a,
    hmacToken(HS256, { ...claims, iat: T0_SECONDS, exp: T0_SECONDS + DAY }),
    "control: unexpired",
  );
});

t.test("attack: a tampered payload (or signature) is refused on every JWT operation", async (t) => {
  const a = await arena(t);
  const [header, payload, signature] = parts(a.jwt);
  const claims = decodeJwt(a.jwt).claims;
  const theirs = decodeJwt(a.theirJwt).claims;
  const withPayload = (changed: Claims) => `${header}.${b64(changed)}.${signature}`;
  await a.session("mine-2");
  await jwtRefused(t, a, bearer(withPayload({ ...claims, session_id: "mine-2" })), "session_id of the same project");
  await jwtRefused(t, a, bearer(withPayload({ ...claims, session_id: "theirs" })), "session_id of another project");
  await jwtRefused(t, a, bearer(withPayload({ ...claims, project_id: theirs.project_id })), "project_id changed");
  await jwtRefused(t, a, bearer(withPayload({ ...claims, key_id: theirs.key_id })), "key_id changed");
  await jwtRefused(t, a, bearer(withPayload({ ...claims, exp: Number(claims.exp) + DAY })), "exp changed");
  await jwtRefused(t, a, bearer(withPayload(theirs)), "the whole payload of another project's JWT");
  await jwtRefused(t, a, bearer(withPayload({ ...claims, admin: true })), "a claim added");
  // The same claims, other bytes: the signature covers the bytes, not their meaning.
  const spaced = Buffer.from(JSON.stringify(claims, null, 1)).toString("base64url");
  await jwtRefused(t, a, bearer(`${header}.${spaced}.${signature}`), "the same claims re-encoded with spaces");
  await jwtRefused(t, a, bearer(`${header}.${payload}=.${signature}`), "base64 padding added to the payload");
  const flipped = signature.startsWith("A") ? `B${signature.slice(1)}` : `A${signature.slice(1)}`;
  await jwtRefused(t, a, bearer(`${header}.${payload}.${flipped}`), "signature changed");
  await jwtRefused(t, a, bearer(`${header}.${payload}`), "signature removed");
  await jwtRefused(t, a, bearer(`${a.jwt}x`), "a character appended");
  await jwtRefused(t, a, bearer(`${header}.${payload}.${signature.slice(0, -2)}`), "signature truncated");
  const reheaded = `${b64({ alg: "HS256", typ: "JWT", kid: "x" })}.${payload}.${signature}`;
  await jwtRefused(t, a, bearer(reheaded), "header changed");
  await jwtAccepted(t, a, a.jwt, "control: the untouched JWT");
});

t.test("attack: a token of project A used on project B's session: 403 or 404, nothing written", async (t) => {
  const a = await arena(t);
  const before = a.snapshot();
  // Session ids are unique across projects, so A's JWT can only reach B's session by naming it.
  const named: [string, unknown][] = [
    ["/v2/update_session", { session: { id: "theirs", end_state: "Fail" } }],
    ["/v2/update_session", { session: { session_id: "theirs", end_state: "Fail" } }],
    ["/v2/create_events", { events: [{ type: "llm", id: "x1", session_id: "theirs" }] }],
    ["/create_events", { events: [{ type: "tool", id: "x2", session_id: "theirs" }] }],
    ["/v2/update_events", { events: [{ event_id: "t0", session_id: "theirs", completion: "forged" }] }],
    ["/v2/create_agent", { id: "x3", name: "intruder", session_id: "theirs" }],
  ];
  for (const [url, body] of named) {
    const res = await a.withJwt(url, body, a.jwt);
    isError(t, res, 403, "Forbidden");
    t.strictSame(res.json(), forbidden("mine", "theirs"), `${url} ${JSON.stringify(body)}: the exact 403`);
  }
  // B's event looked up through A's JWT is unknown (E6), answered exactly as an id that exists nowhere.
  const foreignEvent = await a.withJwt("/v2/update_events", { events: [{ event_id: "t0", completion: "x" }] }, a.jwt);
  const noEvent = await a.withJwt("/v2/update_events", { events: [{ event_id: "zz", completion: "x" }] }, a.jwt);
  isError(t, foreignEvent, 404, "Not found");
  t.equal(foreignEvent.body.replaceAll("t0", "zz"), noEvent.body, "B's event id is indistinguishable from no event");
  // And the other way round: B's JWT naming A's session.
  const reverse = await a.withJwt("/v2/update_session", { session: { id: "mine", end_state: "Fail" } }, a.theirJwt);
  t.equal(reverse.statusCode, 403, reverse.body);
  t.strictSame(reverse.json(), forbidden("theirs", "mine"), "the exact 403 the other way round");
  t.equal((await inspect(a.store).getSession("mine"))?.end_state, null, "A's session unchanged");
  t.equal((await inspect(a.store).getSession("theirs"))?.end_state, null, "B's session unchanged");
  t.equal(a.snapshot(), before, "nothing written in either project");
  await jwtAccepted(t, a, a.jwt, "control: A's JWT on its own session");
  await jwtAccepted(t, a, a.theirJwt, "control: B's JWT on its own session");
});

t.test("attack: a revoked API key fails at once on every API-key operation", async (t) => {
  const a = await arena(t);
  await keyAccepted(t, a, API_KEY, "control: before revocation");
  const key = await a.store.apiKeyByHash(hashApiKey(API_KEY));
  if (!key) throw new Error("API_KEY is not in the store");
  await a.store.revokeApiKey(key.id, new Date(T0).toISOString());

  await keyRefused(t, a, { "x-agentmon-api-key": API_KEY }, "revoked key, X-Agentmon-Api-Key");
  await keyRefused(t, a, { "x-agentops-api-key": API_KEY }, "revoked key, X-Agentops-Api-Key");
  await keyRefused(t, a, { "x-agentmon-api-key": API_KEY.toUpperCase() }, "revoked key in capitals");
  const other = await a.withKey("/v2/create_session", { session: { id: "o2" } }, OTHER_PROJECT_KEY);
  t.equal(other.statusCode, 200, "another project's key still works");
});

t.test("attack: API key brute force (4.6): 20 failures, then 429 even for the right key", async (t) => {
  const a = await arena(t, {}, true); // the defaults: 20 failures within 60 s
  const attacker = "10.0.1.1";
  const bystander = "10.0.1.2";
  const right = { "x-agentmon-api-key": API_KEY };
  const open = (id: string, headers: Record<string, string>, from: string) =>
    a.post("/v2/create_session", { session: { id } }, headers, from);
  // Guesses of every kind count: a missing key, a malformed one, unknown UUIDs under either header.
  const guess = (i: number): Record<string, string> =>
    [
      {},
      { "x-agentmon-api-key": `guess-${i}` },
      { "x-agentmon-api-key": `33333333-3333-4333-8333-${String(i).padStart(12, "0")}` },
      { "x-agentops-api-key": `44444444-4444-4444-8444-${String(i).padStart(12, "0")}` },
    ][i % 4] ?? {};
  const before = a.snapshot();
  for (let i = 1; i <= 19; i++) {
    a.setClock(T0 + i * 1000);
    const [url, body] = KEY_ROUTES[i % KEY_ROUTES.length] as [string, unknown];
    is401(t, await a.post(url, body, guess(i), attacker), INVALID_API_KEY, `guess ${i}`);
  }
  t.equal(a.snapshot(), before, "the guesses wrote nothing");
  t.equal((await open("after-19", right, attacker)).statusCode, 200, "19 failures: the right key still works");
  a.setClock(T0 + 20_000);
  is401(t, await open("x", {}, attacker), INVALID_API_KEY, "guess 20 (no key)");

  const limitedAt = a.snapshot();
  let wait = 0;
  for (const [url, body] of KEY_ROUTES)
    wait = is429(t, await a.post(url, body, right, attacker), 60, `right key, ${url}`);
  is429(t, await open("y", { "x-agentops-api-key": API_KEY }, attacker), 60, "the right key under X-Agentops-Api-Key");
  is429(t, await open("y", { "x-agentmon-api-key": UNKNOWN_KEY }, attacker), 60, "a further guess");
  is429(t, await open("y", {}, attacker), 60, "a missing key");
  t.equal(a.snapshot(), limitedAt, "nothing written while limited");

  t.equal((await open("elsewhere", right, bystander)).statusCode, 200, "another address is not affected");
  is401(t, await open("x", {}, bystander), INVALID_API_KEY, "another address still gets 401, not 429");
  await jwtAccepted(t, a, a.jwt, "JWT calls from the limited address are not refused", attacker);

  // Retry-After is honest: once that many seconds have passed, the right key works again.
  a.setClock(T0 + 20_000 + wait * 1000);
  const later = await open("later", right, attacker);
  t.equal(later.statusCode, 200, `after Retry-After (${wait} s) the right key works: ${later.body}`);
  // Past the window of the last failure too, so fixed and sliding windows agree.
  a.setClock(T0 + 20_000 + 60_000 + 1);
  const renewed = await a.post("/v2/reauthorize_jwt", { session_id: "mine" }, right, attacker);
  t.equal(renewed.statusCode, 200, `once 60 s have passed since every failure: ${renewed.body}`);
});

// ============================================================================= more attacks

t.test("attack: API key brute force behind a forged X-Forwarded-For is still counted by address", async (t) => {
  const a = await arena(t, { authFailLimit: 3, authFailWindowMs: 60_000 }, true);
  const from = "10.0.3.1";
  for (let i = 0; i < 3; i++) {
    const headers = { "x-agentmon-api-key": UNKNOWN_KEY, "x-forwarded-for": `192.0.2.${i}` };
    is401(
      t,
      await a.post("/v2/create_session", { session: { id: "x" } }, headers, from),
      INVALID_API_KEY,
      `guess ${i}`,
    );
  }
  const headers = { "x-agentmon-api-key": API_KEY, "x-forwarded-for": "192.0.2.99" };
  const res = await a.post("/v2/create_session", { session: { id: "s1" } }, headers, from);
  t.equal(res.statusCode, 429, "still limited under a new forwarded address");
  is429(t, res, 60, "a new forwarded address");
  t.equal(await inspect(a.store).getSession("s1"), undefined, "nothing stored");
  await keyAccepted(t, a, API_KEY, "control: the right key from another address", "10.0.3.2");
});

t.test("attack: alg variants signed with the right secret (hs256, HS512, HS384, padded, not a string)", async (t) => {
  const a = await arena(t);
  const { claims } = decodeJwt(a.jwt);
  const variants: [string, unknown, string][] = [
    ["hs256", "hs256", "sha256"],
    ["Hs256", "Hs256", "sha256"],
    ['"HS256 "', "HS256 ", "sha256"],
    ['" HS256"', " HS256", "sha256"],
    ["HS256 with a NUL", "HS256\u0000", "sha256"],
    ["HS512, signed HMAC-SHA512", "HS512", "sha512"],
    ["HS512 header, HMAC-SHA256 signature", "HS512", "sha256"],
    ["HS384, signed HMAC-SHA384", "HS384", "sha384"],
    ["alg as an array", ["HS256"], "sha256"],
    ["alg null", null, "sha256"],
    ["alg as a number", 256, "sha256"],
    ["alg as an object", { name: "HS256" }, "sha256"],
  ];
  for (const [what, alg, hash] of variants) {
    await jwtRefused(t, a, bearer(hmacToken({ alg, typ: "JWT" }, claims, JWT_SECRET, hash)), `alg ${what}`);
  }
  const notAnObject = [b64text("HS256"), b64(["HS256"]), b64text("{not json"), ""];
  for (const header of notAnObject) {
    const input = `${header}.${b64(claims)}`;
    const token = `${input}.${createHmac("sha256", JWT_SECRET).update(input).digest("base64url")}`;
    await jwtRefused(t, a, bearer(token), `header ${JSON.stringify(Buffer.from(header, "base64url").toString())}`);
  }
  await jwtAccepted(t, a, hmacToken({ alg: "HS256" }, claims), "control: alg HS256 (no typ) with the right secret");
});

t.test("attack: kid, jku, x5u and jwk headers pointing elsewhere are never followed", async (t) => {
  const a = await arena(t);
  const { claims } = decodeJwt(a.jwt);
  // The attacker's key server: a real one, so that a fetch by agentmon would be seen.
  const fetched: string[] = [];
  const keyServer = createServer((req, res) => {
    fetched.push(req.url ?? "");
    res.setHeader("content-type", "application/json");
    res.end(JSON.stringify({ keys: [{ kty: "oct", kid: "evil", k: b64text("attacker-secret") }] }));
  });
  await new Promise<void>((resolve) => keyServer.listen(0, "127.0.0.1", resolve));
  t.teardown(() => keyServer.close());
  const base = `http://127.0.0.1:${(keyServer.address() as { port: number }).port}`;

  const evil = "attacker-secret";
  const { publicKey, privateKey } = RSA;
  const tokens: [string, string][] = [
    [
      "kid path traversal to /dev/null, empty secret",
      hmacToken({ ...HS256, kid: "../../../../../../dev/null" }, claims, ""),
    ],
    ["kid SQL injection", hmacToken({ ...HS256, kid: "x' UNION SELECT 'attacker-secret' --" }, claims, evil)],
    ["kid naming the stored secret", hmacToken({ ...HS256, kid: "jwt_secret" }, claims, evil)],
    ["jku to the attacker's key set", hmacToken({ ...HS256, jku: `${base}/jwks.json`, kid: "evil" }, claims, evil)],
    ["x5u to the attacker's certificate", hmacToken({ ...HS256, x5u: `${base}/cert.pem` }, claims, evil)],
    ["an embedded oct jwk", hmacToken({ ...HS256, jwk: { kty: "oct", k: b64text(evil) } }, claims, evil)],
    ["jku with an RS256 token", keyToken({ alg: "RS256", typ: "JWT", jku: `${base}/rsa.json` }, claims, privateKey)],
    [
      "an embedded RSA jwk",
      keyToken({ alg: "RS256", typ: "JWT", jwk: publicKey.export({ format: "jwk" }) }, claims, privateKey),
    ],
  ];
  for (const [what, token] of tokens) await jwtRefused(t, a, bearer(token), what);
  t.strictSame(fetched, [], "agentmon fetched nothing from the attacker's server");
  await jwtAccepted(t, a, a.jwt, "control: the honest JWT");
});

t.test("attack: a malformed token (extra dots, empty parts, other encodings) is refused", async (t) => {
  const a = await arena(t);
  const [header, payload, signature] = parts(a.jwt);
  const shapes: [string, string][] = [
    ["four parts", `${a.jwt}.${signature}`],
    ["a trailing dot", `${a.jwt}.`],
    ["a leading dot", `.${a.jwt}`],
    ["an empty signature", `${header}.${payload}.`],
    ["an empty payload", `${header}..${signature}`],
    ["an empty header", `.${payload}.${signature}`],
    ["only dots", ".."],
    ["padded base64", `${header}==.${payload}.${signature}=`],
    [
      "standard base64 in the signature",
      `${header}.${payload}.${signature.replaceAll("-", "+").replaceAll("_", "/")}x`,
    ],
    ["percent-encoded", `${header}.${payload}.${encodeURIComponent(`${signature}+/`)}`],
    ["two tokens", `${a.jwt} ${a.jwt}`],
    ["a JSON object", JSON.stringify({ jwt: a.jwt })],
    ["8 KiB of token", `${header}.${"A".repeat(8192)}.${signature}`],
  ];
  for (const [what, token] of shapes) await jwtRefused(t, a, bearer(token), what);
  await jwtAccepted(t, a, a.jwt, "control: the well-formed JWT");
});

t.test("attack: a right-secret signature over a different header (typ tricks, transplants) is refused", async (t) => {
  const a = await arena(t);
  const [header, payload, signature] = parts(a.jwt);
  const { header: honest } = decodeJwt(a.jwt);
  t.strictSame(honest, HS256, "the honest header");
  const headers: [string, unknown][] = [
    ["no typ", { alg: "HS256" }],
    ["the same keys in another order", { typ: "JWT", alg: "HS256" }],
    ["typ JWE", { alg: "HS256", typ: "JWE" }],
    ["typ none", { alg: "HS256", typ: "none" }],
    ["typ at+jwt", { alg: "HS256", typ: "at+jwt" }],
    ["a kid added", { alg: "HS256", typ: "JWT", kid: "1" }],
    ["crit added", { alg: "HS256", typ: "JWT", crit: ["exp"] }],
    ["alg none", { alg: "none", typ: "JWT" }],
  ];
  for (const [what, changed] of headers) {
    await jwtRefused(t, a, bearer(`${b64(changed)}.${payload}.${signature}`), `the honest signature under ${what}`);
  }
  // Two honest tokens: neither signature fits the other's payload (nor its own under the other's header).
  const [theirHeader, theirPayload, theirSignature] = parts(a.theirJwt);
  await jwtRefused(t, a, bearer(`${header}.${theirPayload}.${signature}`), "B's payload under A's signature");
  await jwtRefused(t, a, bearer(`${theirHeader}.${payload}.${theirSignature}`), "A's payload under B's signature");
  const reissued = await a.withKey("/v2/reauthorize_jwt", { session_id: "mine" });
  t.equal(reissued.statusCode, 200, reissued.body);
  a.setClock(T0 + 5000);
  const later = (await a.withKey("/v2/reauthorize_jwt", { session_id: "mine" })).json().jwt as string;
  const [, laterPayload] = parts(later);
  await jwtRefused(
    t,
    a,
    bearer(`${header}.${laterPayload}.${signature}`),
    "a later token's payload under the first signature",
  );
  await jwtAccepted(t, a, later, "control: the later token as issued");
});

t.test("attack: exp missing or a string, and other malformed claims, under the right secret", async (t) => {
  const a = await arena(t);
  const { claims } = decodeJwt(a.jwt);
  const without = (name: string) => Object.fromEntries(Object.entries(claims).filter(([key]) => key !== name));
  const forged: [string, unknown][] = [
    ["exp missing", without("exp")],
    ["exp a string", { ...claims, exp: String(claims.exp) }],
    ["exp a date string", { ...claims, exp: new Date((T0_SECONDS + DAY) * 1000).toISOString() }],
    ["exp null", { ...claims, exp: null }],
    ["exp true", { ...claims, exp: true }],
    ["iat missing", without("iat")],
    ["iat a string", { ...claims, iat: String(claims.iat) }],
    ["session_id missing", without("session_id")],
    ["session_id a number", { ...claims, session_id: 42 }],
    ["session_id an array", { ...claims, session_id: ["mine"] }],
    ["project_id null", { ...claims, project_id: null }],
    ["key_id missing", without("key_id")],
    ["key_id of no key", { ...claims, key_id: "no-such-key" }],
    ["the claims as an array", [claims]],
    ["the claims as a string", JSON.stringify(claims)],
    ["the claims null", null],
  ];
  for (const [what, body] of forged) await jwtRefused(t, a, bearer(hmacToken(HS256, body)), what);
  const notJson = `${b64(HS256)}.${b64text("{not json")}`;
  const signed = `${notJson}.${createHmac("sha256", JWT_SECRET).update(notJson).digest("base64url")}`;
  await jwtRefused(t, a, bearer(signed), "a payload that is not JSON");
  await jwtAccepted(t, a, hmacToken(HS256, claims), "control: the same claims, whole");
});

t.test("attack: iat in the future or exp pushed out, on a token the attacker holds", async (t) => {
  const a = await arena(t);
  const [header, , signature] = parts(a.jwt);
  const { claims } = decodeJwt(a.jwt);
  const year = 365 * DAY;
  const pushed: [string, Claims][] = [
    ["iat a year ahead", { ...claims, iat: T0_SECONDS + year, exp: T0_SECONDS + year + DAY }],
    ["iat an hour ahead", { ...claims, iat: T0_SECONDS + 3600 }],
    ["exp ten years out", { ...claims, exp: T0_SECONDS + 10 * year }],
    ["exp the largest safe integer", { ...claims, exp: Number.MAX_SAFE_INTEGER }],
  ];
  // Only the holder of the signing secret could sign such claims; SECURITY.md says what follows.
  for (const [what, changed] of pushed) {
    await jwtRefused(t, a, bearer(`${header}.${b64(changed)}.${signature}`), `${what}, the honest signature kept`);
    const guessed = hmacToken(HS256, changed, "a-guessed-secret-a-guessed-secret!!");
    await jwtRefused(t, a, bearer(guessed), `${what}, signed with a guessed secret`);
  }
  await jwtAccepted(t, a, a.jwt, "control: the honest JWT");
});

t.test(
  "attack: 4.4 lifetimes are enforced even under the right secret (a leaked secret cannot mint forever-tokens)",
  async (t) => {
    const a = await arena(t);
    const { claims } = decodeJwt(a.jwt);
    const year = 365 * DAY;
    const minted: [string, Claims][] = [
      ["iat a year ahead", { ...claims, iat: T0_SECONDS + year, exp: T0_SECONDS + year + DAY }],
      ["iat two minutes ahead", { ...claims, iat: T0_SECONDS + 120, exp: T0_SECONDS + 120 + DAY }],
      ["exp ten years out", { ...claims, exp: T0_SECONDS + 10 * year }],
      ["exp a second past iat + 24 h", { ...claims, iat: T0_SECONDS, exp: T0_SECONDS + DAY + 1 }],
    ];
    for (const [what, changed] of minted) await jwtRefused(t, a, bearer(hmacToken(HS256, changed)), what);
    await jwtAccepted(
      t,
      a,
      hmacToken(HS256, { ...claims, iat: T0_SECONDS + 30, exp: T0_SECONDS + 30 + DAY }),
      "control: 30 s of clock skew is allowed",
    );
    await jwtAccepted(
      t,
      a,
      hmacToken(HS256, { ...claims, iat: T0_SECONDS, exp: T0_SECONDS + DAY }),
      "control: exactly iat + 24 h",
    );
  },
);

t.test("attack: a signature in a non-canonical base64url spelling is refused", async (t) => {
  const a = await arena(t);
  const [header, payload, signature] = parts(a.jwt);
  // 32 bytes are 43 base64url characters; the last one carries 2 spare bits that decode the same.
  const last = signature.at(-1) ?? "A";
  const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
  const sameBytes = [...alphabet].filter(
    (c) => c !== last && (alphabet.indexOf(c) & ~3) === (alphabet.indexOf(last) & ~3),
  );
  t.equal(sameBytes.length, 3, "three other spellings of the same signature bytes");
  for (const c of sameBytes) {
    const variant = `${signature.slice(0, -1)}${c}`;
    t.same(Buffer.from(variant, "base64url"), Buffer.from(signature, "base64url"), `…${c} decodes to the same bytes`);
    await jwtRefused(
      t,
      a,
      bearer(`${header}.${payload}.${variant}`),
      `the signature ending in ${c} instead of ${last}`,
    );
  }
  await jwtAccepted(t, a, a.jwt, "control: the canonical token");
});

t.test("attack: a JWT sent as an API key is refused, and counts as a failed key check", async (t) => {
  const a = await arena(t, { authFailLimit: 6, authFailWindowMs: 60_000 }, true);
  const from = "10.0.5.1";
  await keyRefused(t, a, { "x-agentmon-api-key": a.jwt }, "a JWT in X-Agentmon-Api-Key", from);
  await keyRefused(t, a, { "x-agentops-api-key": a.jwt }, "a JWT in X-Agentops-Api-Key", from);
  const res = await a.post("/v2/create_session", { session: { id: "s1" } }, { "x-agentmon-api-key": API_KEY }, from);
  is429(t, res, 60, "the 6 JWT-as-key attempts used up the address's failures");
  await keyAccepted(t, a, API_KEY, "control: the key from another address", "10.0.5.2");
});

t.test("attack: an API key sent as a Bearer token is refused on both kinds of operation", async (t) => {
  const a = await arena(t);
  await jwtRefused(t, a, bearer(API_KEY), "the API key as a Bearer token");
  await jwtRefused(t, a, bearer(hashApiKey(API_KEY)), "the key's SHA-256 as a Bearer token");
  await jwtRefused(
    t,
    a,
    { authorization: `Bearer ${API_KEY}`, "x-agentmon-api-key": API_KEY },
    "and in its header too",
  );
  await keyRefused(t, a, bearer(API_KEY), "the API key as a Bearer token, no key header");
  await keyRefused(t, a, bearer(a.jwt), "a valid JWT, no key header");
  await keyAccepted(t, a, API_KEY, "control: the key in its header");
});

t.test("attack: Authorization Basic (or no scheme) carries neither a JWT nor an API key", async (t) => {
  const a = await arena(t);
  const basic = (text: string) => ({ authorization: `Basic ${Buffer.from(text).toString("base64")}` });
  await jwtRefused(t, a, { authorization: "Basic dXNlcjpwYXNzd29yZA==" }, "Basic credentials");
  await jwtRefused(t, a, { authorization: `Basic ${a.jwt}` }, "a valid JWT under Basic");
  await jwtRefused(t, a, basic(`${a.jwt}:`), "a valid JWT as the Basic user");
  await jwtRefused(t, a, { authorization: a.jwt }, "a valid JWT with no scheme");
  await jwtRefused(t, a, { authorization: `Token ${a.jwt}` }, "a valid JWT under the Token scheme");
  await jwtRefused(t, a, { authorization: `Bearer${a.jwt}` }, "Bearer with no space");
  await keyRefused(t, a, basic(`${API_KEY}:`), "the API key as the Basic user");
  await keyRefused(t, a, basic(`:${API_KEY}`), "the API key as the Basic password");
  await keyRefused(t, a, basic(`apikey:${API_KEY}`), "the API key as the Basic password of a user");
  await keyRefused(t, a, { authorization: `Basic ${API_KEY}` }, "the raw API key under Basic");
  await keyRefused(t, a, { authorization: API_KEY }, "the raw API key with no scheme");
  await jwtAccepted(t, a, a.jwt, "control: the JWT as a Bearer token");
});

t.test("attack: a key of the right shape that was never issued is refused on every API-key operation", async (t) => {
  const a = await arena(t);
  const lastDigit = API_KEY.endsWith("1") ? `${API_KEY.slice(0, -1)}2` : `${API_KEY.slice(0, -1)}1`;
  const unissued: [string, string][] = [
    ["an unknown UUID", UNKNOWN_KEY],
    ["an unknown UUID in capitals", UNKNOWN_KEY.toUpperCase()],
    ["the nil UUID", "00000000-0000-0000-0000-000000000000"],
    ["the max UUID", "ffffffff-ffff-ffff-ffff-ffffffffffff"],
    ["the real key with its last digit changed", lastDigit],
    ["another project's key with one digit changed", OTHER_PROJECT_KEY.replace("2", "3")],
  ];
  for (const [what, key] of unissued) {
    await keyRefused(t, a, { "x-agentmon-api-key": key }, `${what} (${keyPrefix(key)}…)`);
    await keyRefused(t, a, { "x-agentops-api-key": key }, `${what} under X-Agentops-Api-Key`);
  }
  await keyAccepted(t, a, API_KEY, "control: the issued key");
});

t.test("attack: a revoked key's previously issued JWTs fail at once on every JWT operation", async (t) => {
  const a = await arena(t);
  const reauthorized = await a.withKey("/v2/reauthorize_jwt", { session_id: "mine" });
  t.equal(reauthorized.statusCode, 200, reauthorized.body);
  const jwt2 = reauthorized.json().jwt as string;
  await jwtAccepted(t, a, a.jwt, "control: before revocation");
  const key = await a.store.apiKeyByHash(hashApiKey(API_KEY));
  if (!key) throw new Error("API_KEY is not in the store");
  await a.store.revokeApiKey(key.id, new Date(T0).toISOString());

  await jwtRefused(t, a, bearer(a.jwt), "the create_session JWT of the revoked key");
  await jwtRefused(t, a, bearer(jwt2), "the reauthorize_jwt JWT of the revoked key");
  const renew = await a.withKey("/v2/reauthorize_jwt", { session_id: "mine" });
  is401(t, renew, INVALID_API_KEY, "the revoked key cannot renew them");
  await jwtAccepted(t, a, a.theirJwt, "another key's JWT still works");
});

t.test("attack: project A's key on project B's session: 404 as if absent, or 409, no JWT", async (t) => {
  const a = await arena(t);
  const before = a.snapshot();
  const cases: [string, string, string][] = [
    [API_KEY, "theirs", "never-created"],
    [OTHER_PROJECT_KEY, "mine", "never-created-either"],
  ];
  for (const [key, foreign, missing] of cases) {
    const res = await a.withKey("/v2/reauthorize_jwt", { session_id: foreign }, key);
    isError(t, res, 404, "Not found");
    t.notOk("jwt" in res.json(), `${foreign}: no JWT`);
    const none = await a.withKey("/v2/reauthorize_jwt", { session_id: missing }, key);
    isError(t, none, 404, "Not found");
    t.equal(
      res.body.replaceAll(foreign, missing),
      none.body,
      `${foreign}: answered exactly as a session that does not exist`,
    );
    // S3: creating it again is a 409 (the id is taken) that hands out nothing and overwrites nothing.
    for (const [url, body] of [
      ["/v2/create_session", { session: { id: foreign, tags: ["stolen"] } }],
      ["/create_session", { session_id: foreign, end_state: "Fail" }],
    ] as const) {
      const taken = await a.withKey(url, body, key);
      isError(t, taken, 409, "Session already exists");
      t.notMatch(taken.body, /eyJ/, `${url} ${foreign}: no JWT`);
    }
  }
  t.equal(a.snapshot(), before, "nothing written");
  const own = await a.withKey("/v2/reauthorize_jwt", { session_id: "mine" });
  t.equal(own.statusCode, 200, "control: the key's own session");
});

t.test("attack: a JWT for session X with a body naming session Y: 403, nothing written", async (t) => {
  const a = await arena(t);
  const y = await a.session("Y");
  const seeded = await a.withJwt("/v2/create_events", { events: [{ type: "tool", id: "y0" }] }, y);
  t.equal(seeded.statusCode, 200, seeded.body);
  const before = a.snapshot();
  const cases: [string, unknown][] = [
    ["/v2/update_session", { session: { id: "Y", end_state: "Fail" } }],
    ["/v2/update_session", { session: { session_id: "Y", end_state: "Fail" } }],
    ["/v2/create_events", { events: [{ type: "llm", id: "x1", session_id: "Y" }] }],
    [
      "/create_events",
      {
        events: [
          { type: "llm", id: "x2" },
          { type: "tool", id: "x3", session_id: "Y" },
        ],
      },
    ],
    ["/v2/update_events", { events: [{ event_id: "y0", session_id: "Y", output: "forged" }] }],
    ["/v2/create_agent", { id: "agent-x", name: "intruder", session_id: "Y" }],
  ];
  for (const [url, body] of cases) {
    const res = await a.withJwt(url, body, a.jwt);
    isError(t, res, 403, "Forbidden");
    t.strictSame(res.json(), forbidden("mine", "Y"), `${url} ${JSON.stringify(body)}: the exact 403`);
  }
  const unknown = await a.withJwt("/v2/update_events", { events: [{ event_id: "y0", output: "forged" }] }, a.jwt);
  isError(t, unknown, 404, "Not found");
  t.equal(a.snapshot(), before, "nothing written: not in Y, and not the valid part in X either (G7)");
  t.equal((await inspect(a.store).getSession("Y"))?.end_state, null, "session Y unchanged");
  t.same(
    (await inspect(a.store).listEvents("Y")).map((event) => event.id),
    ["y0"],
    "Y holds only its own event",
  );
  t.same(await inspect(a.store).listAgents("Y"), [], "no agents in Y");
  await jwtAccepted(t, a, a.jwt, "control: X's JWT on X");
});

t.test("attack: header injection in the API key (CR, LF, NUL, folding, duplicates) never authenticates", async (t) => {
  const a = await arena(t);
  await a.app.listen({ port: 0, host: "127.0.0.1" });
  const port = (a.app.server.address() as { port: number }).port;
  const body = JSON.stringify({ session: { id: "injected" } });
  /** One request written byte for byte on a real socket; answers the status and the body. */
  const raw = (keyLines: string) =>
    new Promise<{ status: number; head: string; body: string }>((resolve, reject) => {
      const socket = connect(port, "127.0.0.1");
      const chunks: Buffer[] = [];
      socket.on("data", (chunk: Buffer) => chunks.push(chunk));
      socket.on("error", reject);
      socket.on("close", () => {
        const text = Buffer.concat(chunks).toString("utf8");
        const [head = "", rest = ""] = text.split(/\r\n\r\n(.*)/s);
        resolve({ status: Number(head.split(" ")[1]), head, body: rest });
      });
      socket.end(
        "POST /v2/create_session HTTP/1.1\r\nHost: agentmon.test\r\nConnection: close\r\n" +
          `Content-Type: application/json\r\nContent-Length: ${body.length}\r\n${keyLines}\r\n${body}`,
      );
    });
  const before = a.snapshot();
  // What the HTTP parser refuses outright: a 400 that authenticates nothing.
  const refusedByParser: [string, string][] = [
    ["a bare LF and an injected header", `X-Agentmon-Api-Key: ${API_KEY}\nX-Injected: 1\r\n`],
    ["a bare CR and an injected header", `X-Agentmon-Api-Key: ${API_KEY}\rX-Injected: 1\r\n`],
    ["a NUL after the key", `X-Agentmon-Api-Key: ${API_KEY}\u0000\r\n`],
    ["an obsolete folded line", `X-Agentmon-Api-Key: ${UNKNOWN_KEY}\r\n ${API_KEY}\r\n`],
  ];
  for (const [what, lines] of refusedByParser) {
    const res = await raw(lines);
    t.equal(res.status, 400, `${what}: 400 (${res.head.split("\r\n")[0]})`);
    t.match(res.head, /content-type: application\/json/i, `${what}: JSON`);
    const json = JSON.parse(res.body) as { error?: unknown; message?: unknown };
    t.strictSame(Object.keys(json).sort(), ["error", "message"], `${what}: a G2 body, error and message only`);
    t.equal(json.error, "Bad request", `${what}: error`);
    t.type(json.message, "string", `${what}: a message`);
    t.notMatch(res.body, /eyJ/, `${what}: no JWT`);
  }
  // What reaches agentmon: duplicates are joined into one value that is no key at all.
  const joined: [string, string][] = [
    ["an unknown key, then the right one", `X-Agentmon-Api-Key: ${UNKNOWN_KEY}\r\nX-Agentmon-Api-Key: ${API_KEY}\r\n`],
    ["the right key, then an unknown one", `X-Agentmon-Api-Key: ${API_KEY}\r\nX-Agentmon-Api-Key: ${UNKNOWN_KEY}\r\n`],
    ["the right key, comma, the right key", `X-Agentmon-Api-Key: ${API_KEY}, ${API_KEY}\r\n`],
    ["the right key inside quotes", `X-Agentmon-Api-Key: "${API_KEY}"\r\n`],
  ];
  for (const [what, lines] of joined) {
    const res = await raw(lines);
    t.equal(res.status, 401, `${what}: 401`);
    t.strictSame(JSON.parse(res.body), INVALID_API_KEY, `${what}: the exact 4.1 body`);
  }
  t.equal(a.snapshot(), before, "nothing written");
  const honest = await raw(`X-Agentmon-Api-Key: ${API_KEY}\r\n`);
  t.equal(
    honest.status,
    200,
    `control: the same request with the key alone, and the server still serves: ${honest.body}`,
  );
  t.equal(JSON.parse(honest.body).session_id, "injected", "control: the session was opened");
});

t.test("attack: replaying the SHA-256 of a key (what a stolen database holds) is refused", async (t) => {
  const a = await arena(t);
  const hash = createHash("sha256").update(API_KEY).digest("hex");
  t.equal(hash, hashApiKey(API_KEY), "the database holds this hash");
  await keyRefused(t, a, { "x-agentmon-api-key": hash }, "the hash as the key");
  const asUuid = `${hash.slice(0, 8)}-${hash.slice(8, 12)}-${hash.slice(12, 16)}-${hash.slice(16, 20)}-${hash.slice(20, 32)}`;
  await keyRefused(t, a, { "x-agentmon-api-key": asUuid }, "the hash cut to a UUID's shape");
  await keyAccepted(t, a, API_KEY, "control: the key itself");
});

t.test("attack: project A's key reads or deletes B's session via the read API: 404 as if absent", async (t) => {
  const a = await arena(t);
  const get = (url: string, headers: Record<string, string>, method: "GET" | "DELETE" = "GET") =>
    a.inject({ method, url, headers });
  const asA = { "x-agentmon-api-key": API_KEY };
  const before = a.snapshot();
  const reads = (id: string): ["GET" | "DELETE", string][] => [
    ["GET", `/v2/sessions/${id}`],
    ["GET", `/v2/sessions/${id}/events`],
    ["GET", `/v2/sessions/${id}/stats`],
    ["GET", `/v2/sessions/${id}/export`],
    ["DELETE", `/v2/sessions/${id}`],
  ];
  const absent = reads("never-created");
  for (const [i, [method, url]] of reads("theirs").entries()) {
    const res = await get(url, asA, method);
    isError(t, res, 404, "Not found");
    const [, absentUrl] = absent[i] as [string, string];
    const none = await get(absentUrl, asA, method);
    t.equal(
      res.body.replaceAll("theirs", "never-created"),
      none.body,
      `${method} ${url}: answered as an absent session`,
    );
  }
  const listed = await get("/v2/sessions", asA);
  t.equal(listed.statusCode, 200, listed.body);
  t.same(
    (listed.json().sessions as { session: { id: string } }[]).map((row) => row.session.id),
    ["mine"],
    "A's list holds only A's session",
  );
  // A session's JWT is not a read credential, even for its own session.
  for (const [method, url] of reads("mine")) {
    is401(t, await get(url, bearer(a.jwt), method), INVALID_API_KEY, `${method} ${url} with the session's JWT`);
  }
  t.equal(a.snapshot(), before, "nothing deleted or written");
  const own = await get("/v2/sessions/theirs", { "x-agentmon-api-key": OTHER_PROJECT_KEY });
  t.equal(own.statusCode, 200, "control: B's key reads B's session");
  t.equal(own.json().session.id, "theirs", "control: the session read");
});

t.test("attack: a key revoked by another process (agentmon keys revoke) fails at once, its JWTs too", async (t) => {
  const path = join(tempDir(t), "agentmon.db");
  const api = await build(t, { dbPath: path, maxEventLoopDelayMs: 0 });
  const jwt = await api.session("revoked-elsewhere");
  const call = () => api.withJwt("/v2/create_events", { events: [{ type: "llm", model: "m" }] }, jwt);
  t.equal((await call()).statusCode, 200, "control: the JWT works, and its key is now looked up (and remembered)");
  t.equal((await call()).statusCode, 200, "control: again");

  const other = sqliteStore(openDb(path)); // the CLI's own connection to the same file
  const key = (await other.listApiKeys()).find((k) => k.project_name === "default");
  await other.revokeApiKey(key?.id ?? "", new Date().toISOString());
  await other.close();

  const refused = await call();
  t.equal(refused.statusCode, 401, "the very next JWT call is refused");
  t.same(refused.json(), INVALID_JWT);
  const byKey = await api.withKey("/v2/reauthorize_jwt", { session_id: "revoked-elsewhere" });
  t.same(byKey.json(), INVALID_API_KEY, "and the key itself");
});
