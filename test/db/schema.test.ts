/**
 * One current schema per engine (db/sqlite/schema.sql, db/postgres/schema.sql; made by
 * scripts/schema.ts; docs/decisions/034-cold-start.md): a fresh database is made from it in one
 * step, an older one by its pending migrations. Whatever way a database came to the latest version,
 * from the schema file or from any older version through the migrations, it must be the same,
 * table by table: columns (types, defaults, NOT NULL), keys, indexes with their definitions,
 * triggers, views, virtual tables and the rows a migration leaves (FTS5 settings).
 */
import { join } from "node:path";
import type Database from "better-sqlite3";
import pg from "pg";
import t, { type Test } from "tap";
import { migrate as migratePostgres, schemaVersion as postgresVersion } from "../../db/postgres/migrate.ts";
import { migrate, schemaVersion } from "../../db/sqlite/migrate.ts";
import { openDb } from "../../db/sqlite/open.ts";
import { fileAtVersion, tempDir } from "../helper.ts";
import { databaseAtVersion, postgresRequired, postgresUnavailable, testDatabase } from "../postgres.ts";

type Described = Record<string, unknown>;

/** Lays `a` and `b` side by side, one assertion per table (or object), so a failure names it. */
function sameSchema(t: Test, a: Described, b: Described, what: string) {
  const names = [...new Set([...Object.keys(a), ...Object.keys(b)])].sort();
  t.ok(names.length > 10, `${what}: the schema has its tables`);
  for (const name of names) t.same(a[name], b[name], `${what}: ${name}`);
}

// ---------------------------------------------------------------- SQLite

const squeeze = (sql: string | null) => sql?.replace(/\s+/g, " ").trim() ?? null;

/** Every object of sqlite_schema, with what pragmas say of each table and index, and the rows. */
function describeSqlite(db: Database.Database): Described {
  const out: Described = { "(user_version)": db.pragma("user_version", { simple: true }) };
  const objects = db
    .prepare("SELECT type, name, tbl_name, sql FROM sqlite_schema WHERE name NOT LIKE 'sqlite\\_%' ESCAPE '\\'")
    .all() as { type: string; name: string; tbl_name: string; sql: string | null }[];
  for (const { type, name, tbl_name, sql } of objects) {
    const entry: Record<string, unknown> = { type, tbl_name, sql: squeeze(sql) };
    if (type === "table") {
      entry.columns = db.prepare("SELECT * FROM pragma_table_xinfo(?)").all(name);
      entry.foreignKeys = db.prepare("SELECT * FROM pragma_foreign_key_list(?)").all(name);
      entry.indexes = (
        db.prepare("SELECT * FROM pragma_index_list(?) ORDER BY name").all(name) as { name: string }[]
      ).map((index) => ({ ...index, columns: db.prepare("SELECT * FROM pragma_index_xinfo(?)").all(index.name) }));
      // FTS5 tables' contents are their shadow tables'; those hold the settings (automerge).
      if (!/^CREATE VIRTUAL TABLE/i.test(sql ?? "")) entry.rows = db.prepare(`SELECT * FROM "${name}"`).raw().all();
    }
    out[`${type} ${name}`] = entry;
  }
  return out;
}

t.test("SQLite: a fresh database is made from schema.sql, the same as by every migration in turn", async (t) => {
  const latest = schemaVersion();
  const fresh = openDb(join(tempDir(t), "fresh.db"));
  t.teardown(() => fresh.close());
  t.equal(fresh.pragma("user_version", { simple: true }), latest, "stamped with the latest version");
  const expected = describeSqlite(fresh);
  for (let version = 1; version <= latest; version++) {
    const db = fileAtVersion(":memory:", version);
    t.equal(migrate(db), latest, `from version ${version}`);
    sameSchema(t, describeSqlite(db), expected, `from version ${version}`);
    db.close();
  }
});

t.test("SQLite: the fresh path is taken only for an empty database at version 0", async (t) => {
  const path = join(tempDir(t), "older.db");
  const older = fileAtVersion(path, 1);
  older.exec("INSERT INTO projects (id, name, created_at) VALUES ('p', 'kept', '2026-01-01T00:00:00Z')");
  older.close();
  const db = openDb(path);
  t.teardown(() => db.close());
  t.equal(db.pragma("user_version", { simple: true }), schemaVersion());
  t.same(db.prepare("SELECT name FROM projects").pluck().all(), ["kept"], "an older file keeps its rows");
});

// ---------------------------------------------------------------- PostgreSQL

