/**
 * PostgreSQL schema migrations: `migrations/NNN-name.sql`, forward only, numbered without gaps.
 * Every node runs this at start, so several may run it at once: it takes a transaction-level
 * advisory lock first, so one node migrates and the others wait, then find the work done. The
 * pending files and the new version commit together, or none of them does. A database newer
 * than this code is refused, never downgraded. A fresh database (version 0) is made from
 * `schema.sql`, the migrations' result as one file, in one step, under the same lock and in the
 * same transaction (docs/decisions/034-cold-start.md).
 */
import { readFileSync } from "node:fs";
import type pg from "pg";
import { fromRoot } from "../../lib/paths.ts";
import { SchemaMismatch } from "../errors.ts";
import { currentSchema, migrationFiles as sharedMigrationFiles } from "../migrations.ts";

const MIGRATIONS = fromRoot("db/postgres/migrations/");
const SCHEMA = fromRoot("db/postgres/schema.sql");

/** The advisory lock key of migrations: any bigint of our own; 0x61676d6e is "agmn". */
const MIGRATION_LOCK = 0x61676d6e;

const migrationFiles = () => sharedMigrationFiles(MIGRATIONS);

let latest: number | undefined;
/** The schema version this code needs: the number of migrations it ships. */
export const schemaVersion = (): number => {
  latest ??= migrationFiles().length;
  return latest;
};

/** The database's schema version (0 before the first migration). */
export async function versionOf(db: pg.ClientBase | pg.Pool): Promise<number> {
  const { rows } = await db.query<{ version: number }>(
    `SELECT CASE WHEN to_regclass('agentmon_schema') IS NULL THEN 0
       ELSE (SELECT version FROM agentmon_schema) END AS version`,
  );
  return rows[0]?.version ?? 0;
}

/** Runs every pending migration in one transaction, under the lock; answers the version now. */
export async function migrate(client: pg.ClientBase): Promise<number> {
  const files = migrationFiles();
  await client.query("BEGIN");
  try {
    await client.query("SELECT pg_advisory_xact_lock($1)", [MIGRATION_LOCK]);
    await client.query("CREATE TABLE IF NOT EXISTS agentmon_schema (version integer NOT NULL)");
    await client.query(
      "INSERT INTO agentmon_schema (version) SELECT 0 WHERE NOT EXISTS (SELECT 1 FROM agentmon_schema)",
    );
    const current = await versionOf(client);
    if (current > files.length) throw new SchemaMismatch(current, files.length);
    const schema = current === 0 ? currentSchema(SCHEMA, files.length) : undefined;
    if (schema !== undefined) await client.query(schema);
    else for (const name of files.slice(current)) await client.query(readFileSync(new URL(name, MIGRATIONS), "utf8"));
    if (current < files.length) await client.query("UPDATE agentmon_schema SET version = $1", [files.length]);
    await client.query("COMMIT");
    return files.length;
  } catch (error) {
    await client.query("ROLLBACK").catch(() => undefined);
    throw error;
  }
}
