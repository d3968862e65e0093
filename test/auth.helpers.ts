/**
 * What the authentication tests (test/auth.*.test.ts, contract part 4) share: the routes of each
 * kind, tokens and claims made by hand, and assertions over every route of a kind.
 */
import { join } from "node:path";
import type { LightMyRequestResponse } from "fastify";
import type { Test } from "tap";
import type { Store } from "../db/store.ts";
import { hashApiKey, keyPrefix } from "../domain/keys.ts";
import type { ApiKeyRecord } from "../domain/types.ts";
import { type ErrorBody, INVALID_JWT, type TestApp, tempDir } from "./helper.ts";

export const DAY = 24 * 60 * 60;
/** A fixed clock, in milliseconds (2027-01-15T08:00:00.500Z). */
export const T0 = 1_800_000_000_500;

/** The API-key routes, each with a body that would succeed given a good key. */
export const KEY_ROUTES: [string, (id: string) => unknown][] = [
  ["/v2/create_session", (id) => ({ session: { id } })],
  ["/create_session", (id) => ({ session_id: id })],
  ["/v2/reauthorize_jwt", (id) => ({ session_id: id })],
];

/** The JWT routes, in an order where each body succeeds given a good JWT. */
export const JWT_ROUTES: [string, unknown][] = [
  ["/v2/update_session", { session: { end_state: "Success" } }],
  ["/v2/create_events", { events: [{ type: "llm", id: "e1", model: "gpt-4o" }] }],
  ["/create_events", { events: [{ type: "tool", id: "e2", name: "search" }] }],
  ["/v2/update_events", { events: [{ event_id: "e1", completion: "done" }] }],
  ["/v2/create_agent", { id: "agent-1", name: "planner" }],
];

export const bearer = (jwt: string) => ({ authorization: `Bearer ${jwt}` });

/** A database file in a temporary directory that is removed when the test ends. */
export const tempDb = (t: Test) => join(tempDir(t), "agentmon.db");

export async function keyRecord(store: Store, key: string): Promise<ApiKeyRecord> {
  const record = await store.apiKeyByHash(hashApiKey(key));
  if (!record) throw new Error(`no key ${keyPrefix(key)} in the store`);
  return record;
}

export function is401(t: Test, res: LightMyRequestResponse, body: ErrorBody, what: string) {
  t.equal(res.statusCode, 401, `${what}: 401`);
  t.match(res.headers["content-type"], /^application\/json/, `${what}: JSON`);
  t.strictSame(res.json(), body, `${what}: exact body`);
}

/** Every JWT route answers the JWT 401, body exact, with the headers given. */
export async function everyJwtRoute(t: Test, app: TestApp, headers: Record<string, string>, what: string) {
  for (const [url, body] of JWT_ROUTES) is401(t, await app.post(url, body, headers), INVALID_JWT, `${what} on ${url}`);
}

/** Every JWT route answers 200 with this JWT (and the extra headers). */
export async function everyJwtRouteOk(
  t: Test,
  app: TestApp,
  jwt: string,
  what: string,
  extra: Record<string, string> = {},
) {
  for (const [url, body] of JWT_ROUTES) {
    const res = await app.post(url, body, { ...extra, ...bearer(jwt) });
    t.equal(res.statusCode, 200, `${what} on ${url}: ${res.body}`);
    t.equal(res.json().status, "success", `${what} on ${url}: success`);
  }
}
