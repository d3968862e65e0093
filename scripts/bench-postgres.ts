/**
 * `npm run bench:postgres [-- --quick] [--nodes N]`: agentmon's writes on PostgreSQL (issues 14
 * and 24), as ratios against baselines measured in the same run, on the same server:
 *
 *   raw limit   event rows inserted straight into agentmon's schema, one 1000-row
 *               `INSERT ... SELECT FROM unnest(...)` per transaction, on one connection and on two
 *               (the rows are B1's, built before the clock starts). Each connection writes to a
 *               project and session of its own, rows in id order, so the baseline never waits on
 *               itself: with two connections on one session, whatever the schema derives per
 *               session and per project (the session row's totals, the rollups) made the two
 *               transactions queue on the same rows, and were seen to deadlock. The limit is the
 *               better of the two;
 *   per call    one transaction per create_events call of one event (key check, session lookup,
 *               one-row insert, commit), 50 callers on 10 connections, each caller on a session
 *               of its own as B2's 50 connections are: what a store without group commit could do;
 *   PG-B1       100-event create_events calls, 50 connections, one agentmon node, then N nodes
 *               (`--nodes`, default 2) on one database, connections split between them
 *                                                       target ≥ 0.8 × the raw limit (issue 24)
 *   PG-B2       1-event calls, 50 connections, one node, then N nodes
 *                                                       target ≥ 4 × per call (issue 24)
 *
 * B1 and B2 on SQLite (a file, `npm start`'s store) are measured in the same run, for the record.
 * The server is AGENTMON_BENCH_DATABASE_URL's, else postgres://postgres@127.0.0.1:5432/test;
 * every scenario gets a new database, dropped at the end. Printed, never asserted. A pool's idle
 * connection that the server ends (a backend killed, a restart) is logged, not a crash.
 */
import { randomBytes, randomUUID } from "node:crypto";
import { parseArgs } from "node:util";
import pg from "pg";
import { eventColumns, INSERT_EVENTS } from "../db/postgres/group-commit.ts";
import { openPostgresStore } from "../db/postgres/store.ts";
import { eventRow } from "../db/rows.ts";
import { hashApiKey } from "../domain/keys.ts";
import { newEvent, readEvent } from "../domain/records.ts";
import { timestampFromMillis } from "../domain/timestamps.ts";
import { eventBatch, ingest, type LoadResult, openSessions, type Server, startAgentmon } from "./load.ts";

const { values } = parseArgs({
  options: { quick: { type: "boolean", default: false }, nodes: { type: "string", default: "2" } },
});
const NODES = Number(values.nodes);
if (!Number.isInteger(NODES) || NODES < 2) throw new Error(`--nodes must be a whole number ≥ 2, not "${values.nodes}"`);
const SECONDS = values.quick ? 4 : 15;
const WARMUP = values.quick ? 1 : 3;
const ADMIN = process.env.AGENTMON_BENCH_DATABASE_URL || "postgres://postgres@127.0.0.1:5432/test";
const log = (line: string) => process.stdout.write(`${line}\n`);
const fmt = (n: number) => Math.round(n).toLocaleString("en-US");

const created: string[] = [];
/**
 * A pool or client whose idle connection the server ends (a backend killed, the server restarted)
 * emits 'error'; without a listener that is an uncaught exception and the bench dies. Logged: the
 * query that needed the connection fails on its own and says so.
 */
function logErrors<T extends pg.Pool | pg.Client>(what: string, emitter: T): T {
  (emitter as { on(event: "error", listener: (error: Error) => void): unknown }).on("error", (error) =>
    log(`  (${what}: ${error.message})`),
  );
  return emitter;
}

async function admin(sql: string) {
  const client = logErrors("admin connection", new pg.Client({ connectionString: ADMIN }));
  await client.connect();
  try {
    await client.query(sql);
  } finally {
    await client.end();
  }
}
/** A new database; dropped at the end of the run. */
async function database(): Promise<string> {
  const name = `agentmon_bench_${randomBytes(5).toString("hex")}`;
  await admin(`CREATE DATABASE ${name}`);
  created.push(name);
  const url = new URL(ADMIN);
  url.pathname = `/${name}`;
  return url.toString();
}

