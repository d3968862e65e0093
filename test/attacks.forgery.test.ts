/**
 * Credential attacks (contract part 4), one test each: forged tokens (unsigned, a guessed secret,
 * key confusion, tampered or malformed parts, header tricks, bad claims, stretched lifetimes). Each
 * gets the exact 401 body of 4.1 and leaves the database exactly as it was: each test reads every
 * row of every table before and after the attack. Each test ends with a control (the honest
 * credential on the same calls succeeds), so a refusal cannot come from a body that would have
 * failed anyway. Helpers: attacks.helpers.ts.
 */
import { createHmac, generateKeyPair, type KeyObject, sign } from "node:crypto";
import { createServer } from "node:http";
import { promisify } from "node:util";
import t from "tap";
import { hashApiKey } from "../domain/keys.ts";
import {
  arena,
  b64,
  bearer,
  DAY,
  HS256,
  hmacToken,
  jwtAccepted,
  jwtRefused,
  parts,
  T0,
  T0_SECONDS,
} from "./attacks.helpers.ts";
import { API_KEY, decodeJwt, JWT_SECRET } from "./helper.ts";

type Claims = Record<string, unknown>;

// The attacker's key pairs, made once on the thread pool: generating them synchronously inside a
// test would stall the event loop the app under test runs on.
const keyPair = promisify(generateKeyPair);
const RSA = await keyPair("rsa", { modulusLength: 2048 });
const EC = await keyPair("ec", { namedCurve: "P-256" });
const b64text = (text: string) => Buffer.from(text).toString("base64url");

/** A token signed with a private key (RS256 with an RSA key, ES256 with an EC key). */
function keyToken(header: unknown, claims: unknown, key: KeyObject): string {
  const input = `${b64(header)}.${b64(claims)}`;
  const dsaEncoding = key.asymmetricKeyType === "ec" ? "ieee-p1363" : "der";
  return `${input}.${sign("sha256", Buffer.from(input), { key, dsaEncoding }).toString("base64url")}`;
}

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
