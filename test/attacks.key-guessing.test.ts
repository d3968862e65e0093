/**
 * Credential attacks (contract part 4), one test each: key guessing and credential confusion (brute
 * force and the 4.6 limit, a forged X-Forwarded-For, a JWT sent as a key and a key as a JWT, keys
 * never issued, header injection, a replayed hash). Each gets the exact 401 (or 429) body and
 * leaves the database exactly as it was, and ends with a control (the honest credential on the same
 * calls succeeds). Helpers: attacks.helpers.ts.
 */
import { createHash } from "node:crypto";
import { connect } from "node:net";
import type { LightMyRequestResponse } from "fastify";
import t, { type Test } from "tap";
import { hashApiKey, keyPrefix } from "../domain/keys.ts";
import {
  arena,
  bearer,
  is401,
  jwtAccepted,
  jwtRefused,
  KEY_ROUTES,
  keyAccepted,
  keyRefused,
  T0,
} from "./attacks.helpers.ts";
import { API_KEY, INVALID_API_KEY, inspect, isError, OTHER_PROJECT_KEY, UNKNOWN_KEY } from "./helper.ts";

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
