/**
 * Credential attacks (contract part 4), one test each: stale and revoked credentials (an expired
 * token, a revoked key and the JWTs it issued, a key revoked by another process). Each gets the
 * exact 401 body of 4.1 and leaves the database exactly as it was, and ends with a control (the
 * honest credential on the same calls succeeds). Helpers: attacks.helpers.ts.
 */
import { join } from "node:path";
import t from "tap";
import { openDb } from "../db/sqlite/open.ts";
import { sqliteStore } from "../db/sqlite/store.ts";
import { hashApiKey } from "../domain/keys.ts";
import {
  arena,
  b64,
  bearer,
  DAY,
  HS256,
  hmacToken,
  is401,
  jwtAccepted,
  jwtRefused,
  keyAccepted,
  keyRefused,
  parts,
  T0,
  T0_SECONDS,
} from "./attacks.helpers.ts";
import { API_KEY, build, decodeJwt, INVALID_API_KEY, INVALID_JWT, OTHER_PROJECT_KEY, tempDir } from "./helper.ts";

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
