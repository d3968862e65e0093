/**
 * Contract part 4, authentication, rule 4.3: API keys are UUIDs, stored only as hashes, revocable
 * at once, through the real app on real SQLite. The attacks on these rules are in attacks.*.test.ts.
 */
import { createHash } from "node:crypto";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import t from "tap";
import { openDb } from "../db/sqlite/open.ts";
import { openThreadedStore } from "../db/sqlite/thread.ts";
import { hashApiKey, keyPrefix } from "../domain/keys.ts";
import { bearer, everyJwtRoute, everyJwtRouteOk, is401, keyRecord, tempDb } from "./auth.helpers.ts";
import {
  API_KEY,
  build,
  decodeJwt,
  eventIds,
  INVALID_API_KEY,
  INVALID_JWT,
  inspect,
  OTHER_PROJECT_KEY,
  rawPost,
} from "./helper.ts";

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
