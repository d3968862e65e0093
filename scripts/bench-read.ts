/**
 * The read side's benchmark (issues 5 and 15): `npm run bench:read [-- --sessions N] [--quick]`.
 *
 * Seeds a temporary SQLite file with scripts/dataset.ts (seeded; 1 M sessions and about 10 M
 * events by default, `--quick`: 100 k), through the Store, so the per-session totals and the
 * search index are what a server would have written; adds one session of 10 000 events, the
 * newest. Then starts agentmon itself (bin/agentmon.js serve) on a real port and measures each
 * query with one client, a request at a time, for a few seconds (p50, p99 and mean), beside:
 *   - a baseline measured on the same server in the same run: GET /healthz;
 *   - the same answer computed naively, in this process, on the same file: a plain SQL scan of
 *     the events (no precomputed totals, no search index), timed over a few runs.
 *
 *   (a) GET /v2/sessions?limit=50                    list page
 *   (b) the 10 000-event session's page: the session and its 10 event pages (the UI's reads)
 *   (c) a 30-day daily series                        GET /v2/analytics/timeseries
 *   (d) a breakdown by model over 30 days            GET /v2/analytics/breakdown?by=model
 *   (e) a page sorted by cost                        GET /v2/sessions?sort=cost
 *   (f) a filtered page: one model, with errors      GET /v2/sessions?model=o1&has_errors=true
 *   (g) q, a rare word and a common one              GET /v2/sessions?q=... (full-text search,
 *       docs/decisions/023-search.md)
 *
 * Then, second phase (issue 24), the same queries again **while B1 load runs** against the same
 * server: 100-event create_events calls on 50 connections, from a load generator in a process of
 * its own (scripts/bench/load-child.ts, scripts/load.ts's bodies), started a few seconds before the
 * first query is timed and running past the last. Meanwhile GET /metrics is scraped every second
 * for the projector's lag, `agentmon_projection_backlog` (changes not projected yet) and
 * `agentmon_projection_lag_seconds` (age of the oldest), whose max and p99 are reported ("n/a"
 * when the server does not show them). `--no-load` skips this phase.
 *
 * Prints a table, the data file's size, and writes bench-read.json in the current directory. No
 * thresholds: the figures are for comparing runs on the same machine (issue 15's target: every
 * query's p99 under 150 ms on the 1 M data set; issue 24's: under 300 ms while B1 load runs).
 * `--quick` (20 000 sessions, 2 s a figure) is a smoke run of about a minute and a half.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { mkdtempSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import Database from "better-sqlite3";
import { openDb } from "../db/sqlite/open.ts";
import { sqliteStore } from "../db/sqlite/store.ts";
import type { Store } from "../db/store.ts";
import { hashApiKey, keyPrefix } from "../domain/keys.ts";
import type { EventRecord, Kind } from "../domain/types.ts";
import { LAG_GAUGES, lagOf, orNa, scrapeLag, summarize } from "./bench/lag.ts";
import { runLoadChild } from "./bench/load-child.ts";
import { generateDataset, RARE_WORD } from "./dataset.ts";
import type { LoadResult } from "./load.ts";

const { values } = parseArgs({
  options: {
    quick: { type: "boolean", default: false },
    sessions: { type: "string" },
    seconds: { type: "string" },
    db: { type: "string" },
    days: { type: "string" },
    "no-load": { type: "boolean", default: false },
  },
});
const quick = values.quick;
const SESSIONS = Number(values.sessions ?? (quick ? 20_000 : 1_000_000));
const SECONDS = Number(values.seconds ?? (quick ? 2 : 8));
/** B1 of `npm run bench`: 100 events a create_events call, 50 connections. */
const LOAD = { perCall: 100, connections: 50, warmup: quick ? 2 : 5 };
const METRICS_TOKEN = "bench-read-metrics-token-0123456789";
/** Days the sessions spread over; 1 M over 365 days puts ~82 000 in the measured 30 (`--sessions 100000 --days 37`: as many). */
const DAYS = Number(values.days ?? 365);
const NAIVE_RUNS = quick ? 3 : 3;
const BIG_EVENTS = 10_000;
const EVENT_PAGE = 1000;
const KEY = "0b7c6f4e-5a4e-4b0a-9c1e-2f3d4a5b6c7d";
const ROOT = fileURLToPath(new URL("..", import.meta.url));
const DAY_US = 86_400_000_000;
const END_US = Date.UTC(2026, 10, 1) * 1000;

