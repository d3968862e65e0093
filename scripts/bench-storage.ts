/**
 * `npm run bench:storage [-- --quick] [--postgres] [--events 1000000,10000000] [--shape dataset|b1]
 * [--keep] [--db FILE]`:
 * bytes per event on disk (issue 24 §7), raw rows and each projection apart.
 *
 * Loads the events in steps (default 1 M, then 9 M more to 10 M; `--quick`: 100 k), through the
 * Store's own write methods, so agentmon derives whatever it derives itself:
 *   - `dataset` (default): scripts/dataset.ts's sessions (about 10 events each, spread over a year,
 *     with models, tools, failures, tags and prompts), the shape whose hourly and daily rollups
 *     issue 24 found to be 885 MB at 10 M events;
 *   - `b1`: `npm run bench`'s B1 bodies (scripts/load.ts eventBatch, 100 events a call) into 50
 *     sessions, all within minutes: the raw rows of the ingest benchmarks, with almost no rollup.
 * After each step it starts `agentmon serve` on the database and waits until GET /metrics shows
 * `agentmon_projection_backlog` at 0 (the projector has finished); a server without the gauge
 * derives at write time, so there is nothing to wait for. Then it measures every b-tree:
 *   - SQLite (a file): the dbstat virtual table (better-sqlite3 is built with
 *     SQLITE_ENABLE_DBSTAT_VTAB), page bytes per table and index, after a WAL checkpoint; the free
 *     pages apart;
 *   - PostgreSQL (`--postgres`, AGENTMON_BENCH_DATABASE_URL's server or 127.0.0.1:5432/test, a new
 *     database dropped at the end): pg_table_size per table (heap, TOAST, maps) and
 *     pg_relation_size per index, which add up to pg_total_relation_size.
 * Indexes count with their table, except those that exist only for a projection (scripts/bench/
 * storage-groups.ts). Tables the list does not know are "other", so nothing is missed.
 *
 * `--db FILE` measures an existing SQLite file (loading on into it only for a step above what it
 * holds), for a data set kept with `--keep` or a long run cut short.
 *
 * Prints a table per step and writes bench-storage.json in the current directory. No thresholds.
 */
import { mkdtempSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import type { Store } from "../db/store.ts";
import { lagOf } from "./bench/lag.ts";
import { attribute, type Line, type Measured } from "./bench/storage-groups.ts";
import { generateDataset } from "./dataset.ts";

export interface StorageOptions {
  steps: number[];
  engine: "sqlite" | "postgres";
  shape: "dataset" | "b1";
  /** Keep the SQLite file (its path is printed) instead of removing it. */
  keep: boolean;
  /**
   * An existing SQLite file to measure, and to load on into when a step is above what it holds
   * (a run that was cut short, or a data set kept with --keep); never removed.
   */
  db?: string | undefined;
}

/** `1000000`, `1e6`, `1m`, `100k`, `10M`: a count of events. */
function count(text: string): number {
  const match = /^(\d+(?:\.\d+)?(?:e\d+)?)([kKmM]?)$/.exec(text.trim());
  const n = match ? Number(match[1]) * (match[2]?.toLowerCase() === "k" ? 1e3 : match[2] ? 1e6 : 1) : Number.NaN;
  if (!Number.isInteger(n) || n < 1) throw new Error(`--events takes counts like 1000000, 1m or 100k, not "${text}"`);
  return n;
}

export function parseStorageArgs(args: string[]): StorageOptions {
  const { values } = parseArgs({
    args,
    options: {
      quick: { type: "boolean", default: false },
      postgres: { type: "boolean", default: false },
      events: { type: "string" },
      shape: { type: "string", default: "dataset" },
      keep: { type: "boolean", default: false },
      db: { type: "string" },
    },
    strict: true,
  });
  const steps = values.events
    ? values.events.split(",").map(count)
    : values.quick
      ? [100_000]
      : [1_000_000, 10_000_000];
  for (let i = 1; i < steps.length; i++) {
    if ((steps[i] as number) <= (steps[i - 1] as number))
      throw new Error(`--events steps must grow (each step adds to the one before): ${steps.join(",")}`);
  }
  if (values.shape !== "dataset" && values.shape !== "b1")
    throw new Error(`--shape is dataset or b1, not "${values.shape}"`);
  if (values.db !== undefined && values.postgres) throw new Error("--db is a SQLite file; not with --postgres");
  return {
    steps,
    engine: values.postgres ? "postgres" : "sqlite",
    shape: values.shape,
    keep: values.keep,
    ...(values.db === undefined ? {} : { db: values.db }),
  };
}

const KEY = "0b7c6f4e-5a4e-4b0a-9c1e-2f3d4a5b6c7d";
const METRICS_TOKEN = "bench-storage-metrics-token-0123456789";
const log = (line: string) => process.stdout.write(`${line}\n`);
const mb = (bytes: number) => (bytes / 1e6).toLocaleString("en-US", { maximumFractionDigits: 1 });

/** What is written so far; each step continues from it. */
interface Written {
  sessions: number;
  events: number;
}

/** B1's shape: 100-event insertEvents calls into 50 sessions, 50 calls in flight. */
async function loadB1(store: Store, projectId: string, target: number, written: Written) {
  const { eventBatch } = await import("./load.ts");
  const { newEvent, readEvent } = await import("../domain/records.ts");
  const { timestampFromMillis } = await import("../domain/timestamps.ts");
  const received = timestampFromMillis(Date.now());
  const sessions: string[] = [];
  for (let i = 0; i < 50; i++) {
    const id = `b1-${written.sessions + i}`;
    await store.createSession(projectId, {
      id,
      init_timestamp: received.iso,
      init_us: received.us,
      end_timestamp: null,
      end_state: null,
      end_state_reason: null,
      tags: ["load"],
      host_env: null,
      extra: {},
    });
    sessions.push(id);
  }
  written.sessions += sessions.length;
  let turn = 0;
  const worker = async () => {
    while (written.events < target) {
      const n = Math.min(100, target - written.events);
      written.events += n;
      const now = timestampFromMillis(Date.now());
      const records = eventBatch(n).events.map((raw, index) =>
        newEvent(readEvent(raw, `events[${index}]`, [], "id") as Parameters<typeof newEvent>[0], String(raw.id), now),
      );
      await store.insertEvents(projectId, sessions[turn++ % sessions.length] as string, records);
      if (turn % 1000 === 0) process.stdout.write(`\r  ${written.events.toLocaleString("en-US")} events`);
    }
  };
  await Promise.all(Array.from({ length: 50 }, worker));
}

/** Opens the store of `target` (a file path or a PostgreSQL URL). */
async function openStore(engine: StorageOptions["engine"], target: string): Promise<Store> {
  if (engine === "postgres") {
    const { openPostgresStore } = await import("../db/postgres/store.ts");
    return openPostgresStore({ url: target });
  }
  const { openDb } = await import("../db/sqlite/open.ts");
  const { sqliteStore } = await import("../db/sqlite/store.ts");
  return sqliteStore(openDb(target), { checkpointer: false });
}

/** Writes events until `target` through the Store; answers the seconds it took. */
async function load(o: StorageOptions, target: string, written: Written, events: number) {
  const { hashApiKey, keyPrefix } = await import("../domain/keys.ts");
  const store = await openStore(o.engine, target);
  const started = performance.now();
  try {
    const key =
      (await store.apiKeyByHash(hashApiKey(KEY))) ??
      (await store.createApiKey(hashApiKey(KEY), keyPrefix(KEY), "default", new Date().toISOString()));
    if (o.shape === "b1") await loadB1(store, key.project_id, events, written);
    else {
      const made = await generateDataset(store, key.project_id, {
        // Enough sessions for the events (about 10 each); maxEvents stops it at the target.
        sessions: Math.ceil((events - written.events) / 2),
        first: written.sessions,
        maxEvents: events - written.events,
        seed: 36,
        endUs: Date.UTC(2026, 10, 1) * 1000,
        onProgress: (n) => process.stdout.write(`\r  ${n.toLocaleString("en-US")} sessions`),
      });
      written.sessions += made.sessions;
      written.events += made.events;
    }
  } finally {
    await store.close();
  }
  process.stdout.write("\n");
  return (performance.now() - started) / 1000;
}

/**
 * Starts `agentmon serve` on the database and waits until the projector has caught up: the
 * backlog gauge at 0, or absent (a server that derives at write time). Answers the seconds waited
 * and whether the gauge was there.
 */
async function settle(o: StorageOptions, target: string) {
  const { startAgentmon } = await import("./load.ts");
  const env: Record<string, string> = { AGENTMON_API_KEY: KEY, AGENTMON_METRICS_TOKEN: METRICS_TOKEN };
  if (o.engine === "postgres") env.AGENTMON_DATABASE_URL = target;
  else env.AGENTMON_DB = target;
  const started = performance.now();
  const server = await startAgentmon(env);
  let projector = false;
  try {
    for (;;) {
      const res = await fetch(`${server.url}/metrics`, { headers: { authorization: `Bearer ${METRICS_TOKEN}` } });
      if (res.status !== 200) throw new Error(`GET /metrics answered ${res.status}: ${await res.text()}`);
      const lag = lagOf(await res.text());
      const backlog = lag.agentmon_projection_backlog;
      if (backlog !== undefined) projector = true;
      if (backlog === undefined || backlog === 0) break;
      process.stdout.write(
        `\r  projector: ${backlog.toLocaleString("en-US")} changes behind, ${lag.agentmon_projection_lag_seconds ?? "n/a"} s`,
      );
      await new Promise((resolve) => setTimeout(resolve, 1000));
    }
  } finally {
    await server.stop();
  }
  return { seconds: (performance.now() - started) / 1000, projector };
}

/**
 * What an existing file holds, from its raw rows: its events, and the index after the highest
 * data-set session (`s-00000123`), where loading goes on (sessions of a cut-short run may be
 * missing below it; none is written twice).
 */
async function held(path: string): Promise<Written> {
  const { default: Database } = await import("better-sqlite3");
  const db = new Database(path, { readonly: true, fileMustExist: true });
  try {
    const row = db
      .prepare(
        "SELECT (SELECT count(*) FROM events) AS events, (SELECT max(id) FROM sessions WHERE id GLOB 's-[0-9]*') AS last",
      )
      .get() as { events: number; last: string | null };
    const sessions =
      row.last === null
        ? (db.prepare("SELECT count(*) AS n FROM sessions").get() as { n: number }).n
        : Number(row.last.slice(2)) + 1;
    return { events: row.events, sessions };
  } finally {
    db.close();
  }
}

/** Rollup tables with a level (hourly, daily) and a dimension, as of migration 011. */
const LEVELLED = ["event_rollup_durations", "event_rollups"];

/**
 * The rows of each levelled rollup table per level and dimension, and their share of its bytes
 * (rows × the table's bytes per row: an estimate): which granularity the size comes from. A table
 * without those columns (a later layout) is skipped.
 */
async function byLevel(engine: StorageOptions["engine"], target: string, measured: Measured[]) {
  const out: { table: string; level: number; dim: string; rows: number; bytes: number }[] = [];
  const sql = (table: string) =>
    `SELECT level, dim, count(*) AS n FROM ${table} GROUP BY level, dim ORDER BY level, dim`;
  let query: (text: string) => Promise<{ level: number; dim: string; n: number }[]>;
  let close: () => Promise<void>;
  if (engine === "postgres") {
    const { default: pg } = await import("pg");
    const client = new pg.Client({ connectionString: target });
    await client.connect();
    query = async (text) =>
      (await client.query<{ level: number; dim: string; n: string }>(text)).rows.map((r) => ({ ...r, n: Number(r.n) }));
    close = () => client.end();
  } else {
    const { default: Database } = await import("better-sqlite3");
    const db = new Database(target, { readonly: true });
    query = async (text) => db.prepare(text).all() as { level: number; dim: string; n: number }[];
    close = async () => {
      db.close();
    };
  }
  try {
    for (const table of LEVELLED) {
      const bytes = measured.filter((m) => m.table === table).reduce((sum, m) => sum + m.bytes, 0);
      let rows: { level: number; dim: string; n: number }[];
      try {
        rows = await query(sql(table));
      } catch {
        continue;
      }
      const total = rows.reduce((sum, r) => sum + r.n, 0);
      for (const r of rows)
        out.push({ table, level: r.level, dim: r.dim, rows: r.n, bytes: total ? (bytes * r.n) / total : 0 });
    }
  } finally {
    await close();
  }
  return out;
}

/** Every b-tree of the SQLite file, by dbstat; and the free pages. */
async function measureSqlite(path: string) {
  const { default: Database } = await import("better-sqlite3");
  const db = new Database(path);
  try {
    db.pragma("wal_checkpoint(TRUNCATE)");
    const tables = new Map(
      (db.prepare("SELECT name, tbl_name FROM sqlite_master").all() as { name: string; tbl_name: string }[]).map(
        (r) => [r.name, r.tbl_name],
      ),
    );
    let rows: { name: string; bytes: number }[];
    try {
      rows = db.prepare("SELECT name, pgsize AS bytes FROM dbstat WHERE aggregate = TRUE").all() as typeof rows;
    } catch (error) {
      throw new Error(
        `this SQLite has no dbstat virtual table (SQLITE_ENABLE_DBSTAT_VTAB): ${(error as Error).message}`,
      );
    }
    const measured: Measured[] = rows.map((r) => ({
      name: r.name,
      table: tables.get(r.name) ?? r.name,
      bytes: r.bytes,
    }));
    const pageSize = db.pragma("page_size", { simple: true }) as number;
    const free = (db.pragma("freelist_count", { simple: true }) as number) * pageSize;
    const file = statSync(path).size;
    return { measured, free, file };
  } finally {
    db.close();
  }
}

/** Every relation of the PostgreSQL database: tables with TOAST and maps, indexes apart. */
async function measurePostgres(url: string) {
  const { default: pg } = await import("pg");
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const { rows } = await client.query<{ name: string; table: string; bytes: string }>(
      `SELECT c.relname AS name, coalesce(t.relname, c.relname) AS table,
              CASE WHEN c.relkind = 'i' THEN pg_relation_size(c.oid) ELSE pg_table_size(c.oid) END AS bytes
         FROM pg_class c
         JOIN pg_namespace n ON n.oid = c.relnamespace
         LEFT JOIN pg_index i ON i.indexrelid = c.oid
         LEFT JOIN pg_class t ON t.oid = i.indrelid
        WHERE n.nspname = current_schema() AND c.relkind IN ('r', 'i', 'm', 'p')`,
    );
    const total = await client.query<{ bytes: string }>("SELECT pg_database_size(current_database()) AS bytes");
    const measured = rows.map((r) => ({ name: r.name, table: r.table, bytes: Number(r.bytes) }));
    return { measured, free: 0, file: Number(total.rows[0]?.bytes ?? 0) };
  } finally {
    await client.end();
  }
}

