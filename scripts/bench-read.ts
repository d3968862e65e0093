/**
 * The read API's benchmark (issue 5): `npx tsx scripts/bench-read.ts [--quick]`, or
 * `npm run bench:read -- --quick`.
 *
 * Seeds a temporary database file through agentmon's own schema (migrations and all), directly
 * with SQL for speed: 1 M sessions of two events each (--quick: 100 k), plus one session of
 * 10 000 events, the newest, so it is on the first list page too. Then starts agentmon itself
 * (bin/agentmon.js serve) on a real port and measures with autocannon, each figure beside a
 * baseline measured on the same server in the same run:
 *
 *   baseline  GET /healthz
 *   (a)       GET /v2/sessions?limit=50, one list page with its stats
 *   (b)       the session page's data: GET /v2/sessions/{id} and the 10 pages of
 *             GET /v2/sessions/{id}/events?limit=1000 the UI reads for 10 000 events, as a
 *             sequence each connection repeats (latency is per request; page loads/s = req/s / 11)
 *
 * Prints a table and writes bench-read.json in the current directory. No thresholds: the
 * figures are for comparing runs on the same machine.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { mkdtempSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import autocannon from "autocannon";
import { openDb } from "../db/sqlite/open.ts";
import { sqliteStore } from "../db/sqlite/store.ts";
import { hashApiKey, keyPrefix } from "../domain/keys.ts";

const quick = process.argv.includes("--quick");
const SESSIONS = quick ? 100_000 : 1_000_000;
const BIG_EVENTS = 10_000;
const EVENT_PAGE = 1000;
const SECONDS = quick ? 5 : 10;
const CONNECTIONS = 10;
const BATCH = 10_000;
const KEY = "0b7c6f4e-5a4e-4b0a-9c1e-2f3d4a5b6c7d";
const ROOT = fileURLToPath(new URL("..", import.meta.url));
const T0_US = Date.UTC(2026, 0, 1) * 1000;

const iso = (us: number) => new Date(Math.floor(us / 1000)).toISOString();

async function seed(path: string) {
  const db = openDb(path);
  await sqliteStore(db).createApiKey(hashApiKey(KEY), keyPrefix(KEY), "default", new Date().toISOString());
  const projectId = (db.prepare("SELECT id FROM projects WHERE name = 'default'").get() as { id: string }).id;
  const session = db.prepare(
    `INSERT INTO sessions (id, project_id, init_timestamp, init_us, end_timestamp, end_state, end_state_reason, tags, host_env, extra)
     VALUES (?, ?, ?, ?, ?, ?, ?, ?, NULL, '{}')`,
  );
  const event = db.prepare(
    `INSERT INTO events (session_pk, id, type, init_timestamp, init_us, end_timestamp, end_us, agent_id, model,
       prompt_tokens, completion_tokens, cost, cost_source, body, aliases, extra)
     VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, NULL, '{}')`,
  );
  const STATES = ["Success", "Fail", "Indeterminate", null];
  const TAGS = ['["prod"]', '["prod","nightly"]', '["dev"]', null];
  const PROMPT = JSON.stringify({
    prompt: [
      { role: "system", content: "You are a careful assistant. Answer briefly." },
      { role: "user", content: "What is the capital of France, and why is it famous?" },
    ],
    completion: { role: "assistant", content: "Paris: the Eiffel Tower, the Louvre, and a long history." },
  });

  const addSession = (i: number, id: string, us: number, ended: boolean) => {
    const state = ended ? STATES[i % 4] : null;
    const end = ended ? iso(us + 60_000_000) : null;
    const reason = state === "Fail" ? `step ${i % 10} timed out` : null;
    return Number(session.run(id, projectId, iso(us), us, end, state, reason, TAGS[i % 4]).lastInsertRowid);
  };
  const addEvent = (pk: number, n: number, us: number, kind: string) => {
    const llm = kind === "llm";
    event.run(
      pk,
      `e${n}`,
      kind,
      iso(us),
      us,
      iso(us + 1500_000),
      us + 1500_000,
      "agent-1",
      llm ? "gpt-4o-mini" : null,
      llm ? 120 : null,
      llm ? 30 : null,
      llm ? 0.000036 : null,
      llm ? "table" : "unknown",
      llm ? PROMPT : '{"name":"search","input":{"q":"paris"},"output":"ok"}',
    );
  };

  const batch = db.transaction((from: number, to: number) => {
    for (let i = from; i < to; i += 1) {
      const us = T0_US + i * 1_000_000;
      const pk = addSession(i, `s${String(i).padStart(7, "0")}`, us, true);
      addEvent(pk, 0, us + 1000, "llm");
      addEvent(pk, 1, us + 2000, "tool");
    }
  });
  for (let from = 0; from < SESSIONS; from += BATCH) batch(from, Math.min(SESSIONS, from + BATCH));

  const bigUs = T0_US + SESSIONS * 1_000_000;
  const bigPk = db.transaction(() => addSession(0, "big", bigUs, false))();
  const KINDS = ["llm", "tool", "action", "error"];
  const bigBatch = db.transaction((from: number, to: number) => {
    for (let n = from; n < to; n += 1) addEvent(bigPk, n, bigUs + n * 1000, KINDS[n % 4] as string);
  });
  for (let from = 0; from < BIG_EVENTS; from += BATCH) bigBatch(from, Math.min(BIG_EVENTS, from + BATCH));
  db.pragma("wal_checkpoint(TRUNCATE)");
  db.exec("ANALYZE");
  db.close();
}

function serve(path: string): Promise<{ child: ChildProcess; base: string }> {
  const env = {
    ...process.env,
    AGENTMON_API_KEY: KEY,
    AGENTMON_LOG_LEVEL: "silent",
    AGENTMON_RATE_LIMIT: "0",
  };
  const child = spawn(process.execPath, ["bin/agentmon.js", "serve", "--port", "0", "--db", path], {
    cwd: ROOT,
    env,
    stdio: ["ignore", "pipe", "inherit"],
  });
  return new Promise((resolve, reject) => {
    let out = "";
    child.stdout?.setEncoding("utf8").on("data", (chunk: string) => {
      out += chunk;
      const match = /listening on (http:\/\/\S+)/.exec(out);
      if (match?.[1]) resolve({ child, base: match[1] });
    });
    child.once("exit", (code) => reject(new Error(`agentmon exited with ${code} before listening:\n${out}`)));
  });
}

interface Figure {
  what: string;
  requests_per_s: number;
  mean_ms: number;
  p50_ms: number;
  p99_ms: number;
  non_2xx: number;
  errors: number;
}

async function measure(what: string, base: string, requests: { path: string }[]): Promise<Figure> {
  const result = await autocannon({
    url: base,
    connections: CONNECTIONS,
    duration: SECONDS,
    headers: { "x-agentmon-api-key": KEY },
    requests: requests.map((r) => ({ method: "GET" as const, path: r.path })),
  });
  const figure = {
    what,
    requests_per_s: result.requests.average,
    mean_ms: result.latency.average,
    p50_ms: result.latency.p50,
    p99_ms: result.latency.p99,
    non_2xx: result.non2xx,
    errors: result.errors + result.timeouts,
  };
  if (figure.non_2xx > 0 || figure.errors > 0) {
    throw new Error(`${what}: ${figure.non_2xx} answers were not 2xx and ${figure.errors} failed; the figure is void`);
  }
  return figure;
}

/**
 * The paths of the big session's event pages, as the UI follows their cursors; and a check that
 * the list page is what was seeded.
 */
