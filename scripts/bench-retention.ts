/**
 * `npm run bench:retention [-- --sessions N --events E --seconds S]`: retention on a big data set
 * (issue 16, "what it must show"). Builds a SQLite file of N sessions (default 1 000 000) with E
 * events each (default 3), half of them idle for 60 days and half active yesterday; measures B1
 * (100-event create_events batches, 50 connections, scripts/load.ts) on it without a sweep; then
 * starts agentmon with AGENTMON_RETENTION_DAYS=30, measures B1 in windows of S seconds while the
 * sweep runs, and reports: what the sweep removed against what it had to (counted in the file
 * afterwards), the file's size before and after, the sweep's duration, and B1 during the sweep
 * over B1 without it (target ≥ 0.8).
 */
import { copyFileSync, mkdtempSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { openDb } from "../db/sqlite/open.ts";
import { sqliteStore } from "../db/sqlite/store.ts";
import { hashApiKey, keyPrefix } from "../domain/keys.ts";
import { sweep } from "../services/retention.ts";
import { ingest, openSessions, type Server, startAgentmon } from "./load.ts";

const { values } = parseArgs({
  options: {
    sessions: { type: "string", default: "1000000" },
    events: { type: "string", default: "3" },
    seconds: { type: "string", default: "5" },
  },
});
const SESSIONS = Number(values.sessions);
const EVENTS = Number(values.events);
const WINDOW = Number(values.seconds);
const CONNECTIONS = 50;
const KEY = "0b7c6f4e-5a4e-4b0a-9c1e-2f3d4a5b6c7d";
const DAY_US = 86_400_000_000;

const dir = mkdtempSync(join(tmpdir(), "agentmon-retention-"));
const path = join(dir, "agentmon.db");
const quietPath = join(dir, "quiet.db");
const size = (file = path) => statSync(file).size + (statSync(`${file}-wal`, { throwIfNoEntry: false })?.size ?? 0);
const mb = (bytes: number) => `${(bytes / 1e6).toFixed(1)} MB`;

/** The data set, written straight into the file in big transactions (not through HTTP). */
async function build() {
  const store = sqliteStore(openDb(path), { checkpointer: false });
  const key = await store.createApiKey(hashApiKey(KEY), keyPrefix(KEY), "default", new Date().toISOString());
  await store.close();
  const db = openDb(path);
  const now = Date.now() * 1000;
  const session = db.prepare(
    `INSERT INTO sessions (id, project_id, init_timestamp, init_us, end_timestamp, end_state, tags, extra)
     VALUES (?, ?, ?, ?, ?, 'Success', '["bench"]', '{}')`,
  );
  const event = db.prepare(
    `INSERT INTO events (session_pk, id, type, init_timestamp, init_us, end_timestamp, end_us, model,
       prompt_tokens, completion_tokens, cost_source, body, extra)
     VALUES (?, ?, 'llm', ?, ?, ?, ?, 'gpt-4o-mini', 212, 18, 'unknown', ?, '{}')`,
  );
  const body = JSON.stringify({
    prompt: [{ role: "user", content: "What will the weather be like in Lisbon tomorrow? ".repeat(4) }],
    completion: { role: "assistant", content: "Mild and cloudy, around 17 °C." },
  });
  const iso = (us: number) => new Date(Math.floor(us / 1000)).toISOString();
  const chunk = db.transaction((from: number, to: number) => {
    for (let i = from; i < to; i++) {
      const old = i % 2 === 0;
      const start = now - (old ? 60 : 1) * DAY_US + i * 1000;
      const { lastInsertRowid } = session.run(
        `${old ? "old" : "new"}-${i}`,
        key.project_id,
        iso(start),
        start,
        iso(start + 60_000_000),
      );
      for (let e = 0; e < EVENTS; e++) {
        const at = start + e * 1_000_000;
        event.run(lastInsertRowid, `e${e}`, iso(at), at, iso(at + 500_000), at + 500_000, body);
      }
    }
  });
  for (let i = 0; i < SESSIONS; i += 20_000) chunk(i, Math.min(SESSIONS, i + 20_000));
  db.pragma("wal_checkpoint(TRUNCATE)");
  db.close();
}

/** B1 for `seconds` on fresh sessions: events/s. */
async function b1(server: Server, jwts: string[], seconds: number) {
  const run = await ingest(server, jwts, { connections: CONNECTIONS, seconds, perCall: 100 });
  return { eventsPerS: run.rps * 100, failed: run.non2xx + run.errors };
}

/** Sessions and events left in the file, by the prefix of their session id. */
function counted() {
  const db = openDb(path);
  const count = (prefix: string) =>
    db
      .prepare<[string], { sessions: number; events: number }>(
        `SELECT count(*) AS sessions, coalesce(sum((SELECT count(*) FROM events e WHERE e.session_pk = s.pk)), 0) AS events
         FROM sessions s WHERE s.id LIKE ? || '-%'`,
      )
      .get(prefix) as { sessions: number; events: number };
  const result = { old: count("old"), new: count("new") };
  db.close();
  return result;
}

async function main() {
  const started = performance.now();
  await build();
  console.log(
    `data set: ${SESSIONS} sessions × ${EVENTS} events in ${((performance.now() - started) / 1000).toFixed(0)} s`,
  );
  const before = counted();
  const bytesBefore = size();

  // The sweep alone, in this process, on a copy: what it removes, how long it takes, how much
  // the file shrinks (the runs with load below grow the file with what they ingest).
  copyFileSync(path, quietPath);
  const quietDb = openDb(quietPath);
  const quietStore = sqliteStore(quietDb, { checkpointer: false });
  const quietStarted = performance.now();
  const quietRemoved = await sweep({ store: quietStore, defaultDays: 30 });
  const quietSeconds = (performance.now() - quietStarted) / 1000;
  quietDb.pragma("wal_checkpoint(TRUNCATE)");
  await quietStore.close();
  const bytesAfterQuiet = size(quietPath);
  const env = { AGENTMON_DB: path, AGENTMON_API_KEY: KEY };

  // B1 without a sweep (no retention), on the same file.
  let server = await startAgentmon(env);
  let jwts = await openSessions(server, CONNECTIONS);
  await b1(server, jwts, 2); // warm-up
  const quiet = await b1(server, jwts, 2 * WINDOW);
  await server.stop();

  // The same with a retention of 30 days: the sweep starts 5 s after the start.
  server = await startAgentmon({
    ...env,
    AGENTMON_RETENTION_DAYS: "30",
    AGENTMON_RETENTION_INTERVAL: "5",
    AGENTMON_LOG_LEVEL: "info",
  });
  let swept: { sessions: number; events: number; ms: number } | undefined;
  server.child.stdout?.on("data", (chunk: string) => {
    for (const line of chunk.split("\n")) {
      if (line.includes("retention: removed idle sessions") && swept === undefined) swept = JSON.parse(line);
    }
  });
  const serverStarted = performance.now();
  jwts = await openSessions(server, CONNECTIONS);
  await b1(server, jwts, 2); // warm-up
  await new Promise((resolve) => setTimeout(resolve, Math.max(0, 5500 - (performance.now() - serverStarted))));
  const during: number[] = [];
  let failed = 0;
  while (swept === undefined) {
    const window = await b1(server, jwts, WINDOW);
    if (swept === undefined) during.push(window.eventsPerS);
    failed += window.failed;
    if (performance.now() - serverStarted > 3_600_000) throw new Error("the sweep did not end within an hour");
  }
  await server.stop();
  const after = counted();
  const bytesAfter = size();
  const duringMean = during.length === 0 ? Number.NaN : during.reduce((a, b) => a + b, 0) / during.length;
  console.log(
    JSON.stringify(
      {
        sessions: SESSIONS,
        events_per_session: EVENTS,
        expected_removed: before.old,
        removed_by_sweep: swept && { sessions: swept.sessions, events: swept.events },
        left: after,
        removed_exactly:
          after.old.sessions === 0 &&
          after.new.sessions === before.new.sessions &&
          after.new.events === before.new.events,
        sweep_alone: { removed: quietRemoved, seconds: Number(quietSeconds.toFixed(1)) },
        file_before: mb(bytesBefore),
        file_after_sweep_alone: mb(bytesAfterQuiet),
        file_after_sweep_with_load: `${mb(bytesAfter)} (with what B1 ingested meanwhile)`,
        sweep_seconds_with_load: swept && swept.ms / 1000,
        b1_without_sweep: Math.round(quiet.eventsPerS),
        b1_during_sweep: Math.round(duringMean),
        b1_windows_during_sweep: during.map(Math.round),
        ratio: Number((duringMean / quiet.eventsPerS).toFixed(2)),
        failed_calls: failed + quiet.failed,
      },
      null,
      2,
    ),
  );
}

try {
  await main();
} finally {
  rmSync(dir, { recursive: true, force: true });
}
