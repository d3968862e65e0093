/**
 * `npm run bench [-- --quick]`: how fast agentmon ingests on this machine, as ratios against
 * baselines measured in the same run, so that a noisy or slow machine moves both sides together.
 * `npm run bench -- --against REV [--scenarios B1,B2,B4,B7] [--rounds N]` compares issue 24's
 * scenarios (B1, B2, B4 on a fresh file, B7) with another revision instead, A B B A in one run
 * (scripts/bench/against.ts).
 *
 * Baselines, each in its own process:
 * - HTTP floor: a bare Fastify server (scripts/bench/floor.mjs) whose POST route parses the JSON
 *   body and answers {"status":"success"}, given the same bodies and connections;
 * - storage limit: the same event rows inserted straight through agentmon's schema and Store, in
 *   1000-row transactions, on the same disk (scripts/bench/storage.ts);
 * - span storage limit (B7's): the rows of B7's spans, decoded and mapped before the clock starts,
 *   written the same way through the Store's ingestTraces, about 1000 spans per transaction
 *   (scripts/bench/storage-spans.ts). Not B1's storage limit: a span's event row carries the whole
 *   span under extra.otel (G5: every attribute, its scope and its resource), about 4 times an event
 *   row of B1, so against B1's baseline the ratio would measure the row size rather than what the
 *   server adds (HTTP, protobuf decoding, mapping, the trip to the storage thread). B1's storage
 *   limit is shown next to it for reference.
 *
 * Scenarios (targets from issue 3; printed, never asserted; B for benchmark: the contract's S1–S7
 * are its session rules):
 *   B1 batch ingest: 100 events per create_events call, 50 connections  ≥ 0.7 × storage limit
 *   B2 small calls: 1 event per call, 50 connections                      ≥ 0.33 × HTTP floor
 *   B3 session lifecycle: create_session, 10 × create_events(5), update_session   sessions/s
 *   B4 cold start: spawn to first 200 from create_session, median of 10   ≤ 1.3 × bare Fastify
 *      (a fresh database file; :memory: shown too; scripts/bench/cold.ts, `npm run bench:cold`)
 *   B5 memory: RSS after 1 M events                             ≤ 150 MB, ≤ 10 % growth over the last 500 k
 *   B6 growth: B1 with 5 M events already stored                          ≥ 0.8 × B1 on an empty database
 *   B7 OTLP: protobuf /v1/traces, 100 spans per request, 50 connections   ≥ 0.6 × span storage limit
 *   B7g: B7's bodies over OTLP/gRPC (TraceService/Export), 50 connections ≥ 0.6 × span storage limit
 *        (shown against B7 over HTTP too)
 *
 * Each baseline is measured right before its scenario (B6's, B1 on an empty database, again
 * right before B6): this shared machine's speed drifts by tens of percent within minutes.
 *
 * agentmon runs as a user runs it (`npm start`'s command, a file database in a fresh
 * temporary folder). The load generator is autocannon, in this process. Results go to stdout as a
 * table and to bench.json.
 */
import { execFileSync, spawn } from "node:child_process";
import { randomUUID } from "node:crypto";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { cpus, tmpdir, totalmem } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { compareAgainst, parseScenarios } from "./bench/against.ts";
import { coldStarts } from "./bench/cold.ts";
import { decodeCost, otlpBodies, otlpGrpcIngest, otlpIngest } from "./bench/otlp.ts";
import { lifecycle, memory } from "./bench/scenarios.ts";
import { ingest, openSessions, ROOT, type Server, startAgentmon } from "./load.ts";

const { values } = parseArgs({
  options: {
    quick: { type: "boolean", default: false },
    against: { type: "string" },
    rounds: { type: "string", default: "1" },
    scenarios: { type: "string" },
  },
});
const quick = values.quick;
const SECONDS = quick ? 4 : 20;
/** Seconds of the same load before each measured run of B1, B2, B6 and the HTTP floor. */
const WARMUP = quick ? 1 : 3;
const CONNECTIONS = 50;
const B5_EVENTS = quick ? 200_000 : 1_000_000;
const B6_STORED = quick ? 500_000 : 5_000_000;
const SPAWNS = quick ? 5 : 10;
const B7_STORAGE_SPANS = quick ? 50_000 : 150_000;

interface Row {
  id: string;
  scenario: string;
  value: number;
  unit: string;
  baseline?: { name: string; value: number };
  ratio?: number;
  target: string;
  met?: boolean;
  extra?: Record<string, number>;
}
const rows: Row[] = [];
const scenarioOptions = { seconds: SECONDS, connections: CONNECTIONS, log: (line: string) => log(line) };
const log = (line: string) => process.stdout.write(`${line}\n`);

