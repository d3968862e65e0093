/**
 * The SQLite adapter without HTTP: migrations, pragmas, STRICT tables, a meta value kept across a
 * reopen. What every Store must do is test/db/store.contract.ts, run on this adapter by
 * store.sqlite.test.ts.
 */
import { join } from "node:path";
import Database from "better-sqlite3";
import t, { type Test } from "tap";
import { migrate, schemaVersion } from "../../db/sqlite/migrate.ts";
import { openDb } from "../../db/sqlite/open.ts";
import { sqliteStore } from "../../db/sqlite/store.ts";
import { tempDir } from "../helper.ts";

/** A database path in a folder that does not exist yet, in a temporary folder removed when `t` ends. */
const tempDb = (t: Test) => join(tempDir(t), "nested", "agentmon.db");

t.test("migrations: a new file is created with its folder, WAL on, schema at the latest version", async (t) => {
  const latest = schemaVersion();
  const path = tempDb(t);
  const db = openDb(path);
  t.equal(db.pragma("journal_mode", { simple: true }), "wal");
  t.equal(db.pragma("foreign_keys", { simple: true }), 1);
  t.equal(db.pragma("user_version", { simple: true }), latest);
  t.equal(migrate(db), latest, "running again changes nothing");
  db.close();
  const again = openDb(path);
  t.equal(again.pragma("user_version", { simple: true }), latest, "reopening keeps the version");
  again.close();
});

t.test("migrations: a database from a newer agentmon is refused", async (t) => {
  const path = tempDb(t);
  openDb(path).close();
  const raw = new Database(path);
  raw.pragma("user_version = 99");
  raw.close();
  t.throws(() => openDb(path), /schema version 99, newer than this agentmon/);
});

t.test("tables are STRICT: a wrong type is refused by SQLite itself", async (t) => {
  const db = openDb(":memory:");
  t.throws(() => db.prepare("INSERT INTO projects (id, name, created_at) VALUES (1, 'p', x'00')").run());
  db.close();
});

t.test("meta values keep the first value written (the JWT secret survives restarts)", async (t) => {
  const path = tempDb(t);
  const store = sqliteStore(openDb(path));
  t.equal(await store.metaValue("jwt_secret", "first"), "first");
  t.equal(await store.metaValue("jwt_secret", "second"), "first");
  await store.close();
  const reopened = sqliteStore(openDb(path));
  t.equal(await reopened.metaValue("jwt_secret", "third"), "first");
  await reopened.close();
});