/** One project (its own API key) with `sessions` sessions in the store; their ids and pks. */
async function project(store: Awaited<ReturnType<typeof openPostgresStore>>, sessions: number) {
  const key = await store.createApiKey(hashApiKey(randomUUID()), "benchkey", "default", new Date().toISOString());
  const received = timestampFromMillis(Date.now());
  const made: { id: string; pk: number }[] = [];
  for (let i = 0; i < sessions; i++) {
    const id = randomUUID();
    await store.createSession(key.project_id, {
      id,
      init_timestamp: received.iso,
      init_us: received.us,
      end_timestamp: null,
      end_state: null,
      end_state_reason: null,
      tags: ["bench"],
      host_env: null,
      extra: {},
    });
    const pk = (await store.pool.query<{ pk: number }>("SELECT pk FROM sessions WHERE id = $1", [id])).rows[0]?.pk;
    made.push({ id, pk: pk as number });
  }
  return { key, sessions: made, received };
}

/** A migrated database with `projects` projects of `sessions` sessions each. */
async function seeded(projects: number, sessions: number) {
  const url = await database();
  const store = await openPostgresStore({ url });
  try {
    const made = [];
    for (let i = 0; i < projects; i++) made.push(await project(store, sessions));
    return { url, projects: made };
  } finally {
    await store.close();
  }
}

/** B1's event rows, as create_events would store them, with fresh ids per use. */
function rowsOf(n: number, received: ReturnType<typeof timestampFromMillis>, round: number) {
  return eventBatch(n).events.map((raw, index) => {
    const input = readEvent(raw, `events[${index}]`, [], "id");
    return eventRow(newEvent(input as Parameters<typeof newEvent>[0], `${round}-${index}-${randomUUID()}`, received));
  });
}

/** Deadlocks and serialization failures: the baseline's transaction is run again, and counted. */
const retryable = (error: unknown) => ["40P01", "40001"].includes((error as { code?: string }).code ?? "");

/**
 * Rows/s of 1000-row unnest inserts, one per transaction, on `connections` connections, each on a
 * project and session of its own (see the header), rows in id order as the group commit sorts them.
 */
async function rawLimit(connections: number): Promise<{ rate: number; retries: number }> {
  const { url, projects } = await seeded(connections, 1);
  const pool = logErrors("raw-limit pool", new pg.Pool({ connectionString: url, max: connections }));
  const received = projects[0]?.received as ReturnType<typeof timestampFromMillis>;
  const batches = Array.from({ length: 20 }, (_, round) => rowsOf(1000, received, round));
  let inserted = 0;
  let retries = 0;
  let round = 0;
  const until = Date.now() + SECONDS * 1000;
  const started = performance.now();
  await Promise.all(
    projects.map(async ({ sessions }) => {
      const pk = sessions[0]?.pk as number;
      const client = await pool.connect();
      try {
        while (Date.now() < until) {
          const mine = round++;
          const base = batches[mine % batches.length] as unknown[][];
          const rows = (mine < batches.length ? base : base.map((row) => [`${mine}-${row[0]}`, ...row.slice(1)]))
            .map((row) => ({ pk, row }))
            .sort((a, b) => (String(a.row[0]) < String(b.row[0]) ? -1 : 1));
          for (;;) {
            try {
              await client.query("BEGIN");
              await client.query(INSERT_EVENTS, eventColumns(rows as Parameters<typeof eventColumns>[0]));
              await client.query("COMMIT");
              break;
            } catch (error) {
              await client.query("ROLLBACK");
              if (!retryable(error)) throw error;
              retries++;
            }
          }
          inserted += rows.length;
        }
      } finally {
        client.release();
      }
    }),
  );
  const rate = inserted / ((performance.now() - started) / 1000);
  await pool.end();
  return { rate, retries };
}

/**
 * Calls/s of one transaction per one-event call: key check, session lookup, insert, commit; 50
 * callers, each on a session of its own (B2's 50 connections each have theirs), on 10 connections.
 */
async function perCallLimit(): Promise<number> {
  const { url, projects } = await seeded(1, 50);
  const { key, sessions, received } = projects[0] as (typeof projects)[number];
  const pool = logErrors("per-call pool", new pg.Pool({ connectionString: url, max: 10 }));
  const template = rowsOf(1, received, 0)[0] as unknown[];
  let calls = 0;
  const until = Date.now() + SECONDS * 1000;
  const started = performance.now();
  await Promise.all(
    sessions.map(async ({ id: sessionId }) => {
      while (Date.now() < until) {
        const client = await pool.connect();
        try {
          await client.query("BEGIN");
          await client.query("SELECT id, project_id, revoked_at FROM api_keys WHERE id = ANY($1::text[])", [[key.id]]);
          const found = await client.query<{ pk: number }>("SELECT pk FROM sessions WHERE id = ANY($1::text[])", [
            [sessionId],
          ]);
          const row = [randomUUID(), ...template.slice(1)];
          await client.query(INSERT_EVENTS, eventColumns([{ pk: found.rows[0]?.pk as number, row } as never]));
          await client.query("COMMIT");
          calls++;
        } catch (error) {
          await client.query("ROLLBACK");
          throw error;
        } finally {
          client.release();
        }
      }
    }),
  );
  const rate = calls / ((performance.now() - started) / 1000);
  await pool.end();
  return rate;
}