function record(row: Row) {
  rows.push(row);
  const ratio = row.ratio === undefined ? "" : ` (${row.ratio.toFixed(2)}× ${row.baseline?.name})`;
  const verdict = row.met === undefined ? "" : row.met ? "  met" : "  NOT MET";
  log(`  ${row.id}: ${fmt(row.value)} ${row.unit}${ratio}${verdict}`);
}

const fmt = (n: number) => (n >= 100 ? Math.round(n).toLocaleString("en-US") : n.toFixed(1));

/** Starts a process and resolves with its base URL once it prints `listening on <url>`. */
function startProcess(args: string[], env: NodeJS.ProcessEnv = process.env) {
  const child = spawn(process.execPath, args, { cwd: ROOT, env, stdio: ["ignore", "pipe", "inherit"] });
  const kill = () => child.kill("SIGKILL");
  process.once("exit", kill);
  child.once("exit", () => process.off("exit", kill));
  const url = new Promise<string>((resolve, reject) => {
    let out = "";
    child.stdout?.setEncoding("utf8").on("data", (chunk: string) => {
      out += chunk;
      const match = /listening on (\S+)/.exec(out);
      if (match?.[1]) resolve(match[1]);
    });
    child.once("exit", (code) => reject(new Error(`${args.join(" ")} exited with ${code}:\n${out}`)));
  });
  const stop = async () => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise((resolve) => child.once("exit", resolve));
    child.kill("SIGTERM");
    await exited;
  };
  return { child, url, stop };
}

/** The storage limit: rows/s inserted by scripts/bench/storage.ts (or `script`) into `path`. */
function storageLimit(path: string, events: number, key = randomUUID(), script = "scripts/bench/storage.ts") {
  const out = execFileSync(process.execPath, ["--import", "tsx", script, path, String(events), "1000", key], {
    cwd: ROOT,
    encoding: "utf8",
    stdio: ["ignore", "pipe", "inherit"],
  });
  return JSON.parse(out.trim().split("\n").pop() ?? "{}") as { rows_per_s: number; seconds: number };
}

/** B1 and B6: 100-event batches, unique ids, 50 connections; answers events/s and p99. */
async function batchIngest(server: Server) {
  const jwts = await openSessions(server, CONNECTIONS);
  const run = await ingest(server, jwts, { connections: CONNECTIONS, seconds: SECONDS, perCall: 100, warmup: WARMUP });
  return { eventsPerS: run.rps * 100, p99: run.p99, failed: run.non2xx + run.errors };
}

if (values.against !== undefined) {
  log(
    `agentmon bench --against ${values.against}${quick ? " --quick" : ""}: ${cpus().length} × ${cpus()[0]?.model ?? "?"}\n`,
  );
  const compared = await compareAgainst(
    values.against,
    {
      seconds: SECONDS,
      warmup: WARMUP,
      connections: CONNECTIONS,
      rounds: Math.max(1, Number(values.rounds) || 1),
      spawns: SPAWNS,
      scenarios: parseScenarios(values.scenarios),
    },
    log,
  );
  writeFileSync(join(ROOT, "bench.json"), JSON.stringify({ quick, ...compared }, null, 2));
  process.exit(0);
}