/** What pg_catalog says of the public schema, one entry per relation and one per function. */
async function describePostgres(url: string): Promise<Described> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const rows = async (sql: string) => (await client.query(sql)).rows as Record<string, unknown>[];
    const out: Record<string, Record<string, unknown>> = {};
    const of = (key: string) => {
      out[key] ??= {};
      return out[key] as Record<string, unknown>;
    };
    /** Appends `row` to the list `field` of relation `name`. */
    const add = (name: unknown, field: string, row: unknown) => {
      const entry = of(`relation ${name}`);
      entry[field] = [...((entry[field] as unknown[] | undefined) ?? []), row];
    };
    for (const r of await rows(
      `SELECT c.relname, c.relkind, c.relpersistence FROM pg_class c
       JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = 'public' AND c.relkind <> 'i'`,
    )) {
      of(`relation ${r.relname}`).kind = `${r.relkind}${r.relpersistence}`;
    }
    for (const r of await rows(
      `SELECT table_name, column_name, ordinal_position, data_type, udt_name, column_default, is_nullable,
         character_maximum_length, numeric_precision, numeric_scale, is_identity, identity_generation,
         identity_start, identity_increment, is_generated, generation_expression, collation_name
       FROM information_schema.columns WHERE table_schema = 'public' ORDER BY table_name, ordinal_position`,
    )) {
      add(r.table_name, "columns", r);
    }
    for (const r of await rows(
      `SELECT c.relname, k.conname, k.contype, pg_get_constraintdef(k.oid) AS def, k.condeferrable, k.condeferred
       FROM pg_constraint k JOIN pg_class c ON c.oid = k.conrelid JOIN pg_namespace n ON n.oid = c.relnamespace
       WHERE n.nspname = 'public' ORDER BY c.relname, k.conname`,
    )) {
      add(r.relname, "constraints", r);
    }
    for (const r of await rows(
      "SELECT tablename, indexname, indexdef FROM pg_indexes WHERE schemaname = 'public' ORDER BY tablename, indexname",
    )) {
      add(r.tablename, "indexes", r);
    }
    for (const r of await rows(
      `SELECT c.relname, g.tgname, pg_get_triggerdef(g.oid) AS def, g.tgenabled FROM pg_trigger g
       JOIN pg_class c ON c.oid = g.tgrelid JOIN pg_namespace n ON n.oid = c.relnamespace
       WHERE n.nspname = 'public' AND NOT g.tgisinternal ORDER BY c.relname, g.tgname`,
    )) {
      add(r.relname, "triggers", r);
    }
    for (const r of await rows("SELECT viewname, definition FROM pg_views WHERE schemaname = 'public'")) {
      of(`relation ${r.viewname}`).view = r.definition;
    }
    for (const r of await rows(
      `SELECT sequencename, data_type, start_value, min_value, max_value, increment_by, cycle, cache_size
       FROM pg_sequences WHERE schemaname = 'public'`,
    )) {
      of(`relation ${r.sequencename}`).sequence = r;
    }
    for (const r of await rows(
      `SELECT p.proname, pg_get_function_identity_arguments(p.oid) AS args, pg_get_functiondef(p.oid) AS def
       FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace WHERE n.nspname = 'public'`,
    )) {
      of(`function ${r.proname}(${r.args})`).def = r.def;
    }
    // Rows a migration leaves behind (none today, but a seed would be part of the schema).
    for (const name of Object.keys(out)) {
      const relation = out[name] as { kind?: string; rows?: unknown };
      if (!name.startsWith("relation ") || relation.kind !== "rp") continue;
      const table = name.slice("relation ".length);
      relation.rows = (await client.query(`SELECT * FROM "${table}" ORDER BY 1`)).rows;
    }
    return out;
  } finally {
    await client.end();
  }
}

/** Migrates the database at `url` as a node does at start (db/postgres/migrate.ts). */
async function migrateAt(url: string): Promise<number> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return await migratePostgres(client);
  } finally {
    await client.end();
  }
}

t.test("PostgreSQL: a fresh database is made from schema.sql, the same as by every migration in turn", async (t) => {
  const unavailable = await postgresUnavailable();
  if (unavailable && !postgresRequired()) {
    t.comment(`skipped: ${unavailable}`);
    return;
  }
  const latest = postgresVersion();
  const freshUrl = await testDatabase(t);
  const client = new pg.Client({ connectionString: freshUrl });
  await client.connect();
  await client.query("DROP SCHEMA public CASCADE; CREATE SCHEMA public");
  await client.end();
  t.equal(await migrateAt(freshUrl), latest);
  const expected = await describePostgres(freshUrl);
  t.same((expected["relation agentmon_schema"] as { rows?: unknown }).rows, [{ version: latest }], "stamped");
  for (let version = 1; version <= latest; version++) {
    const url = (await databaseAtVersion(t, version, async () => undefined)) as string;
    t.equal(await migrateAt(url), latest, `from version ${version}`);
    sameSchema(t, await describePostgres(url), expected, `from version ${version}`);
  }
});
