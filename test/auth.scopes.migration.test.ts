import { join } from "node:path";
import t, { type Test } from "tap";
import { schemaVersion as postgresVersion } from "../db/postgres/migrate.ts";
import { openPostgresStore } from "../db/postgres/store.ts";
import { schemaVersion } from "../db/sqlite/migrate.ts";
import { openDb } from "../db/sqlite/open.ts";
import { sqliteStore } from "../db/sqlite/store.ts";
import type { Store } from "../db/store.ts";
import { hashApiKey, keyPrefix } from "../domain/keys.ts";
import { build, fileAtVersion, tempDir } from "./helper.ts";
import { databaseAtVersion } from "./postgres.ts";

const OLD_KEY = "01d00000-0000-4000-8000-000000000000";
const ALL = ["ingest", "read", "admin"];

/** The old key, read back after the migration, works for each scope over HTTP. */
async function keepsEveryScope(t: Test, store: Store) {
  const record = await store.apiKeyByHash(hashApiKey(OLD_KEY));
  t.strictSame(record?.scopes, ALL, "the old key has all three scopes");
  t.strictSame(
    (await store.listApiKeys()).map((k) => k.scopes),
    [ALL],
    "listed with them",
  );
  const api = await build(t, { store });
  t.equal((await api.withKey("/v2/create_session", { session: { id: "old" } }, OLD_KEY)).statusCode, 200, "ingest");
  const headers = { "x-agentmon-api-key": OLD_KEY };
  t.equal((await api.inject({ method: "GET", url: "/v2/sessions/old", headers })).statusCode, 200, "read");
  t.equal((await api.inject({ method: "DELETE", url: "/v2/sessions/old", headers })).statusCode, 200, "admin");
}

t.test("SQLite: migration 005 gives a key of a version-4 file every scope", async (t) => {
  const path = join(tempDir(t), "v4.db");
  const v4 = fileAtVersion(path, 4);
  v4.prepare("INSERT INTO projects (id, name, created_at) VALUES ('p1', 'default', '2026-01-01T00:00:00Z')").run();
  v4.prepare(
    "INSERT INTO api_keys (id, project_id, key_hash, prefix, created_at) VALUES ('k1', 'p1', ?, ?, '2026-01-01T00:00:00Z')",
  ).run(hashApiKey(OLD_KEY), keyPrefix(OLD_KEY));
  v4.close();

  const db = openDb(path);
  t.equal(db.pragma("user_version", { simple: true }), schemaVersion(), "now at the latest version");
  t.same(db.prepare("SELECT scopes FROM api_keys").all(), [{ scopes: "ingest,read,admin" }], "the column as stored");
  await keepsEveryScope(t, sqliteStore(db));
});

t.test("PostgreSQL: migration 003 gives a key of a version-2 database every scope", async (t) => {
  const url = await databaseAtVersion(t, 2, async (client) => {
    await client.query("INSERT INTO projects (id, name, created_at) VALUES ('p1', 'default', '2026-01-01T00:00:00Z')");
    await client.query(
      "INSERT INTO api_keys (id, project_id, key_hash, prefix, created_at) VALUES ('k1', 'p1', $1, $2, '2026-01-01T00:00:00Z')",
      [hashApiKey(OLD_KEY), keyPrefix(OLD_KEY)],
    );
  });
  if (url === undefined) return;
  const store = await openPostgresStore({ url });
  t.equal(await store.ping(new Date().toISOString()), postgresVersion(), "now at the latest version");
  await keepsEveryScope(t, store);
});