async function followEventPages(base: string): Promise<string[]> {
  const eventPages: string[] = [];
  let cursor: string | null = null;
  do {
    const query: string = cursor === null ? "" : `&cursor=${cursor}`;
    const path: string = `/v2/sessions/big/events?limit=${EVENT_PAGE}${query}`;
    const res = await fetch(`${base}${path}`, { headers: { "x-agentmon-api-key": KEY } });
    const body = (await res.json()) as { events: unknown[]; next_cursor: string | null };
    if (res.status !== 200) throw new Error(`${path} answered ${res.status}`);
    eventPages.push(path);
    cursor = body.next_cursor;
  } while (cursor !== null);
  const list = await fetch(`${base}/v2/sessions?limit=50`, { headers: { "x-agentmon-api-key": KEY } });
  const first = ((await list.json()) as { sessions: { session: { id: string } }[] }).sessions;
  if (first.length !== 50 || first[0]?.session.id !== "big") throw new Error("the list page is not what was seeded");
  return eventPages;
}

async function main() {
  const dir = mkdtempSync(join(tmpdir(), "agentmon-bench-"));
  const path = join(dir, "bench.db");
  let child: ChildProcess | undefined;
  try {
    process.stdout.write(`seeding ${SESSIONS} sessions and one of ${BIG_EVENTS} events into ${path} ... `);
    const seedStart = performance.now();
    await seed(path);
    const seedSeconds = (performance.now() - seedStart) / 1000;
    const dbBytes = statSync(path).size;
    process.stdout.write(`${seedSeconds.toFixed(1)} s, ${(dbBytes / 1e6).toFixed(0)} MB\n`);

    const server = await serve(path);
    child = server.child;
    const { base } = server;

    const eventPages = await followEventPages(base);
    const sessionPage = [{ path: "/v2/sessions/big" }, ...eventPages.map((p) => ({ path: p }))];
    process.stdout.write(`measuring, ${SECONDS} s each, ${CONNECTIONS} connections ...\n`);
    const baseline = await measure("baseline: GET /healthz", base, [{ path: "/healthz" }]);
    const listPage = await measure("(a) GET /v2/sessions?limit=50", base, [{ path: "/v2/sessions?limit=50" }]);
    const page = await measure(`(b) session page: ${sessionPage.length} requests`, base, sessionPage);

    const rows = [baseline, listPage, page].map((f) => ({
      ...f,
      rps_vs_baseline: f.requests_per_s / baseline.requests_per_s,
      // autocannon's percentiles are whole milliseconds, so the latency ratio is of the means.
      mean_vs_baseline: f.mean_ms / baseline.mean_ms,
    }));
    const pad = (s: string, n: number) => s.padEnd(n);
    const num = (n: number, d = 1) => n.toFixed(d).padStart(9);
    console.log(
      `\nagentmon read API, ${SESSIONS.toLocaleString("en")} sessions, one of ${BIG_EVENTS.toLocaleString("en")} events`,
    );
    console.log(`${pad("what", 36)}    req/s  mean ms   p50 ms   p99 ms req/s÷base mean÷base`);
    for (const r of rows) {
      console.log(
        `${pad(r.what, 36)}${num(r.requests_per_s)}${num(r.mean_ms, 2)}${num(r.p50_ms, 0)}${num(r.p99_ms, 0)}${num(r.rps_vs_baseline, 4)}${num(r.mean_vs_baseline, 1)}`,
      );
    }
    const pageLoads = page.requests_per_s / sessionPage.length;
    console.log(`(b) is ${pageLoads.toFixed(1)} whole session pages/s (${sessionPage.length} requests each)`);

    const report = {
      date: new Date().toISOString(),
      quick,
      sessions: SESSIONS,
      events_in_big_session: BIG_EVENTS,
      seed_seconds: seedSeconds,
      db_bytes: dbBytes,
      seconds_per_figure: SECONDS,
      connections: CONNECTIONS,
      baseline: rows[0],
      list_page: rows[1],
      session_page: { ...rows[2], requests_per_page: sessionPage.length, pages_per_s: pageLoads },
    };
    writeFileSync("bench-read.json", `${JSON.stringify(report, null, 2)}\n`);
    console.log("written: bench-read.json");
  } finally {
    if (child && child.exitCode === null) {
      const exited = new Promise((resolve) => child?.once("exit", resolve));
      child.kill("SIGTERM");
      await exited;
    }
    rmSync(dir, { recursive: true, force: true });
  }
}

await main();
