/**
 * Schema migrations: `migrations/NNN-name.sql`, forward only, numbered without gaps. Pending ones
 * run in one transaction; the version is kept in `PRAGMA user_version`. A database newer than
 * this code is refused, never downgraded. A fresh database (no table, version 0) is made from
 * `schema.sql`, the migrations' result as one file, in one step (docs/decisions/034-cold-start.md).
 */
import { readFileSync } from "node:fs";
import type Database from "better-sqlite3";
import { fromRoot } from "../../lib/paths.ts";
import { currentSchema, migrationFiles as sharedMigrationFiles } from "../migrations.ts";

type Db = Database.Database;

const MIGRATIONS = fromRoot("db/sqlite/migrations/");
const SCHEMA = fromRoot("db/sqlite/schema.sql");

const migrationFiles = () => sharedMigrationFiles(MIGRATIONS);

let latest: number | undefined;
/** The schema version this code needs: the number of migrations it ships. */
export const schemaVersion = (): number => {
  latest ??= migrationFiles().length;
  return latest;
};

export const versionOf = (db: Db) => db.pragma("user_version", { simple: true }) as number;

/** Runs every pending migration in one transaction; answers the version the database is now at. */
export function migrate(db: Db): number {
  const files = migrationFiles();
  const current = versionOf(db);
  if (current > files.length) {
    throw new Error(`the database is at schema version ${current}, newer than this agentmon (${files.length})`);
  }
  if (current === files.length) return current;
  const fresh = current === 0 && db.prepare("SELECT count(*) FROM sqlite_schema").pluck().get() === 0;
  const schema = fresh ? currentSchema(SCHEMA, files.length) : undefined;
  db.transaction(() => {
    if (schema !== undefined) db.exec(schema);
    else for (const name of files.slice(current)) db.exec(readFileSync(new URL(name, MIGRATIONS), "utf8"));
    db.pragma(`user_version = ${files.length}`);
  })();
  return files.length;
}