const dir = mkdtempSync(join(tmpdir(), "agentmon-bench-"));
const startedAt = Date.now();
try {
  log(
    `agentmon bench${quick ? " --quick" : ""}: ${cpus().length} × ${cpus()[0]?.model ?? "?"}, node ${process.version}\n`,
  );

  // ---------------------------------------------------------------- B1, B2, B3 on a fresh database
  // Each baseline is measured right before the scenario it is the baseline of: this shared
  // machine's speed drifts by tens of percent over minutes, and a ratio of two figures taken
  // minutes apart measures the drift as much as agentmon.
  log("B1: batch ingest, fresh database");
  const storage = storageLimit(join(dir, "storage.db"), quick ? 100_000 : 300_000);
  log(`  storage limit: ${fmt(storage.rows_per_s)} rows/s (1000-row transactions, no HTTP)`);
  let server = await startAgentmon();
  const b1 = await batchIngest(server);
  record({
    id: "B1",
    scenario: "batch ingest, 100 events/call, 50 connections",
    value: b1.eventsPerS,
    unit: "events/s",
    baseline: { name: "storage limit", value: storage.rows_per_s },
    ratio: b1.eventsPerS / storage.rows_per_s,
    target: "≥ 0.7 × storage limit",
    met: b1.eventsPerS >= 0.7 * storage.rows_per_s,
    extra: { p99_ms: b1.p99, failed: b1.failed },
  });

  log("\nB2: small calls");
  const floor = startProcess(["scripts/bench/floor.mjs"]);
  // The same load generator, bodies and connections as B2, so both sides pay the same client.
  const floorServer = { url: await floor.url } as Server;
  const floorSmall = await ingest(floorServer, ["none"], {
    connections: CONNECTIONS,
    seconds: SECONDS,
    perCall: 1,
    warmup: WARMUP,
  });
  await floor.stop();
  log(`  HTTP floor: ${fmt(floorSmall.rps)} req/s with 1-event bodies, p99 ${floorSmall.p99} ms`);
  const jwts = await openSessions(server, CONNECTIONS);
  const b2 = await ingest(server, jwts, { connections: CONNECTIONS, seconds: SECONDS, perCall: 1, warmup: WARMUP });
  record({
    id: "B2",
    scenario: "small calls, 1 event/call, 50 connections",
    value: b2.rps,
    unit: "req/s",
    baseline: { name: "HTTP floor", value: floorSmall.rps },
    ratio: b2.rps / floorSmall.rps,
    target: "≥ 0.33 × HTTP floor",
    met: b2.rps >= 0.33 * floorSmall.rps,
    extra: { p99_ms: b2.p99, failed: b2.non2xx + b2.errors },
  });

  log("\nB3: session lifecycle");
  const b3 = await lifecycle(server, scenarioOptions);
  record({
    id: "B3",
    scenario: "session lifecycle: create, 10 × create_events(5), update",
    value: b3.sessionsPerS,
    unit: "sessions/s",
    target: "reported",
    extra: { p99_ms: b3.p99, failed: b3.failed },
  });
  await server.stop();

  // ---------------------------------------------------------------- B4
  log("\ncold start");
  const b4 = await coldStarts(SPAWNS);
  record({
    id: "B4",
    scenario: `cold start, spawn to first 200 from create_session on a fresh file, median of ${SPAWNS}`,
    value: b4.file,
    unit: "ms",
    baseline: { name: "bare Fastify", value: b4.floor },
    ratio: b4.file / b4.floor,
    target: "≤ 1.3 × bare Fastify",
    met: b4.file <= 1.3 * b4.floor,
    extra: {
      memory_ms: b4.memory,
      memory_ratio: b4.memory / b4.floor,
      cpu_ms: b4.cpu.file,
      cpu_memory_ms: b4.cpu.memory,
      cpu_floor_ms: b4.cpu.floor,
    },
  });
  log(`  B4 on :memory:: ${fmt(b4.memory)} ms (${(b4.memory / b4.floor).toFixed(2)}× bare Fastify)`);

  // ---------------------------------------------------------------- B5
  log("\nmemory");
  server = await startAgentmon();
  const b5 = await memory(server, B5_EVENTS, scenarioOptions);
  await server.stop();
  record({
    id: "B5",
    scenario: `RSS after ${fmt(B5_EVENTS)} events`,
    value: b5.rssEnd / 1024 / 1024,
    unit: "MB",
    target: "≤ 150 MB and ≤ 10 % growth over the last half",
    met: b5.rssEnd <= 150 * 1024 * 1024 && b5.rssEnd <= 1.1 * b5.rssHalf,
    extra: { rss_half_mb: Math.round(b5.rssHalf / 1024 / 1024), growth_last_half: b5.rssEnd / b5.rssHalf },
  });

  // ---------------------------------------------------------------- B6
  log(`\ngrowth: seeding ${fmt(B6_STORED)} events`);
  const seeded = join(dir, "seeded.db");
  const seedKey = randomUUID();
  storageLimit(seeded, B6_STORED, seedKey);
  // Its baseline, B1 on an empty database, measured again right before it (see B1 above).
  server = await startAgentmon();
  const b1again = await batchIngest(server);
  await server.stop();
  log(`  B1 again, fresh database: ${fmt(b1again.eventsPerS)} events/s`);
  server = await startAgentmon({ AGENTMON_DB: seeded, AGENTMON_API_KEY: seedKey });
  const b6 = await batchIngest(server);
  await server.stop();
  record({
    id: "B6",
    scenario: `B1 with ${fmt(B6_STORED)} events already stored`,
    value: b6.eventsPerS,
    unit: "events/s",
    baseline: { name: "B1 measured just before", value: b1again.eventsPerS },
    ratio: b6.eventsPerS / b1again.eventsPerS,
    target: "≥ 0.8 × B1",
    met: b6.eventsPerS >= 0.8 * b1again.eventsPerS,
    extra: { p99_ms: b6.p99, failed: b6.failed },
  });

  // ---------------------------------------------------------------- B7
  log("\nB7: OTLP protobuf, 100 spans per request, fresh database");
  const cost = decodeCost(otlpBodies());
  log(
    `  in-process, per span: decode ${cost.decode_us.toFixed(1)} µs + NUL check ${cost.nul_us.toFixed(2)} µs + ` +
      `accept ${cost.accept_us.toFixed(1)} µs + map ` +
      `${cost.map_us.toFixed(1)} µs = ${cost.total_us.toFixed(1)} µs (pricing ${cost.price_us.toFixed(1)} µs more)`,
  );
  const spanStorage = storageLimit(
    join(dir, "spans.db"),
    B7_STORAGE_SPANS,
    randomUUID(),
    "scripts/bench/storage-spans.ts",
  );
  log(
    `  span storage limit: ${fmt(spanStorage.rows_per_s)} spans/s (about 1000-span transactions, no HTTP, no decoding)`,
  );
  server = await startAgentmon();
  const b7 = await otlpIngest(server, { connections: CONNECTIONS, seconds: SECONDS, warmup: WARMUP });
  await server.stop();
  record({
    id: "B7",
    scenario: "OTLP protobuf, 100 spans/request (4 traces), 50 connections",
    value: b7.spansPerS,
    unit: "spans/s",
    baseline: { name: "span storage limit", value: spanStorage.rows_per_s },
    ratio: b7.spansPerS / spanStorage.rows_per_s,
    target: "≥ 0.6 × span storage limit",
    met: b7.spansPerS >= 0.6 * spanStorage.rows_per_s,
    extra: {
      p99_ms: b7.p99,
      failed: b7.failed,
      decode_us_per_span: Number(cost.total_us.toFixed(2)),
      ratio_to_event_storage_limit: Number((b7.spansPerS / storage.rows_per_s).toFixed(3)),
    },
  });

  // B7 again over OTLP/gRPC, right after B7, on a fresh database of its own: the same bodies to
  // the TraceService's Export (docs/decisions/028-otlp-grpc.md).
  log("\nB7 over gRPC: the same bodies to AGENTMON_OTLP_GRPC_PORT, fresh database");
  server = await startAgentmon({ AGENTMON_OTLP_GRPC_PORT: "0" });
  const b7grpc = await otlpGrpcIngest(server, { connections: CONNECTIONS, seconds: SECONDS, warmup: WARMUP });
  await server.stop();
  record({
    id: "B7g",
    scenario: "B7 over OTLP/gRPC (TraceService/Export), 50 connections",
    value: b7grpc.spansPerS,
    unit: "spans/s",
    baseline: { name: "B7 over OTLP/HTTP just before", value: b7.spansPerS },
    ratio: b7grpc.spansPerS / b7.spansPerS,
    target: "≥ 0.6 × span storage limit",
    met: b7grpc.spansPerS >= 0.6 * spanStorage.rows_per_s,
    extra: {
      p99_ms: b7grpc.p99,
      failed: b7grpc.failed,
      ratio_to_span_storage_limit: Number((b7grpc.spansPerS / spanStorage.rows_per_s).toFixed(3)),
    },
  });

  table();
  const report = {
    quick,
    machine: {
      cpus: cpus().length,
      cpu: cpus()[0]?.model,
      memory_gb: Math.round(totalmem() / 2 ** 30),
      node: process.version,
    },
    baselines: {
      storage_rows_per_s: storage.rows_per_s,
      http_floor_rps: floorSmall.rps,
      span_storage_rows_per_s: spanStorage.rows_per_s,
    },
    scenarios: rows,
    seconds: Math.round((Date.now() - startedAt) / 1000),
  };
  writeFileSync("bench.json", `${JSON.stringify(report, null, 2)}\n`);
  log(`\nwritten to bench.json (${report.seconds} s)`);
} finally {
  rmSync(dir, { recursive: true, force: true });
}

function table() {
  log("\n| id | scenario | result | baseline | ratio | target | met |");
  log("|---|---|---|---|---|---|---|");
  for (const row of rows) {
    const extra = row.extra?.p99_ms === undefined ? "" : `, p99 ${row.extra.p99_ms} ms`;
    const baseline = row.baseline ? `${row.baseline.name}: ${fmt(row.baseline.value)}` : "";
    const ratio = row.ratio === undefined ? "" : `${row.ratio.toFixed(2)}×`;
    const met = row.met === undefined ? "n/a" : row.met ? "yes" : "**no**";
    log(
      `| ${row.id} | ${row.scenario} | ${fmt(row.value)} ${row.unit}${extra} | ${baseline} | ${ratio} | ${row.target} | ${met} |`,
    );
  }
}
