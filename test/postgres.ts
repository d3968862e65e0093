/**
 * PostgreSQL for the tests (issue 14): every store a test opens gets a database of its own, cloned
 * from a template that the migrations have been run on once (CREATE DATABASE ... TEMPLATE takes
 * tens of milliseconds), and dropped when the test ends.
 *
 * The server is AGENTMON_TEST_DATABASE_URL's, else the one every machine of ours runs
 * (postgres://postgres@127.0.0.1:5432/test). When it does not answer, the PostgreSQL tests are
 * skipped with one line that says why, unless AGENTMON_REQUIRE_POSTGRES=1 (CI: .ci/run sets
 * it), where they fail instead.
 */
import { createHash, randomBytes } from "node:crypto";
import { readdirSync, readFileSync } from "node:fs";
import pg from "pg";
import { openPostgresStore, type PostgresOptions, type PostgresStore } from "../db/postgres/store.ts";
import { fromRoot } from "../lib/paths.ts";
import { DERIVED } from "./db/sqlite-committed.ts";

export const ADMIN_URL = process.env.AGENTMON_TEST_DATABASE_URL || "postgres://postgres@127.0.0.1:5432/test";

interface Teardown {
  teardown(fn: () => unknown): void;
}

/** The URL of another database on the same server. */
export function urlOf(database: string): string {
  const url = new URL(ADMIN_URL);
  url.pathname = `/${database}`;
  return url.toString();
}

async function admin<T>(run: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: ADMIN_URL, connectionTimeoutMillis: 5000 });
  client.on("error", () => undefined);
  await client.connect();
  try {
    return await run(client);
  } finally {
    await client.end().catch(() => undefined);
  }
}

let available: Promise<string | undefined> | undefined;
/** Why PostgreSQL cannot be used here, or undefined when it can. */
export function postgresUnavailable(): Promise<string | undefined> {
  available ??= admin(async (client) => {
    await client.query("SELECT 1");
    return undefined;
  }).then(
    (ok) => ok,
    (error: Error) => `PostgreSQL at ${new URL(ADMIN_URL).host} does not answer (${error.message})`,
  );
  return available;
}

/** True when the PostgreSQL tests must run (CI): a server that is down fails them rather than skipping. */
export const postgresRequired = () => process.env.AGENTMON_REQUIRE_POSTGRES === "1";

/** The template's name: a hash of the migrations and the schema file, so a changed one gets a new template. */
function templateName(): string {
  const folder = fromRoot("db/postgres/migrations/");
  const hash = createHash("sha256");
  for (const name of readdirSync(folder).sort()) hash.update(name).update(readFileSync(new URL(name, folder)));
  // A new database is made from the schema file (docs/decisions/034-cold-start.md).
  hash.update(readFileSync(fromRoot("db/postgres/schema.sql")));
  return `agentmon_template_${hash.digest("hex").slice(0, 16)}`;
}

let template: Promise<string> | undefined;
/** The migrated template, made once per server (under an advisory lock: test files run at once). */
function migratedTemplate(): Promise<string> {
  template ??= admin(async (client) => {
    const name = templateName();
    await client.query("SELECT pg_advisory_lock(7140225)");
    try {
      const { rowCount } = await client.query("SELECT 1 FROM pg_database WHERE datname = $1", [name]);
      if (rowCount === 0) {
        const building = `${name}_${randomBytes(4).toString("hex")}`;
        await client.query(`CREATE DATABASE ${building}`);
        const store = await openPostgresStore({ url: urlOf(building) });
        await store.close();
        // Renamed once whole: a run killed while migrating leaves no half-made template behind.
        await client.query(`ALTER DATABASE ${building} RENAME TO ${name}`);
      }
    } finally {
      await client.query("SELECT pg_advisory_unlock(7140225)");
    }
    return name;
  });
  return template;
}

/** A new, migrated, empty database, dropped when `t` ends; answers its URL. */
export async function testDatabase(t: Teardown): Promise<string> {
  const source = await migratedTemplate();
  const name = `agentmon_test_${process.pid}_${randomBytes(6).toString("hex")}`;
  // CREATE DATABASE fails while another session is connected to the template; none stays connected,
  // but two creates from one template at the same instant can meet: try again shortly.
  for (let attempt = 1; ; attempt++) {
    try {
      await admin((client) => client.query(`CREATE DATABASE ${name} TEMPLATE ${source}`));
      break;
    } catch (error) {
      if (attempt >= 20 || !/being accessed by other users/.test((error as Error).message)) throw error;
      await new Promise((resolve) => setTimeout(resolve, 50 * attempt));
    }
  }
  t.teardown(() => admin((client) => client.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`)));
  return urlOf(name);
}

/** A PostgreSQL store on a new database of its own, closed and dropped when `t` ends. */
export async function testPostgresStore(
  t: Teardown,
  options: Omit<PostgresOptions, "url"> = {},
): Promise<PostgresStore & { url: string }> {
  const url = await testDatabase(t);
  const store = await openPostgresStore({ ...options, url });
  t.teardown(() => store.close()); // before the drop: teardowns run last first
  return Object.assign(store, { url });
}

/**
 * A new database as schema version `version` left it (migrations 001 to `version`, and
 * agentmon_schema saying so), filled by `fill` with rows as that version stored them, for the
 * migration tests; undefined, after a comment, when PostgreSQL is not there and not required.
 */
export async function databaseAtVersion(
  t: Teardown & { comment: (message: string) => void },
  version: number,
  fill: (client: pg.Client) => Promise<void>,
): Promise<string | undefined> {
  const unavailable = await postgresUnavailable();
  if (unavailable && !postgresRequired()) {
    t.comment(`skipped: ${unavailable}`);
    return undefined;
  }
  const url = await testDatabase(t);
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    await client.query("DROP SCHEMA public CASCADE; CREATE SCHEMA public");
    const folder = fromRoot("db/postgres/migrations/");
    for (const name of readdirSync(folder)
      .filter((n) => /^\d{3}-.*\.sql$/.test(n) && Number(n.slice(0, 3)) <= version)
      .sort()) {
      await client.query(readFileSync(new URL(name, folder), "utf8"));
    }
    await client.query(
      `CREATE TABLE agentmon_schema (version integer NOT NULL); INSERT INTO agentmon_schema VALUES (${version})`,
    );
    await fill(client);
  } finally {
    await client.end();
  }
  return url;
}

/**
 * Every projection's rows, read with the SQLite runners' SQL (test/db/sqlite-committed.ts DERIVED),
 * bigints as numbers so that a comparison with a rebuild weighs values, not spellings.
 */
export async function derivedRows(db: pg.Pool): Promise<Record<string, Record<string, unknown>[]>> {
  const found: Record<string, Record<string, unknown>[]> = {};
  for (const [name, sql] of Object.entries(DERIVED)) {
    const { rows } = await db.query<Record<string, unknown>>(sql);
    found[name] = rows.map((row) =>
      Object.fromEntries(
        Object.entries(row).map(([k, v]) => [
          k,
          typeof v === "string" && /^-?\d+$/.test(v) && k !== "key" && k !== "model" ? Number(v) : v,
        ]),
      ),
    );
  }
  return found;
}
