/**
 * `npm run bench:export [-- --sessions N --slow-seconds S --sample K]`: bulk export and import on
 * a big data set (issue 16, "what it must show"; docs/decisions/021-export.md).
 *
 * 1. Builds a SQLite file of N sessions (default 1 000 000) straight with SQL, in big
 *    transactions: 1 to 6 events each (llm events priced by the table or by the client, with
 *    cache and reasoning counts, tool events with and without the SDK's aliases, actions, errors,
 *    unknown fields, non-ASCII text), 0 to 2 agents, every end state, tags, host_env, some span
 *    parents. The rows are what the write path makes of a client's bodies (domain/records.ts,
 *    domain/prices.ts, db/rows.ts eventRow), written for many sessions at once.
 * 2. Starts agentmon on it (server A) and measures, sampling the resident memory (VmRSS of
 *    /proc/<pid>/status) every SAMPLE_MS:
 *    - `agentmon export --out FILE` (the command, as a user runs it; it reads the file directly,
 *      cli/storage.ts): the command's RSS, and how far it had written at each sample;
 *    - GET /v2/export read at full speed by a client: server A's RSS;
 *    - GET /v2/export read by a slow client (64 KiB, then 50 ms asleep) for S seconds: server A's
 *      RSS, and GET /healthz's latency meanwhile.
 * 3. `agentmon import FILE` into an empty database (one that has only its key): time and RSS.
 * 4. Identical answers: `agentmon export` of the new database is compared byte for byte with the
 *    first export. Each NDJSON line is exportSession's answer for that session without `status`
 *    (domain/views.ts exportDocument: the session, its stats, its agents, every event as the
 *    events pages show it), in the list's order, so equal files mean equal getSession,
 *    getSessionStats, listSessionEvents and exportSession answers for every session. Then, with
 *    server B on the new database, every page of GET /v2/sessions?limit=200 of both servers is
 *    compared (the list's order, cursors, stats), and GET /v2/sessions/{id} and
 *    GET /v2/sessions/{id}/events?limit=1000 for K random sessions (default 1000).
 *
 * Prints a table, writes bench-export.json in the current directory, removes its files. No
 * thresholds: the figures are for comparing runs on the same machine; the comparisons must hold.
 */
import { spawn } from "node:child_process";
import { createHash } from "node:crypto";
import { once } from "node:events";
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { open } from "node:fs/promises";
import { get, type IncomingMessage } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { EVENT_COLUMNS, type EventRow, eventRow } from "../db/rows.ts";
import { openDb } from "../db/sqlite/open.ts";
import { sqliteStore } from "../db/sqlite/store.ts";
import type { ErrorDetail } from "../domain/errors.ts";
import { hashApiKey, keyPrefix } from "../domain/keys.ts";
import { priceEvent, priceTable } from "../domain/prices.ts";
import { newEvent, readEvent } from "../domain/records.ts";
import { timestampFromMillis } from "../domain/timestamps.ts";
import type { JsonObject, Kind } from "../domain/types.ts";
import { isoFromMicros } from "../domain/views.ts";
import { ROOT, type Server, START_ARGS, startAgentmon } from "./load.ts";

const { values } = parseArgs({
  options: {
    sessions: { type: "string", default: "1000000" },
    "slow-seconds": { type: "string", default: "30" },
    "server-seconds": { type: "string", default: "0" },
    sample: { type: "string", default: "1000" },
    keep: { type: "boolean", default: false },
  },
});
const SESSIONS = Number(values.sessions);
const SLOW_SECONDS = Number(values["slow-seconds"]);
/** The full-speed GET /v2/export is cut after this many seconds; 0: it reads to the end. */
const SERVER_SECONDS = Number(values["server-seconds"]);
const SAMPLE = Number(values.sample);
const SAMPLE_MS = 200;
const PAGE = 200;
const KEY = "0b7c6f4e-5a4e-4b0a-9c1e-2f3d4a5b6c7d";
const T0_US = Date.UTC(2026, 0, 1) * 1000;
const AUTH = { "x-agentmon-api-key": KEY };
/** Both servers name the same base in session_url, so that their answers can be compared as text. */
const SERVER_ENV = { AGENTMON_API_KEY: KEY, AGENTMON_PUBLIC_URL: "http://agentmon.test" };

