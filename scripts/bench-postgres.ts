/**
 * `npm run bench:postgres [-- --quick]`: agentmon's writes on PostgreSQL (issue 14), as ratios
 * against baselines measured in the same run, on the same server:
 *
 *   raw limit   event rows inserted straight into agentmon's schema, one 1000-row
 *               `INSERT ... SELECT FROM unnest(...)` per transaction, on one connection and on two
 *               (the rows are B1's, built before the clock starts);
 *   per call    one transaction per create_events call of one event (key check, session lookup,
 *               one-row insert, commit), 50 callers on 10 connections: what a store without group
 *               commit could do;
 *   B1          100-event create_events calls, 50 connections, one agentmon node, then two nodes
 *               on one database (25 connections each)   target ≥ 0.6 × the raw limit (two connections)
 *   B2          1-event calls, 50 connections, one node     target ≥ 2.5 × per call
 *
 * B1 and B2 on SQLite (a file, `npm start`'s store) are measured in the same run, for the record.
 * The server is AGENTMON_BENCH_DATABASE_URL's, else postgres://postgres@127.0.0.1:5432/test;
 * every scenario gets a new database, dropped at the end. Printed, never asserted.
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

const { values } = parseArgs({ options: { quick: { type: "boolean", default: false } } });
const SECONDS = values.quick ? 4 : 15;
const WARMUP = values.quick ? 1 : 3;
const ADMIN = process.env.AGENTMON_BENCH_DATABASE_URL || "postgres://postgres@127.0.0.1:5432/test";
const log = (line: string) => process.stdout.write(`${line}\n`);
const fmt = (n: number) => Math.round(n).toLocaleString("en-US");

const created: string[] = [];
async function admin(sql: string) {
  const client = new pg.Client({ connectionString: ADMIN });
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

/** A migrated database with one project, key and session; its ids. */
async function seeded() {
  const url = await database();
  const store = await openPostgresStore({ url });
  const key = await store.createApiKey(hashApiKey(randomUUID()), "benchkey", "default", new Date().toISOString());
  const received = timestampFromMillis(Date.now());
  const sessionId = randomUUID();
  await store.createSession(key.project_id, {
    id: sessionId,
    init_timestamp: received.iso,
    init_us: received.us,
    end_timestamp: null,
    end_state: null,
    end_state_reason: null,
    tags: ["bench"],
    host_env: null,
    extra: {},
  });
  const pk = (await store.pool.query<{ pk: number }>("SELECT pk FROM sessions WHERE id = $1", [sessionId])).rows[0]?.pk;
  await store.close();
  return { url, key, sessionId, pk: pk as number, received };
}

/** B1's event rows, as create_events would store them, with fresh ids per use. */
function rowsOf(n: number, received: ReturnType<typeof timestampFromMillis>, round: number) {
  return eventBatch(n).events.map((raw, index) => {
    const input = readEvent(raw, `events[${index}]`, [], "id");
    return eventRow(newEvent(input as Parameters<typeof newEvent>[0], `${round}-${index}-${randomUUID()}`, received));
  });
}

/** Rows/s of 1000-row unnest inserts, one per transaction, on `connections` connections. */
async function rawLimit(connections: number): Promise<number> {
  const { url, pk, received } = await seeded();
  const pool = new pg.Pool({ connectionString: url, max: connections });
  const batches = Array.from({ length: 20 }, (_, round) => rowsOf(1000, received, round).map((row) => ({ pk, row })));
  let inserted = 0;
  let round = 0;
  const until = Date.now() + SECONDS * 1000;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: connections }, async () => {
      const client = await pool.connect();
      try {
        while (Date.now() < until) {
          const mine = round++;
          const base = batches[mine % batches.length] as { pk: number; row: unknown[] }[];
          const rows =
            mine < batches.length ? base : base.map(({ row }) => ({ pk, row: [`${mine}-${row[0]}`, ...row.slice(1)] }));
          await client.query("BEGIN");
          await client.query(INSERT_EVENTS, eventColumns(rows as Parameters<typeof eventColumns>[0]));
          await client.query("COMMIT");
          inserted += rows.length;
        }
      } finally {
        client.release();
      }
    }),
  );
  const rate = inserted / ((performance.now() - started) / 1000);
  await pool.end();
  return rate;
}

/** Calls/s of one transaction per one-event call: key check, session lookup, insert, commit. */
async function perCallLimit(): Promise<number> {
  const { url, key, sessionId, received } = await seeded();
  const pool = new pg.Pool({ connectionString: url, max: 10 });
  const template = rowsOf(1, received, 0)[0] as unknown[];
  let calls = 0;
  const until = Date.now() + SECONDS * 1000;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: 50 }, async () => {
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

try {
  log(
    `bench:postgres (${values.quick ? "quick" : "full"}: ${SECONDS} s a run, ${WARMUP} s warm-up), server ${new URL(ADMIN).host}`,
  );
  const raw1 = await rawLimit(1);
  log(`  raw limit, 1 connection: ${fmt(raw1)} rows/s`);
  const raw2 = await rawLimit(2);
  log(`  raw limit, 2 connections: ${fmt(raw2)} rows/s`);
  const b1 = await scenario(1, 100, "postgres");
  log(
    `  B1 one node: ${fmt(b1.rate)} events/s = ${(b1.rate / raw2).toFixed(2)}× raw (2 conn), ${(b1.rate / raw1).toFixed(2)}× raw (1 conn); ${b1.failures} failed requests  (target ≥ 0.6×)`,
  );
  const b1two = await scenario(2, 100, "postgres");
  log(
    `  B1 two nodes: ${fmt(b1two.rate)} events/s = ${(b1two.rate / raw2).toFixed(2)}× raw (2 conn); ${b1two.failures} failed requests  (target ≥ 0.6×)`,
  );
  const perCall = await perCallLimit();
  log(`  one transaction per call: ${fmt(perCall)} calls/s`);
  const b2 = await scenario(1, 1, "postgres");
  log(
    `  B2 one node: ${fmt(b2.rate)} calls/s = ${(b2.rate / perCall).toFixed(2)}× one transaction per call; ${b2.failures} failed requests  (target ≥ 2.5×)`,
  );
  const s1 = await scenario(1, 100, "sqlite");
  log(`  SQLite B1: ${fmt(s1.rate)} events/s (PostgreSQL one node: ${(b1.rate / s1.rate).toFixed(2)}× of it)`);
  const s2 = await scenario(1, 1, "sqlite");
  log(`  SQLite B2: ${fmt(s2.rate)} calls/s (PostgreSQL one node: ${(b2.rate / s2.rate).toFixed(2)}× of it)`);
} finally {
  for (const name of created) await admin(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
}
