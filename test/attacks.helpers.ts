/**
 * What the credential attack tests (test/attacks.*.test.ts) share: the arena (the app on a real
 * SQLite database the test reads every row of), the operations of each kind, tokens made by hand,
 * and the assertions each attack and its control end with.
 *
 * The app runs on a fixed clock (build's `now`), so tokens and windows are exact, never timed.
 */
import { createHmac } from "node:crypto";
import type { LightMyRequestResponse } from "fastify";
import type { Test } from "tap";
import type { AppOptions } from "../app.ts";
import { TOTALS } from "../db/projections/projections.ts";
import { openDb } from "../db/sqlite/open.ts";
import { sqliteStore } from "../db/sqlite/store.ts";
import { PROJECTION_TABLES } from "./db/sqlite-committed.ts";
import { build, INVALID_API_KEY, INVALID_JWT, JWT_SECRET, OTHER_PROJECT_KEY, type TestApp } from "./helper.ts";

export const DAY = 24 * 60 * 60;
/** The fixed clock every arena starts at, in milliseconds (2027-01-15T08:00:00.500Z). */
export const T0 = 1_800_000_000_500;
export const T0_SECONDS = Math.floor(T0 / 1000);

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
export const KEY_ROUTES: [string, unknown][] = [
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
export async function arena(t: Test, options: Partial<AppOptions> = {}, limitFailures = false): Promise<Arena> {
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
  // The raw rows only: the projections (docs/decisions/033-projections.md) catch up on earlier
  // writes whenever the projector runs, which is not a write of the request under test.
  const snapshot = () => {
    const tables = db.prepare("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name").all() as {
      name: string;
    }[];
    return JSON.stringify(
      tables
        .filter(({ name }) => !PROJECTION_TABLES.test(name))
        .map(({ name }) => [
          name,
          (db.prepare(`SELECT * FROM "${name}"`).all() as Record<string, unknown>[])
            .map((row) => {
              if (name !== "sessions") return JSON.stringify(row);
              const raw = { ...row };
              for (const column of TOTALS) delete raw[column];
              return JSON.stringify(raw);
            })
            .sort(),
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

export const b64 = (value: unknown) => Buffer.from(JSON.stringify(value)).toString("base64url");

/** A token with any header and claims, HMAC-signed over `header.payload` with the hash and secret given. */
export function hmacToken(
  header: unknown,
  claims: unknown,
  secret: string | Buffer = JWT_SECRET,
  hash = "sha256",
): string {
  const input = `${b64(header)}.${b64(claims)}`;
  return `${input}.${createHmac(hash, secret).update(input).digest("base64url")}`;
}

export const HS256 = { alg: "HS256", typ: "JWT" };
export const bearer = (jwt: string) => ({ authorization: `Bearer ${jwt}` });
export const parts = (jwt: string) => jwt.split(".") as [string, string, string];

// ----------------------------------------------------------------------------- assertions

/** Status 401, a JSON content type and exactly the 4.1 body. */
export function is401(t: Test, res: LightMyRequestResponse, body: typeof INVALID_JWT, what: string) {
  t.equal(res.statusCode, 401, `${what}: 401`);
  t.match(res.headers["content-type"], /^application\/json/, `${what}: JSON`);
  t.strictSame(res.json(), body, `${what}: exact body`);
}

/** Every JWT operation answers the exact JWT 401 to these headers, and nothing is written. */
export async function jwtRefused(t: Test, a: Arena, headers: Record<string, string>, what: string) {
  const before = a.snapshot();
  for (const [url, body] of JWT_ROUTES) is401(t, await a.post(url, body, headers), INVALID_JWT, `${what} on ${url}`);
  t.equal(a.snapshot(), before, `${what}: nothing written`);
}

/** Every API-key operation answers the exact API-key 401 to these headers, hands out no JWT, writes nothing. */
export async function keyRefused(t: Test, a: Arena, headers: Record<string, string>, what: string, from?: string) {
  const before = a.snapshot();
  for (const [url, body] of KEY_ROUTES) {
    const res = await a.post(url, body, headers, from);
    is401(t, res, INVALID_API_KEY, `${what} on ${url}`);
    t.notMatch(res.body, /eyJ/, `${what} on ${url}: no JWT in the answer`);
  }
  t.equal(a.snapshot(), before, `${what}: nothing written`);
}

/** Control: every JWT operation answers 200 with this JWT (and the extra headers). */
export async function jwtAccepted(t: Test, a: Arena, jwt: string, what: string, from?: string) {
  for (const [url, body] of JWT_ROUTES) {
    const res = await a.post(url, body, bearer(jwt), from);
    t.equal(res.statusCode, 200, `${what} on ${url}: ${res.body}`);
    t.equal(res.json().status, "success", `${what} on ${url}: success`);
  }
}

/** Control: every API-key operation answers 200 and a JWT with this key. */
export async function keyAccepted(t: Test, a: Arena, key: string, what: string, from?: string) {
  for (const [url, body] of KEY_ROUTES) {
    const res = await a.post(url, body, { "x-agentmon-api-key": key }, from);
    t.equal(res.statusCode, 200, `${what} on ${url}: ${res.body}`);
    t.type(res.json().jwt, "string", `${what} on ${url}: a JWT`);
  }
}