function report(lines: Line[], events: number, free: number, file: number) {
  const perEvent = (bytes: number) => (bytes / events).toFixed(1).padStart(10);
  log(`  ${"kind".padEnd(11)}${"what".padEnd(34)}${"MB".padStart(10)}${"B/event".padStart(10)}`);
  for (const kind of ["raw", "projection", "other"] as const) {
    const of = lines.filter((l) => l.kind === kind);
    for (const l of of) log(`  ${kind.padEnd(11)}${l.group.padEnd(34)}${mb(l.bytes).padStart(10)}${perEvent(l.bytes)}`);
    const sum = of.reduce((s, l) => s + l.bytes, 0);
    log(`  ${kind.padEnd(11)}${"= all".padEnd(34)}${mb(sum).padStart(10)}${perEvent(sum)}`);
  }
  if (free) log(`  ${"free".padEnd(11)}${"free pages".padEnd(34)}${mb(free).padStart(10)}${perEvent(free)}`);
  log(`  ${"".padEnd(11)}${"file (database) size".padEnd(34)}${mb(file).padStart(10)}${perEvent(file)}`);
}

async function main() {
  const o = parseStorageArgs(process.argv.slice(2));
  const { randomBytes } = await import("node:crypto");
  const admin = process.env.AGENTMON_BENCH_DATABASE_URL || "postgres://postgres@127.0.0.1:5432/test";
  const dir = mkdtempSync(join(tmpdir(), "agentmon-storage-"));
  let target = join(dir, "storage.db");
  let dbName: string | undefined;
  const adminQuery = async (sql: string) => {
    const { default: pg } = await import("pg");
    const client = new pg.Client({ connectionString: admin });
    await client.connect();
    try {
      await client.query(sql);
    } finally {
      await client.end();
    }
  };
  if (o.engine === "postgres") {
    dbName = `agentmon_storage_${randomBytes(5).toString("hex")}`;
    await adminQuery(`CREATE DATABASE ${dbName}`);
    const url = new URL(admin);
    url.pathname = `/${dbName}`;
    target = url.toString();
  }
  const results = [];
  const written: Written = { sessions: 0, events: 0 };
  if (o.db) {
    target = o.db;
    Object.assign(written, await held(o.db));
    log(`${o.db}: ${written.events.toLocaleString("en-US")} events, next session index ${written.sessions}`);
  }
  try {
    log(
      `bench:storage: ${o.engine}, ${o.shape} shape, steps ${o.steps.map((n) => n.toLocaleString("en-US")).join(", ")} events`,
    );
    for (const step of o.steps) {
      let loadSeconds = 0;
      if (written.events < step) {
        log(`\nloading to ${step.toLocaleString("en-US")} events ...`);
        loadSeconds = await load(o, target, written, step);
      }
      const settled = await settle(o, target);
      const measured = o.engine === "postgres" ? await measurePostgres(target) : await measureSqlite(target);
      const lines = attribute(measured.measured);
      log(
        `\n${written.events.toLocaleString("en-US")} events in ${written.sessions.toLocaleString("en-US")} sessions ` +
          `(${o.engine}, ${o.shape}); ${loadSeconds ? `loaded in ${loadSeconds.toFixed(0)} s` : "already held"}, ${settled.projector ? `projector settled in ${settled.seconds.toFixed(0)} s` : "no projector gauge (derived at write time)"}`,
      );
      report(lines, written.events, measured.free, measured.file);
      const levels = await byLevel(o.engine, target, measured.measured);
      for (const l of levels)
        log(
          `  ${l.table} ${l.level === 0 ? "hourly" : l.level === 1 ? "daily" : `level ${l.level}`} ${l.dim}: ` +
            `${l.rows.toLocaleString("en-US")} rows, ~${mb(l.bytes)} MB`,
        );
      results.push({
        levels,
        events: written.events,
        sessions: written.sessions,
        load_seconds: Math.round(loadSeconds),
        settle_seconds: Math.round(settled.seconds),
        projector: settled.projector,
        file_bytes: measured.file,
        free_bytes: measured.free,
        lines: lines.map((l) => ({ ...l, bytes_per_event: l.bytes / written.events })),
      });
    }
    const out = { date: new Date().toISOString(), engine: o.engine, shape: o.shape, steps: results };
    writeFileSync("bench-storage.json", `${JSON.stringify(out, null, 2)}\n`);
    log("\nwritten: bench-storage.json");
    if (o.keep && o.engine === "sqlite" && !o.db) log(`kept: ${target}`);
  } finally {
    if (dbName) await adminQuery(`DROP DATABASE IF EXISTS ${dbName} WITH (FORCE)`);
    if (!(o.keep && o.engine === "sqlite")) rmSync(dir, { recursive: true, force: true });
  }
}

if (import.meta.url === `file://${process.argv[1]}`) await main();