const iso = (us: number) => new Date(Math.floor(us / 1000)).toISOString();

async function seed(path: string) {
  const store = sqliteStore(openDb(path), { checkpointer: false });
  const key = await store.createApiKey(hashApiKey(KEY), keyPrefix(KEY), "default", new Date().toISOString());
  const written = await generateDataset(store, key.project_id, {
    sessions: SESSIONS,
    seed: 15,
    days: DAYS,
    endUs: END_US,
    onProgress: (n) => process.stdout.write(`\rseeding: ${n.toLocaleString("en")} sessions`),
  });
  await addBig(store, key.project_id);
  await store.close();
  const db = new Database(path);
  db.pragma("wal_checkpoint(TRUNCATE)");
  db.exec("ANALYZE");
  db.close();
  process.stdout.write("\n");
  return { sessions: written.sessions + 1, events: written.events + BIG_EVENTS };
}

/** The big session, newest of all, so it is on the first list page (also added to a `--db` file without it). */
async function addBig(store: Store, projectId: string) {
  const bigUs = END_US + 1_000_000;
  await store.createSession(projectId, {
    id: "big",
    init_timestamp: iso(bigUs),
    init_us: bigUs,
    end_timestamp: null,
    end_state: null,
    end_state_reason: null,
    tags: ["prod"],
    host_env: null,
    extra: {},
  });
  const KINDS: Kind[] = ["llm", "tool", "action", "error"];
  for (let from = 0; from < BIG_EVENTS; from += 1000) {
    const events: EventRecord[] = [];
    for (let n = from; n < from + 1000; n += 1) {
      const us = bigUs + (n + 1) * 1000;
      const type = KINDS[n % 4] as Kind;
      events.push({
        id: `e${n}`,
        type,
        init_timestamp: iso(us),
        init_us: us,
        end_timestamp: iso(us + 500),
        agent_id: "agent-1",
        model: type === "llm" ? "gpt-4o-mini" : null,
        prompt_tokens: type === "llm" ? 120 : null,
        completion_tokens: type === "llm" ? 30 : null,
        cost: type === "llm" ? 0.000036 : null,
        fields:
          type === "llm" ? { prompt: "What is the capital of France?", completion: "Paris." } : { name: "search" },
        aliases: [],
        extra: {},
      });
    }
    await store.insertEvents(projectId, "big", events);
  }
}