const dir = mkdtempSync(join(tmpdir(), "agentmon-export-"));
const dbA = join(dir, "a.db");
const dbB = join(dir, "b.db");
const fileA = join(dir, "a.ndjson");
const fileB = join(dir, "b.ndjson");
const MB = 1e6;
const mb = (bytes: number) => Number((bytes / MB).toFixed(1));
const seconds = (ms: number) => Number((ms / 1000).toFixed(1));
const log = (line: string) => process.stderr.write(`[${new Date().toISOString().slice(11, 19)}] ${line}\n`);

// ---------------------------------------------------------------- the data set

const LONG =
  "You are a careful assistant that answers questions about the weather, citing the forecast you were given. ";
/** What clients send, one body per kind of event; each session takes a few, in turn. */
const TEMPLATES: { raw: JsonObject; ends: boolean }[] = [
  {
    ends: true,
    raw: {
      type: "llm",
      model: "gpt-4o-mini",
      prompt: [
        { role: "system", content: LONG.repeat(2) },
        { role: "user", content: "What will the weather be like in Lisbon tomorrow afternoon?" },
      ],
      completion: { role: "assistant", content: "Mild and cloudy, around 17 °C; a light coat is enough." },
      prompt_tokens: 212,
      completion_tokens: 18,
    },
  },
  {
    ends: true,
    raw: {
      type: "tool",
      name: "get_weather",
      input: { city: "Lisbon", day: "tomorrow" },
      output: { temp_c: 17, sky: "clouds", wind_kmh: 12 },
    },
  },
  {
    ends: true,
    raw: {
      type: "llm",
      model: "claude-3-5-sonnet-20241022",
      prompt: "Summarise the forecast for a traveller in two sentences.",
      completion: "Expect mild, cloudy weather around 17 °C. Bring a light coat for the evening.",
      prompt_tokens: 950,
      completion_tokens: 120,
      cost: 0.00465,
      thread_id: "thread-7",
    },
  },
  {
    ends: false,
    raw: {
      event_type: "tools",
      tool_name: "search",
      params: { q: "lisbon weather tomorrow", limit: 3 },
      returns: ["ipma.pt", "weather.com", "accuweather.com"],
    },
  },
  {
    ends: false,
    raw: { type: "action", action_type: "click", logs: "clicked #submit after 2 retries", screenshot: null },
  },
  {
    ends: true,
    raw: {
      type: "error",
      error_type: "RateLimitError",
      code: "429",
      details: "Too many requests: retry after 2 s",
      trigger_event_id: "e0",
      trigger_event_type: "llm",
      logs: 'Traceback (most recent call last):\n  File "agent.py", line 42, in run\nRateLimitError: 429',
    },
  },
  {
    ends: true,
    raw: {
      type: "llm",
      model: "gpt-4o",
      prompt: [{ role: "user", content: "Plan a three-day trip to Porto with a budget of 600 €." }],
      completion: { role: "assistant", content: "Day 1: Ribeira and the Dom Luís bridge. Day 2: ..." },
      prompt_tokens: 1200,
      completion_tokens: 300,
      usage: { prompt_tokens_details: { cached_tokens: 1024 }, completion_tokens_details: { reasoning_tokens: 64 } },
      temperature: 0.2,
    },
  },
  {
    ends: true,
    raw: {
      type: "llm",
      model: "local-llama-3-8b",
      prompt: 'Translate «naïve café» into 日本語 — "quoted"\n\ttabbed \u2028 separated 🚀',
      completion: "ナイーブなカフェ",
      prompt_tokens: 40,
      completion_tokens: 12,
      custom: { nested: [1, 2.5, { x: null, y: true }] },
    },
  },
];

/** Each template as the row the write path stores (id, times, agent and parent set per event). */
function templateRows(): EventRow[] {
  const prices = priceTable();
  const received = timestampFromMillis(T0_US / 1000);
  return TEMPLATES.map(({ raw }) => {
    const errors: ErrorDetail[] = [];
    const input = readEvent(raw, "event", errors, "id");
    if (errors.length > 0 || input.type === undefined) throw new Error(`a bad template: ${JSON.stringify(errors)}`);
    return eventRow(priceEvent(newEvent({ ...input, type: input.type as Kind }, "t", received), prices));
  });
}

const STATES = ["Success", "Fail", "Indeterminate", null, "Success"] as const;
const TAGS = [null, '["prod"]', '["prod","nightly"]', '["dev","ünïcode"]', "[]", '["prod"]'];
const HOST_ENV = JSON.stringify({
  OS: { OS: "Linux", "OS Release": "6.1.0" },
  SDK: { "AgentOps SDK Version": "0.3.21" },
});
const EVENTS_PER_SESSION = [2, 3, 4, 1, 5, 3, 6];
const COLUMN = Object.fromEntries(EVENT_COLUMNS.map((name, i) => [name, i])) as Record<
  (typeof EVENT_COLUMNS)[number],
  number