/** Runs create_events load against the servers at once, connections split between them. */
async function load(servers: Server[], perCall: number): Promise<LoadResult[]> {
  const sessions = await Promise.all(servers.map((server) => openSessions(server, 50)));
  return Promise.all(
    servers.map((server, i) =>
      ingest(server, sessions[i] as string[], {
        connections: Math.round(50 / servers.length),
        seconds: SECONDS,
        perCall,
        warmup: WARMUP,
      }),
    ),
  );
}

const rate = (results: LoadResult[], perCall: number) => results.reduce((sum, r) => sum + r.rps, 0) * perCall;
const failures = (results: LoadResult[]) => results.reduce((sum, r) => sum + r.non2xx + r.errors, 0);

async function scenario(nodes: number, perCall: number, engine: "postgres" | "sqlite") {
  const key = randomUUID();
  const env: Record<string, string> = { AGENTMON_API_KEY: key };
  if (engine === "postgres") env.AGENTMON_DATABASE_URL = await database();
  const servers: Server[] = [];
  try {
    // One after the other: the first migrates, the others find it done.
    for (let i = 0; i < nodes; i++) servers.push(await startAgentmon(env));
    const results = await load(servers, perCall);
    return { rate: rate(results, perCall), failures: failures(results) };
  } finally {
    await Promise.all(servers.map((server) => server.stop()));
  }
}

const ratio = (a: number, b: number) => `${(a / b).toFixed(2)}×`;
const lines: string[] = [];
function result(
  id: string,
  what: string,
  value: number,
  unit: string,
  baseline: string,
  versus: number,
  target: string,
) {
  const line = `| ${id} | ${what} | ${fmt(value)} ${unit} | ${baseline}: ${fmt(versus)} | ${ratio(value, versus)} | ${target} |`;
  lines.push(line);
  log(`  ${id} ${what}: ${fmt(value)} ${unit} = ${ratio(value, versus)} ${baseline} (target ${target})`);
}

try {
  log(
    `bench:postgres (${values.quick ? "quick" : "full"}: ${SECONDS} s a run, ${WARMUP} s warm-up, ${NODES} nodes), server ${new URL(ADMIN).host}`,
  );
  const raw1 = await rawLimit(1);
  log(`  raw limit, 1 connection: ${fmt(raw1.rate)} rows/s${raw1.retries ? ` (${raw1.retries} retried)` : ""}`);
  const raw2 = await rawLimit(2);
  log(`  raw limit, 2 connections: ${fmt(raw2.rate)} rows/s${raw2.retries ? ` (${raw2.retries} retried)` : ""}`);
  const raw = Math.max(raw1.rate, raw2.rate);
  const b1 = await scenario(1, 100, "postgres");
  result("PG-B1", "one node", b1.rate, "events/s", "raw unnest limit", raw, "≥ 0.8×");
  if (b1.failures) log(`    ${b1.failures} failed requests`);
  const b1n = await scenario(NODES, 100, "postgres");
  result("PG-B1", `${NODES} nodes`, b1n.rate, "events/s", "raw unnest limit", raw, "≥ 0.8×");
  if (b1n.failures) log(`    ${b1n.failures} failed requests`);
  const perCall = await perCallLimit();
  log(`  one transaction per call: ${fmt(perCall)} calls/s`);
  const b2 = await scenario(1, 1, "postgres");
  result("PG-B2", "one node", b2.rate, "calls/s", "one transaction per call", perCall, "≥ 4×");
  if (b2.failures) log(`    ${b2.failures} failed requests`);
  const b2n = await scenario(NODES, 1, "postgres");
  result("PG-B2", `${NODES} nodes`, b2n.rate, "calls/s", "one transaction per call", perCall, "≥ 4×");
  if (b2n.failures) log(`    ${b2n.failures} failed requests`);
  const s1 = await scenario(1, 100, "sqlite");
  log(`  SQLite B1: ${fmt(s1.rate)} events/s (PostgreSQL one node: ${ratio(b1.rate, s1.rate)} of it)`);
  const s2 = await scenario(1, 1, "sqlite");
  log(`  SQLite B2: ${fmt(s2.rate)} calls/s (PostgreSQL one node: ${ratio(b2.rate, s2.rate)} of it)`);
  log("\n| id | nodes | result | baseline | ratio | target |");
  log("|---|---|---|---|---|---|");
  for (const line of lines) log(line);
} finally {
  for (const name of created) await admin(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
}