function serve(path: string): Promise<{ child: ChildProcess; base: string }> {
  const env = {
    ...process.env,
    AGENTMON_API_KEY: KEY,
    AGENTMON_LOG_LEVEL: "silent",
    AGENTMON_RATE_LIMIT: "0",
    AGENTMON_METRICS_TOKEN: METRICS_TOKEN,
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
  /** Answers other than 200, by status (a server under load may answer 503, busy); not timed. */
  refused: Record<string, number>;
  /** The first refusal's body, as the client saw it. */
  refusal?: string;
}

/**
 * One client, one request at a time, for SECONDS seconds and at least 3 answers of 200: the
 * latency a user waits for, not throughput. Percentiles are nearest-rank over the 200s' times;
 * other answers are counted by status (under load, a busy server's 503 is an answer to report, not
 * a reason to stop), and a figure with 50 of them and no 200 stops trying.
 */
async function measure(what: string, base: string, paths: string[]): Promise<Figure> {
  const times: number[] = [];
  const refused: Record<string, number> = {};
  let refusal: string | undefined;
  let refusals = 0;
  const start = performance.now();
  for (let i = 0; performance.now() - start < SECONDS * 1000 || times.length < 3; i += 1) {
    const path = paths[i % paths.length] as string;
    const sent = performance.now();
    const res = await fetch(`${base}${path}`, { headers: { "x-agentmon-api-key": KEY } });
    const body = await res.text();
    if (res.status !== 200) {
      refused[res.status] = (refused[res.status] ?? 0) + 1;
      refusal ??= `${path} answered ${res.status}: ${body.slice(0, 300)}`;
      if (++refusals >= 50 && times.length === 0) break;
      continue;
    }
    times.push(performance.now() - sent);
  }
  const elapsed = (performance.now() - start) / 1000;
  const sorted = [...times].sort((a, b) => a - b);
  const at = (p: number) => sorted[Math.max(0, Math.ceil((p / 100) * sorted.length) - 1)] as number;
  return {
    what,
    requests_per_s: times.length / elapsed,
    mean_ms: times.reduce((sum, t) => sum + t, 0) / times.length,
    p50_ms: times.length ? at(50) : Number.NaN,
    p99_ms: times.length ? at(99) : Number.NaN,
    refused,
    ...(refusal === undefined ? {} : { refusal }),
  };
}

/** The naive answer's time: `run` NAIVE_RUNS times; p50 and the slowest (p99 of so few runs). */
function naive(run: () => unknown) {
  const times: number[] = [];
  for (let i = 0; i < NAIVE_RUNS; i += 1) {
    const start = performance.now();
    run();
    times.push(performance.now() - start);
  }
  times.sort((a, b) => a - b);
  return { p50_ms: times[Math.floor((times.length - 1) / 2)] as number, p99_ms: times[times.length - 1] as number };
}

/** Nearest-rank percentiles of the values, as the analytics API defines them. */
const percentiles = (values: number[]) => {
  values.sort((a, b) => a - b);
  const at = (p: number) => values[Math.max(0, Math.ceil((p / 100) * values.length) - 1)];
  return { p50: at(50), p95: at(95), p99: at(99) };
};

/**
 * The same answers as plain scans over sessions and events, without anything precomputed: what a
 * store without issue 15 would have to do.
 */
function naiveQueries(db: Database.Database, fromUs: number, toUs: number) {
  const sessionsIn = `FROM sessions s WHERE s.init_us >= ${fromUs} AND s.init_us < ${toUs}`;
  return {
    series: () => {
      const rows = db
        .prepare(
          `SELECT (s.init_us - ${fromUs}) / ${DAY_US} AS day, s.end_state,
             (SELECT count(*) FROM events e WHERE e.session_pk = s.pk) AS events,
             (SELECT total(cost) FROM events e WHERE e.session_pk = s.pk AND e.type = 'llm') AS cost,
             (SELECT total(prompt_tokens) FROM events e WHERE e.session_pk = s.pk AND e.type = 'llm') AS prompt,
             coalesce((SELECT max(max(e.init_us, coalesce(e.end_us, e.init_us))) FROM events e WHERE e.session_pk = s.pk), s.init_us) - s.init_us AS duration
           ${sessionsIn}`,
        )
        .raw()
        .all() as [number, string | null, number, number, number, number][];
      const days = new Map<number, number[]>();
      for (const [day, , , , , duration] of rows) {
        const list = days.get(day) ?? [];
        list.push(duration);
        days.set(day, list);
      }
      return [...days.values()].map(percentiles);
    },
    byModel: () => {
      const rows = db
        .prepare(
          `SELECT e.model, e.cost, coalesce(e.end_us, e.init_us) - e.init_us FROM events e
           JOIN sessions s ON s.pk = e.session_pk
           WHERE s.init_us >= ${fromUs} AND s.init_us < ${toUs} AND e.type = 'llm'`,
        )
        .raw()
        .all() as [string, number, number][];
      const models = new Map<string, { cost: number; durations: number[] }>();
      for (const [model, cost, duration] of rows) {
        const m = models.get(model) ?? { cost: 0, durations: [] };
        m.cost += cost ?? 0;
        m.durations.push(duration);
        models.set(model, m);
      }
      return [...models.entries()].map(([model, m]) => ({ model, cost: m.cost, ...percentiles(m.durations) }));
    },
    sortedByCost: () =>
      db
        .prepare(
          `SELECT s.id, total(e.cost) AS cost FROM sessions s LEFT JOIN events e ON e.session_pk = s.pk AND e.type = 'llm'
           GROUP BY s.pk ORDER BY cost DESC, s.id DESC LIMIT 50`,
        )
        .all(),
    filtered: () =>
      db
        .prepare(
          `SELECT s.id FROM sessions s
           WHERE EXISTS (SELECT 1 FROM events e WHERE e.session_pk = s.pk AND e.type = 'llm' AND e.model = 'o1')
             AND EXISTS (SELECT 1 FROM events e WHERE e.session_pk = s.pk AND e.type = 'error')
           ORDER BY s.init_us DESC, s.id DESC LIMIT 50`,
        )
        .all(),
    search: (word: string) =>
      db
        .prepare(
          `SELECT s.id FROM sessions s
           WHERE EXISTS (SELECT 1 FROM events e WHERE e.session_pk = s.pk AND e.body LIKE '%' || ? || '%')
           ORDER BY s.init_us DESC, s.id DESC LIMIT 50`,
        )
        .all(word),
  };
}

async function followEventPages(base: string): Promise<string[]> {
  const pages: string[] = [];
  let cursor: string | null = null;
  do {
    const path: string = `/v2/sessions/big/events?limit=${EVENT_PAGE}${cursor === null ? "" : `&cursor=${cursor}`}`;
    const res = await fetch(`${base}${path}`, { headers: { "x-agentmon-api-key": KEY } });
    if (res.status !== 200) throw new Error(`${path} answered ${res.status}`);
    pages.push(path);
    cursor = ((await res.json()) as { next_cursor: string | null }).next_cursor;
  } while (cursor !== null);
  return pages;
}

/** Checks that a query answers 200 with what the measure expects, before it is timed. */
async function check(base: string, path: string, ok: (body: Record<string, unknown>) => boolean) {
  const res = await fetch(`${base}${path}`, { headers: { "x-agentmon-api-key": KEY } });
  const body = (await res.json()) as Record<string, unknown>;
  if (res.status !== 200 || !ok(body))
    throw new Error(`${path} answered ${res.status}: ${JSON.stringify(body).slice(0, 300)}`);
}

interface UnderLoad {
  baseline: Figure;
  figures: Figure[];
  /** What the B1 load achieved meanwhile (its warm-up not counted). */
  load: LoadResult & { events_per_s: number };
  /** Whether the load was still running when the last query's figure was taken. */
  outlasted: boolean;
  lag: Record<(typeof LAG_GAUGES)[number], ReturnType<typeof summarize>>;
  /** Seconds from the load's end until the backlog was 0 (null: no gauge, or not within 2 minutes). */
  drained_s: number | null;
}

/**
 * The second phase: the same queries while B1 load runs against the server from a process of its
 * own, and the projector's lag scraped every second meanwhile. The load runs until the last
 * figure is taken, however long the figures take under it.
 */
async function duringLoad(base: string, queries: [string, string[]][]): Promise<UnderLoad> {
  console.log(
    `\nunder load: B1 (${LOAD.perCall} events a call, ${LOAD.connections} connections, its own process), ` +
      `${LOAD.warmup} s of it first; the same figures meanwhile, GET /metrics every second ...`,
  );
  const scraper = scrapeLag(`${base}/metrics`, METRICS_TOKEN);
  let running = true;
  const load = runLoadChild<LoadResult>({ url: base, key: KEY, kind: "events", ...LOAD, seconds: 0 }, ROOT);
  const loadEnded = () => {
    running = false;
  };
  load.result.then(loadEnded, loadEnded);
  // Its 50 sessions opened and its warm-up under way before the first figure.
  await new Promise((resolve) => setTimeout(resolve, (LOAD.warmup + 2) * 1000));
  const baseline = await measure("baseline: GET /healthz", base, ["/healthz"]);
  const figures: Figure[] = [];
  for (const [what, paths] of queries) figures.push(await measure(what, base, paths));
  const outlasted = running;
  load.stop();
  const result = await load.result;
  const ended = performance.now();
  // How long the projector takes to catch up once the load stops.
  let drained: number | null = null;
  while (performance.now() - ended < 120_000) {
    const res = await fetch(`${base}/metrics`, { headers: { authorization: `Bearer ${METRICS_TOKEN}` } });
    const backlog = lagOf(await res.text()).agentmon_projection_backlog;
    if (backlog === undefined) break;
    if (backlog === 0) {
      drained = (performance.now() - ended) / 1000;
      break;
    }
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
  const samples = await scraper.stop();
  return {
    baseline,
    figures,
    load: { ...result, events_per_s: result.rps * LOAD.perCall },
    outlasted,
    lag: {
      agentmon_projection_backlog: summarize(samples, "agentmon_projection_backlog"),
      agentmon_projection_lag_seconds: summarize(samples, "agentmon_projection_lag_seconds"),
    },
    drained_s: drained,
  };
}

async function main() {
  const dir = values.db ? undefined : mkdtempSync(join(tmpdir(), "agentmon-bench-"));
  const path = values.db ?? join(dir as string, "bench.db");
  let child: ChildProcess | undefined;
  try {
    let counts = { sessions: SESSIONS, events: Number.NaN };
    let seedSeconds = 0;
    if (!values.db || statSync(path, { throwIfNoEntry: false }) === undefined) {
      const start = performance.now();
      counts = await seed(path);
      seedSeconds = (performance.now() - start) / 1000;
    } else {
      // A data set made by scripts/dataset.ts alone: opening it migrates it; the big session is added.
      const store = sqliteStore(openDb(path), { checkpointer: false });
      const key = await store.apiKeyByHash(hashApiKey(KEY));
      if (!key)
        throw new Error(`${path} has no key ${KEY}: make it with scripts/dataset.ts or let this script seed it`);
      if (!(await store.getSession(key.project_id, "big"))) await addBig(store, key.project_id);
      await store.close();
      // What the file holds, counted from the raw rows (the sessions' totals are a projection,
      // issue 24, whose columns may move): a scan of the events' smallest index, seconds at 10 M.
      const db = new Database(path, { readonly: true });
      const held = db
        .prepare("SELECT (SELECT count(*) FROM sessions) AS sessions, (SELECT count(*) FROM events) AS events")
        .get() as { sessions: number; events: number };
      db.close();
      counts = held;
    }
    const dbBytes = statSync(path).size;
    console.log(
      `data set: ${counts.sessions.toLocaleString("en")} sessions, ${counts.events.toLocaleString("en")} events, ` +
        `${(dbBytes / 1e6).toFixed(0)} MB, seeded in ${seedSeconds.toFixed(0)} s`,
    );

    const fromUs = END_US - 30 * DAY_US;
    const range = `from=${iso(fromUs)}&to=${iso(END_US)}`;
    const server = await serve(path);
    child = server.child;
    const { base } = server;
    const eventPages = await followEventPages(base);
    const queries: [string, string[]][] = [
      ["(a) list page", ["/v2/sessions?limit=50"]],
      ["(b) session page (11 requests)", ["/v2/sessions/big", ...eventPages]],
      ["(c) 30-day daily series", [`/v2/analytics/timeseries?bucket=day&tz=Europe/Lisbon&${range}`]],
      ["(d) breakdown by model, 30 days", [`/v2/analytics/breakdown?by=model&${range}`]],
      ["(e) page sorted by cost", ["/v2/sessions?sort=cost&limit=50"]],
      ["(f) filtered page: o1, with errors", ["/v2/sessions?model=o1&has_errors=true&limit=50"]],
      [`(g) search, rare word`, [`/v2/sessions?q=${RARE_WORD}&limit=50`]],
      ["(g) search, common word", ["/v2/sessions?q=refund&limit=50"]],
    ];
    for (const [, paths] of queries) {
      for (const p of paths.slice(0, 1)) await check(base, p, () => true);
    }
    console.log(`measuring, ${SECONDS} s (and 3 requests at least) each, one request at a time ...`);
    const baseline = await measure("baseline: GET /healthz", base, ["/healthz"]);
    const figures: Figure[] = [];
    for (const [what, paths] of queries) figures.push(await measure(what, base, paths));

    console.log("naive answers, a plain scan of the same file ...");
    const db = new Database(path, { readonly: true });
    const scan = naiveQueries(db, fromUs, END_US);
    const naives = [
      undefined,
      undefined,
      naive(scan.series),
      naive(scan.byModel),
      naive(scan.sortedByCost),
      naive(scan.filtered),
      naive(() => scan.search(RARE_WORD)),
      naive(() => scan.search("refund")),
    ];
    db.close();

    const pad = (s: string, n: number) => s.padEnd(n);
    const num = (n: number | undefined, d = 1) => (n === undefined ? "-" : n.toFixed(d)).padStart(9);
    console.log(
      `\nagentmon read API: ${counts.sessions.toLocaleString("en")} sessions, ${(dbBytes / 1e6).toFixed(0)} MB`,
    );
    console.log(`${pad("what", 38)}    req/s   p50 ms   p99 ms  naive p50  naive p99`);
    console.log(
      `${pad(baseline.what, 38)}${num(baseline.requests_per_s)}${num(baseline.p50_ms, 0)}${num(baseline.p99_ms, 0)}`,
    );
    figures.forEach((f, i) => {
      const n = naives[i];
      console.log(
        `${pad(f.what, 38)}${num(f.requests_per_s)}${num(f.p50_ms, 0)}${num(f.p99_ms, 0)}  ${num(n?.p50_ms, 0)}  ${num(n?.p99_ms, 0)}`,
      );
      if (f.refusal) console.log(`      refused: ${JSON.stringify(f.refused)}; first: ${f.refusal}`);
    });
    const loaded = values["no-load"] ? undefined : await duringLoad(base, queries);
    if (loaded) {
      console.log(
        `\nwhile B1 load ran: ${Math.round(loaded.load.events_per_s).toLocaleString("en")} events/s ` +
          `(p99 ${loaded.load.p99} ms; answers by status ${JSON.stringify(loaded.load.statuses)}, ` +
          `${loaded.load.errors} without an answer, ${loaded.load.timeouts ?? 0} of them after 10 s)` +
          (loaded.outlasted ? "" : "; WARNING: the load ended before the last figure"),
      );
      console.log(`${pad("what", 38)}    req/s   p50 ms   p99 ms   idle p99`);
      const idle = [baseline, ...figures];
      [loaded.baseline, ...loaded.figures].forEach((f, i) => {
        const refused = Object.entries(f.refused).map(([status, n]) => `${n} × ${status}`);
        console.log(
          `${pad(f.what, 38)}${num(f.requests_per_s)}${num(f.p50_ms, 0)}${num(f.p99_ms, 0)}  ${num(idle[i]?.p99_ms, 0)}` +
            (refused.length ? `  refused: ${refused.join(", ")}` : ""),
        );
        if (f.refusal) console.log(`      first refusal: ${f.refusal}`);
      });
      console.log("projector lag during the load (a scrape a second):");
      for (const gauge of LAG_GAUGES) {
        const l = loaded.lag[gauge];
        const missing = l.missing ? ` (${l.missing} of ${l.scrapes} scrapes without it)` : "";
        console.log(`  ${gauge}: max ${orNa(l.max, 2)}, p99 ${orNa(l.p99, 2)}${missing}`);
      }
      console.log(
        `  backlog back to 0: ${loaded.drained_s === null ? "n/a" : `${loaded.drained_s.toFixed(1)} s after the load`}`,
      );
    }
    const report = {
      date: new Date().toISOString(),
      sessions: counts.sessions,
      events: counts.events,
      db_bytes: dbBytes,
      seed_seconds: seedSeconds,
      seconds_per_figure: SECONDS,
      baseline,
      figures: figures.map((f, i) => ({ ...f, naive: naives[i] ?? null })),
      under_load: loaded ?? null,
    };
    writeFileSync("bench-read.json", `${JSON.stringify(report, null, 2)}\n`);
    console.log("written: bench-read.json");
  } finally {
    if (child && child.exitCode === null) {
      const exited = new Promise((resolve) => child?.once("exit", resolve));
      child.kill("SIGTERM");
      await exited;
    }
    if (dir) rmSync(dir, { recursive: true, force: true });
  }
}

await main();