>;

const sessionId = (i: number) =>
  i % 100 === 7
    ? `nightly-run/${i}`
    : `${((i * 2654435761) >>> 0).toString(16).padStart(8, "0")}-${(i % 65536).toString(16).padStart(4, "0")}-4000-8000-${i
        .toString(16)
        .padStart(12, "0")}`;

/** The data set, in transactions of 10 000 sessions; answers sessions, events and agents written. */
async function build() {
  const store = sqliteStore(openDb(dbA), { checkpointer: false });
  const key = await store.createApiKey(hashApiKey(KEY), keyPrefix(KEY), "default", new Date().toISOString());
  await store.close();
  const db = openDb(dbA);
  const session = db.prepare(
    `INSERT INTO sessions (id, project_id, init_timestamp, init_us, end_timestamp, end_state, end_state_reason, tags, host_env, extra)
     VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
  );
  const event = db.prepare(
    `INSERT INTO events (session_pk, ${EVENT_COLUMNS.join(", ")}) VALUES (?${", ?".repeat(EVENT_COLUMNS.length)})`,
  );
  const agent = db.prepare("INSERT INTO agents (session_pk, id, name, extra) VALUES (?, ?, ?, ?)");
  const templates = templateRows();
  const counts = { sessions: 0, events: 0, agents: 0 };
  const chunk = db.transaction((from: number, to: number) => {
    for (let i = from; i < to; i++) {
      // Newest last; every 1000th session starts at the same microsecond as the one before it,
      // so that the list's tie-break (the id) is exercised too.
      const us = T0_US + (i - (i % 1000 === 1 ? 1 : 0)) * 250_000 + (i % 7) * 13;
      const state = STATES[i % STATES.length] ?? null;
      const pk = Number(
        session.run(
          sessionId(i),
          key.project_id,
          isoFromMicros(us),
          us,
          state === null ? null : isoFromMicros(us + 60_000_000),
          state,
          state === "Fail" ? `step ${i % 10} timed out` : null,
          TAGS[i % TAGS.length],
          i % 3 === 0 ? HOST_ENV : null,
          i % 7 === 0 ? JSON.stringify({ customer: `acme-${i % 13}`, video: null }) : "{}",
        ).lastInsertRowid,
      );
      const agents: string[] = [];
      for (let a = 0; a < i % 3; a++) {
        const id = `agent-${i}-${a}`;
        agent.run(pk, id, a === 0 ? "planner" : "researcher", a === 0 ? "{}" : '{"role":"search","model":"gpt-4o"}');
        agents.push(id);
      }
      const n = EVENTS_PER_SESSION[i % EVENTS_PER_SESSION.length] ?? 1;
      for (let e = 0; e < n; e++) {
        const row = [...(templates[(i + e) % templates.length] as EventRow)];
        const at = us + (e + 1) * 1_500_000 + e * 7;
        row[COLUMN.id] = `e${e}`;
        row[COLUMN.init_timestamp] = isoFromMicros(at);
        row[COLUMN.init_us] = at;
        const ends = TEMPLATES[(i + e) % TEMPLATES.length]?.ends === true;
        row[COLUMN.end_timestamp] = ends ? isoFromMicros(at + 800_250) : null;
        row[COLUMN.end_us] = ends ? at + 800_250 : null;
        row[COLUMN.agent_id] = agents.length === 0 ? null : (agents[e % agents.length] ?? null);
        row[COLUMN.parent_id] = i % 10 === 4 && e > 0 ? "e0" : null;
        event.run(pk, ...row);
      }
      counts.sessions += 1;
      counts.events += n;
      counts.agents += agents.length;
    }
  });
  for (let i = 0; i < SESSIONS; i += 10_000) chunk(i, Math.min(SESSIONS, i + 10_000));
  db.pragma("wal_checkpoint(TRUNCATE)");
  db.close();
  return counts;
}

// ---------------------------------------------------------------- memory

/** VmRSS of a process in bytes; undefined once it is gone. */
function rssOf(pid: number | undefined): number | undefined {
  if (pid === undefined) return undefined;
  try {
    const status = readFileSync(`/proc/${pid}/status`, "utf8");
    const kb = /VmRSS:\s+(\d+) kB/.exec(status)?.[1];
    return kb === undefined ? undefined : Number(kb) * 1024;
  } catch {
    return undefined;
  }
}

interface Sample {
  ms: number;
  rss: number;
  /** How far the run was at that moment: bytes or sessions written. */
  progress: number;
}

/** Samples a process's RSS and the run's progress every SAMPLE_MS until stopped. */
function sampler(pid: number | undefined, progress: () => number) {
  const started = performance.now();
  const samples: Sample[] = [];
  const take = () => {
    const rss = rssOf(pid);
    if (rss !== undefined) samples.push({ ms: performance.now() - started, rss, progress: progress() });
  };
  take();
  const timer = setInterval(take, SAMPLE_MS);
  return {
    stop(): Sample[] {
      clearInterval(timer);
      take();
      return samples;
    },
  };
}

const percentile = (sorted: number[], p: number) =>
  sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))] ?? Number.NaN;

/**
 * RSS figures of a run, in MB: the first sample, percentiles and peak over the run, and the RSS
 * when 10 %, 50 % and 90 % of it was done (`marks`: the progress values of those points).
 */
function rssFigures(samples: Sample[], marks?: [number, number, number]) {
  const sorted = samples.map((s) => s.rss).sort((a, b) => a - b);
  const at = (mark: number) => {
    const found = samples.find((s) => s.progress >= mark);
    return found === undefined ? null : mb(found.rss);
  };
  return {
    samples: samples.length,
    first: mb(samples[0]?.rss ?? Number.NaN),
    p50: mb(percentile(sorted, 50)),
    p90: mb(percentile(sorted, 90)),
    p99: mb(percentile(sorted, 99)),
    peak: mb(sorted[sorted.length - 1] ?? Number.NaN),
    ...(marks === undefined ? {} : { at_10pct: at(marks[0]), at_50pct: at(marks[1]), at_90pct: at(marks[2]) }),
  };
}

// ---------------------------------------------------------------- the command

/** The node flags `npm start` (and bin/agentmon.js's first line) give the command. */
const NODE_FLAGS = START_ARGS.slice(0, START_ARGS.indexOf("bin/agentmon.js"));

/** Runs `agentmon <args>` on a database; answers its exit, its output and its RSS samples. */
async function agentmon(args: string[], db: string, progress: () => number = () => 0) {
  const clean = Object.fromEntries(Object.entries(process.env).filter(([name]) => !/^(AGENTMON_|PORT$)/.test(name)));
  const started = performance.now();
  const child = spawn(process.execPath, [...NODE_FLAGS, join(ROOT, "bin/agentmon.js"), ...args, "--db", db], {
    cwd: ROOT,
    env: { ...clean, AGENTMON_LOG_LEVEL: "warn" },
    stdio: ["ignore", "pipe", "pipe"],
  });
  const kill = () => child.kill("SIGKILL");
  process.once("exit", kill);
  const samples = sampler(child.pid, progress);
  let out = "";
  child.stdout.setEncoding("utf8").on("data", (text: string) => {
    out += text;
  });
  child.stderr.setEncoding("utf8").on("data", (text: string) => {
    out += text;
  });
  const [code] = (await once(child, "exit")) as [number | null];
  process.off("exit", kill);
  const ms = performance.now() - started;
  const taken = samples.stop();
  if (code !== 0) throw new Error(`agentmon ${args.join(" ")} exited with ${code}:\n${out}`);
  return { ms, out: out.trim(), samples: taken };
}

// ---------------------------------------------------------------- HTTP

function request(server: Server, path: string): Promise<IncomingMessage> {
  return new Promise((resolve, reject) => {
    get(`${server.url}${path}`, { headers: AUTH }, resolve).once("error", reject);
  });
}

const countNewlines = (chunk: Buffer) => {
  let n = 0;
  for (let at = chunk.indexOf(10); at !== -1; at = chunk.indexOf(10, at + 1)) n += 1;
  return n;
};

/** GET /v2/export read as fast as it comes: the SHA-256 of the body, its size, the server's RSS. */
async function fullExport(server: Server, sessions: number, limit: number) {
  const started = performance.now();
  const state = { bytes: 0, lines: 0 };
  const samples = sampler(server.child.pid, () => state.lines);
  const health = healthProbe(server);
  const res = await request(server, "/v2/export");
  if (res.statusCode !== 200) throw new Error(`GET /v2/export answered ${res.statusCode}`);
  const hash = createHash("sha256");
  let whole = true;
  for await (const chunk of res as AsyncIterable<Buffer>) {
    hash.update(chunk);
    state.bytes += chunk.length;
    state.lines += countNewlines(chunk);
    if (limit > 0 && performance.now() - started > limit * 1000) {
      whole = false;
      break;
    }
  }
  const ms = performance.now() - started;
  return {
    ms,
    whole,
    bytes: state.bytes,
    lines: state.lines,
    sha256: hash.digest("hex"),
    rss: rssFigures(samples.stop(), [sessions * 0.1, sessions * 0.5, sessions * 0.9]),
    healthz_ms: await health.stop(),
  };
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** GET /healthz every second until stopped: its latencies' median and maximum, in ms. */
function healthProbe(server: Server) {
  const health: number[] = [];
  let probing = true;
  const probe = (async () => {
    while (probing) {
      const started = performance.now();
      const res = await fetch(`${server.url}/healthz`);
      await res.arrayBuffer();
      if (res.status !== 200) throw new Error(`GET /healthz answered ${res.status} during an export`);
      health.push(performance.now() - started);
      await sleep(1000);
    }
  })();
  return {
    async stop() {
      probing = false;
      await probe;
      const sorted = [...health].sort((a, b) => a - b);
      return {
        probes: sorted.length,
        p50: Number(percentile(sorted, 50).toFixed(1)),
        max: Number((sorted[sorted.length - 1] ?? Number.NaN).toFixed(1)),
      };
    },
  };
}

/**
 * GET /v2/export read by a slow client for `limit` seconds: 64 KiB, then 50 ms asleep (at most
 * about 1.3 MB/s); then it goes away. GET /healthz is asked every second meanwhile.
 */
async function slowExport(server: Server, limit: number) {
  const state = { bytes: 0, lines: 0 };
  const samples = sampler(server.child.pid, () => state.lines);
  const health = healthProbe(server);
  const res = await request(server, "/v2/export");
  if (res.statusCode !== 200) throw new Error(`GET /v2/export answered ${res.statusCode}`);
  const started = performance.now();
  let since = 0;
  for await (const chunk of res as AsyncIterable<Buffer>) {
    state.bytes += chunk.length;
    state.lines += countNewlines(chunk);
    since += chunk.length;
    if (since >= 64 * 1024) {
      since = 0;
      await sleep(50);
    }
    if (performance.now() - started > limit * 1000) break; // leaving the loop destroys the response
  }
  const ms = performance.now() - started;
  const rss = rssFigures(samples.stop());
  const healthz = await health.stop();
  // The server after the client went away: the export must have stopped, its memory freed.
  await sleep(2000);
  return {
    seconds: seconds(ms),
    bytes: state.bytes,
    sessions: state.lines,
    mb_per_s: Number((state.bytes / MB / (ms / 1000)).toFixed(2)),
    rss,
    rss_2s_after_client_left: mb(server.rss()),
    healthz_ms: healthz,
  };
}

// ---------------------------------------------------------------- comparisons

/**
 * Compares two files byte for byte; answers whether they are equal, the first offset where they
 * differ, the SHA-256 of the first, and the byte offsets of the ends of its lines at `marks`.
 */
async function compareFiles(a: string, b: string, marks: number[]) {
  const [fa, fb] = [await open(a), await open(b)];
  const size = 1 << 20;
  const [ba, bb] = [Buffer.alloc(size), Buffer.alloc(size)];
  const hash = createHash("sha256");
  const offsets = marks.map(() => Number.NaN);
  let offset = 0;
  let lines = 0;
  let firstDifference: number | null = null;
  try {
    for (;;) {
      const [ra, rb] = [await fa.read(ba, 0, size, offset), await fb.read(bb, 0, size, offset)];
      const na = ra.bytesRead;
      const nb = rb.bytesRead;
      if (firstDifference === null) {
        const n = Math.min(na, nb);
        if (!ba.subarray(0, n).equals(bb.subarray(0, n))) {
          let i = 0;
          while (ba[i] === bb[i]) i += 1;
          firstDifference = offset + i;
        } else if (na !== nb) firstDifference = offset + n;
      }
      if (na === 0) break;
      const chunk = ba.subarray(0, na);
      hash.update(chunk);
      for (let at = chunk.indexOf(10); at !== -1; at = chunk.indexOf(10, at + 1)) {
        lines += 1;
        marks.forEach((mark, m) => {
          if (lines === mark) offsets[m] = offset + at + 1;
        });
      }
      offset += na;
    }
  } finally {
    await fa.close();
    await fb.close();
  }
  return { equal: firstDifference === null, firstDifference, sha256: hash.digest("hex"), lines, offsets };
}

async function text(server: Server, path: string) {
  const res = await fetch(`${server.url}${path}`, { headers: AUTH });
  return { status: res.status, body: await res.text() };
}

/** A small deterministic generator (mulberry32), so that a run's sample can be drawn again. */
function random(seed: number) {
  let a = seed;
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

interface Differences {
  compared: number;
  differing: number;
  first: { path: string; a: string; b: string } | null;
}

function compareAnswers(
  path: string,
  a: { status: number; body: string },
  b: { status: number; body: string },
  d: Differences,
) {
  d.compared += 1;
  if (a.status !== 200) throw new Error(`${path} answered ${a.status} on server A: ${a.body.slice(0, 300)}`);
  if (a.status === b.status && a.body === b.body) return;
  d.differing += 1;
  d.first ??= { path, a: `${a.status} ${a.body.slice(0, 2000)}`, b: `${b.status} ${b.body.slice(0, 2000)}` };
}

/** Every list page of both servers, then K sessions and their events; answers the differences. */
async function compareServers(a: Server, b: Server) {
  const started = performance.now();
  const pages: Differences = { compared: 0, differing: 0, first: null };
  const sessions: Differences = { compared: 0, differing: 0, first: null };
  const events: Differences = { compared: 0, differing: 0, first: null };
  const sample: string[] = [];
  const draw = random(16);
  let seen = 0;
  let cursor: string | null = null;
  do {
    const path: string = `/v2/sessions?limit=${PAGE}${cursor === null ? "" : `&cursor=${cursor}`}`;
    const [ta, tb] = await Promise.all([text(a, path), text(b, path)]);
    compareAnswers(path, ta, tb, pages);
    const page = JSON.parse(ta.body) as { sessions: { session: { id: string } }[]; next_cursor: string | null };
    for (const { session } of page.sessions) {
      // Reservoir sampling: every session has the same chance to be among the K.
      seen += 1;
      if (sample.length < SAMPLE) sample.push(session.id);
      else {
        const j = Math.floor(draw() * seen);
        if (j < SAMPLE) sample[j] = session.id;
      }
    }
    cursor = page.next_cursor;
    if (pages.compared % 500 === 0) log(`  ${pages.compared} list pages compared`);
  } while (cursor !== null);
  const listMs = performance.now() - started;
  for (const id of sample) {
    const at = `/v2/sessions/${encodeURIComponent(id)}`;
    const [sa, sb] = await Promise.all([text(a, at), text(b, at)]);
    compareAnswers(at, sa, sb, sessions);
    const eventsAt = `${at}/events?limit=1000`;
    const [ea, eb] = await Promise.all([text(a, eventsAt), text(b, eventsAt)]);
    compareAnswers(eventsAt, ea, eb, events);
  }
  return {
    list_pages: pages,
    sessions_listed: seen,
    list_seconds: seconds(listMs),
    get_session: sessions,
    list_session_events: events,
    sample_seconds: seconds(performance.now() - started - listMs),
  };
}

// ---------------------------------------------------------------- the run

async function main() {
  const report: Record<string, unknown> = { date: new Date().toISOString(), sessions: SESSIONS };
  const started = performance.now();
  log(`building ${SESSIONS} sessions in ${dbA}`);
  const built = await build();
  report.data_set = {
    ...built,
    seconds: seconds(performance.now() - started),
    db_mb: mb(statSync(dbA).size),
  };
  log(`built: ${JSON.stringify(report.data_set)}`);

  let serverA: Server | undefined;
  let serverB: Server | undefined;
  try {
    serverA = await startAgentmon({ ...SERVER_ENV, AGENTMON_DB: dbA });
    await sleep(2000);
    const idleA = mb(serverA.rss());

    // The command's baseline: the same command, run the same way, writing nothing (no session
    // has this tag).
    const exportNothing = await agentmon(["export", "--tag", "no-such-tag", "--out", join(dir, "none.ndjson")], dbA);

    // 1. The command, to a file. It reads the file itself; server A sits beside it, idle.
    log("agentmon export --out FILE");
    const serverDuring = sampler(serverA.child.pid, () => 0);
    const exported = await agentmon(
      ["export", "--out", fileA],
      dbA,
      () => statSync(fileA, { throwIfNoEntry: false })?.size ?? 0,
    );
    const serverBeside = rssFigures(serverDuring.stop());
    const bytes = statSync(fileA).size;
    log(`  ${exported.out} ${seconds(exported.ms)} s, ${mb(bytes)} MB`);

    // 2. GET /v2/export at full speed: the same bytes, from the server.
    log("GET /v2/export, full speed");
    const full = await fullExport(serverA, SESSIONS, SERVER_SECONDS);
    log(`  ${seconds(full.ms)} s, ${mb(full.bytes)} MB, server peak ${full.rss.peak} MB`);
    await sleep(2000);
    const afterFullA = mb(serverA.rss());

    // 3. A slow reader, for a bounded time.
    log(`GET /v2/export, slow reader for ${SLOW_SECONDS} s`);
    const slow = await slowExport(serverA, SLOW_SECONDS);
    log(`  ${slow.sessions} sessions at ${slow.mb_per_s} MB/s, server peak ${slow.rss.peak} MB`);

    // 4. Import into an empty database: server B makes it (its key, its project) and stops.
    log("agentmon import FILE into an empty database");
    serverB = await startAgentmon({ ...SERVER_ENV, AGENTMON_DB: dbB });
    await serverB.stop();
    // The command's baseline: a file of no session, just the trailer.
    writeFileSync(join(dir, "none.ndjson"), `${JSON.stringify({ trailer: { sessions: 0, events: 0 } })}\n`);
    const importNothing = await agentmon(["import", join(dir, "none.ndjson")], dbB);
    const imported = await agentmon(["import", fileA], dbB);
    log(`  ${imported.out} ${seconds(imported.ms)} s`);

    // 5. The new database exported again, compared byte for byte with the first export.
    log("agentmon export of the new database, compared byte for byte");
    const reexported = await agentmon(
      ["export", "--out", fileB],
      dbB,
      () => statSync(fileB, { throwIfNoEntry: false })?.size ?? 0,
    );
    const marks: [number, number, number] = [SESSIONS * 0.1, SESSIONS * 0.5, SESSIONS * 0.9].map(Math.round) as [
      number,
      number,
      number,
    ];
    const files = await compareFiles(fileA, fileB, marks);
    const byteMarks = files.offsets as [number, number, number];
    log(`  equal: ${files.equal}`);

    // 6. Both servers' read API answers.
    log("GET /v2/sessions pages and a sample of sessions, server A against server B");
    serverB = await startAgentmon({ ...SERVER_ENV, AGENTMON_DB: dbB });
    const answers = await compareServers(serverA, serverB);
    log(`  ${JSON.stringify(answers).slice(0, 400)}`);

    const throughput = (ms: number, n: number, b: number) => ({
      seconds: seconds(ms),
      sessions_per_s: Math.round(n / (ms / 1000)),
      mb_per_s: Number((b / MB / (ms / 1000)).toFixed(1)),
    });
    Object.assign(report, {
      export_file_mb: mb(bytes),
      export_command: {
        ...throughput(exported.ms, SESSIONS, bytes),
        said: exported.out,
        rss_mb: rssFigures(exported.samples, byteMarks),
        baseline_no_session_rss_mb: rssFigures(exportNothing.samples),
        server_beside_it_rss_mb: serverBeside,
      },
      server_export_full_speed: {
        ...throughput(full.ms, full.lines - (full.whole ? 1 : 0), full.bytes),
        read_to_the_end: full.whole,
        same_bytes_as_the_command: full.whole ? full.sha256 === files.sha256 && full.bytes === bytes : null,
        server_idle_rss_mb_before: idleA,
        rss_mb: full.rss,
        server_rss_mb_2s_after: afterFullA,
        healthz_ms: full.healthz_ms,
      },
      server_export_slow_reader: slow,
      import_command: {
        ...throughput(imported.ms, SESSIONS, bytes),
        said: imported.out,
        rss_mb: rssFigures(imported.samples),
        baseline_no_session_rss_mb: rssFigures(importNothing.samples),
        db_mb: mb(statSync(dbB).size),
      },
      export_of_the_import: {
        ...throughput(reexported.ms, SESSIONS, statSync(fileB).size),
        rss_mb: rssFigures(reexported.samples, byteMarks),
        byte_for_byte_equal: files.equal,
        first_difference_at_byte: files.firstDifference,
        lines: files.lines,
        sha256: files.sha256,
      },
      read_api: answers,
    });
    writeFileSync("bench-export.json", `${JSON.stringify(report, null, 2)}\n`);
    printTable(report);
    if (
      !files.equal ||
      answers.list_pages.differing + answers.get_session.differing + answers.list_session_events.differing > 0
    ) {
      console.log("THE ANSWERS DIFFER: see bench-export.json");
      process.exitCode = 1;
    }
  } finally {
    await serverA?.stop();
    await serverB?.stop();
  }
}

// biome-ignore lint/suspicious/noExplicitAny: the report is printed as it was built
function printTable(r: any) {
  const row = (what: string, ...cells: unknown[]) =>
    console.log(`${what.padEnd(44)}${cells.map((c) => String(c ?? "-").padStart(10)).join("")}`);
  console.log(
    `\nagentmon export/import, ${SESSIONS.toLocaleString("en")} sessions, ${r.data_set.events.toLocaleString("en")} events, file ${r.export_file_mb} MB (db ${r.data_set.db_mb} MB)`,
  );
  row("", "seconds", "sess/s", "MB/s");
  row(
    "agentmon export --out FILE",
    r.export_command.seconds,
    r.export_command.sessions_per_s,
    r.export_command.mb_per_s,
  );
  row(
    "GET /v2/export, full speed",
    r.server_export_full_speed.seconds,
    r.server_export_full_speed.sessions_per_s,
    r.server_export_full_speed.mb_per_s,
  );
  row(
    "GET /v2/export, slow reader (bounded)",
    r.server_export_slow_reader.seconds,
    Math.round(r.server_export_slow_reader.sessions / r.server_export_slow_reader.seconds),
    r.server_export_slow_reader.mb_per_s,
  );
  row(
    "agentmon import FILE (empty database)",
    r.import_command.seconds,
    r.import_command.sessions_per_s,
    r.import_command.mb_per_s,
  );
  row(
    "agentmon export of the imported database",
    r.export_of_the_import.seconds,
    r.export_of_the_import.sessions_per_s,
    r.export_of_the_import.mb_per_s,
  );
  console.log("\nRSS, MB (10/50/90 %: when that share of the sessions was written)");
  row("", "first", "at 10%", "at 50%", "at 90%", "p50", "p90", "p99", "peak");
  const rss = (what: string, f: Record<string, unknown>) =>
    row(what, f.first, f.at_10pct, f.at_50pct, f.at_90pct, f.p50, f.p90, f.p99, f.peak);
  rss("agentmon export, no session (baseline)", r.export_command.baseline_no_session_rss_mb);
  rss("agentmon export (the command)", r.export_command.rss_mb);
  rss("  server A beside it, idle", r.export_command.server_beside_it_rss_mb);
  rss("server A, GET /v2/export full speed", r.server_export_full_speed.rss_mb);
  rss("server A, slow reader", r.server_export_slow_reader.rss);
  rss("agentmon import, no session (baseline)", r.import_command.baseline_no_session_rss_mb);
  rss("agentmon import (the command)", r.import_command.rss_mb);
  rss("agentmon export of the imported database", r.export_of_the_import.rss_mb);
  console.log(
    `server A idle before: ${r.server_export_full_speed.server_idle_rss_mb_before} MB; 2 s after the full-speed export: ${r.server_export_full_speed.server_rss_mb_2s_after} MB; 2 s after the slow reader left: ${r.server_export_slow_reader.rss_2s_after_client_left} MB`,
  );
  console.log(
    `GET /healthz every second meanwhile: full speed p50 ${r.server_export_full_speed.healthz_ms.p50} ms, max ${r.server_export_full_speed.healthz_ms.max} ms; slow reader (${r.server_export_slow_reader.sessions} sessions read) p50 ${r.server_export_slow_reader.healthz_ms.p50} ms, max ${r.server_export_slow_reader.healthz_ms.max} ms`,
  );
  console.log("\nIdentical answers");
  console.log(
    `export of the import = first export, byte for byte: ${r.export_of_the_import.byte_for_byte_equal} (${r.export_of_the_import.lines} lines); GET /v2/export = the command's file: ${r.server_export_full_speed.same_bytes_as_the_command}`,
  );
  const d = r.read_api;
  console.log(
    `GET /v2/sessions?limit=${PAGE}: ${d.list_pages.compared} pages each (${d.sessions_listed} sessions), ${d.list_pages.differing} differ (${d.list_seconds} s)`,
  );
  console.log(
    `GET /v2/sessions/{id}: ${d.get_session.compared} sampled, ${d.get_session.differing} differ; its /events: ${d.list_session_events.compared}, ${d.list_session_events.differing} differ`,
  );
  console.log("written: bench-export.json");
}

try {
  await main();
} finally {
  if (values.keep) log(`kept: ${dir}`);
  else rmSync(dir, { recursive: true, force: true });
}
