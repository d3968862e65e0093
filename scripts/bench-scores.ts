/**
 * `npm run bench:scores [-- --quick]` (issue 25): how fast agentmon takes scores, as a ratio of
 * the storage limit of the same rows measured in the same run.
 *
 * - storage limit: score rows inserted straight through agentmon's schema and Store
 *   (Store.insertScores, 1000 rows a transaction, no HTTP, no JSON, no validation), into a fresh
 *   file; the records are built before the clock starts.
 * - ingest: `npm start` on a fresh file, autocannon (50 connections) posting POST /v2/scores with
 *   100 scores a call (unique ids, a numeric score of one of 20 sessions, every third with an
 *   event id and a comment), with a score config of the name, so that the config read and check
 *   are paid as in use.
 *
 * Prints both figures and the ratio; writes nothing else. No threshold: figures, not a test.
 */
import { randomUUID } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import autocannon from "autocannon";
import { openDb } from "../db/sqlite/open.ts";
import { sqliteStore } from "../db/sqlite/store.ts";
import { hashApiKey, keyPrefix } from "../domain/keys.ts";
import type { ScoreRecord } from "../domain/scores.ts";
import { timestampFromMillis } from "../domain/timestamps.ts";
import { startAgentmon } from "./load.ts";

const { values } = parseArgs({ options: { quick: { type: "boolean", default: false } } });
const quick = values.quick;
const SECONDS = quick ? 4 : 20;
const WARMUP = quick ? 1 : 3;
const CONNECTIONS = 50;
const PER_CALL = 100;
const SESSIONS = 20;
const STORAGE_ROWS = quick ? 100_000 : 300_000;
const log = (line: string) => process.stdout.write(`${line}\n`);
const fmt = (n: number) => Math.round(n).toLocaleString("en-US");

/** The storage limit: rows/s of Store.insertScores in 1000-row transactions on a fresh file. */
async function storageLimit(dir: string): Promise<number> {
  const store = sqliteStore(openDb(join(dir, "storage.db")));
  const key = randomUUID();
  const { project_id } = await store.createApiKey(hashApiKey(key), keyPrefix(key), "default", new Date().toISOString());
  const now = timestampFromMillis(Date.now());
  const sessions = Array.from({ length: SESSIONS }, (_, i) => `bench-${i}`);
  for (const id of sessions) {
    await store.createSession(project_id, {
      id,
      init_timestamp: now.iso,
      init_us: now.us,
      end_timestamp: null,
      end_state: null,
      end_state_reason: null,
      tags: null,
      host_env: null,
      extra: {},
    });
  }
  const batches = Array.from({ length: STORAGE_ROWS / 1000 }, (_, b) =>
    Array.from({ length: 1000 }, (_, i): ScoreRecord => {
      const n = b * 1000 + i;
      return {
        id: `score-${n}`,
        name: "quality",
        data_type: "numeric",
        value: (n % 100) / 100,
        session_id: sessions[n % SESSIONS] as string,
        event_id: n % 3 === 0 ? `event-${n % 50}` : null,
        conversation_id: null,
        response_id: null,
        source: "eval",
        comment: n % 3 === 0 ? "a short explanation of the judgement" : null,
        author: { type: "api_key", id: "bench" },
        metadata: {},
        timestamp: now.iso,
        time_us: now.us + n,
        created_at: now.iso,
        updated_at: null,
      };
    }),
  );
  const started = performance.now();
  for (const batch of batches) await store.insertScores(project_id, batch);
  const seconds = (performance.now() - started) / 1000;
  await store.close();
  return STORAGE_ROWS / seconds;
}

async function post(url: string, key: string, body: unknown, method = "POST") {
  const res = await fetch(url, {
    method,
    headers: { "content-type": "application/json", "x-agentmon-api-key": key },
    body: JSON.stringify(body),
  });
  if (!res.ok) throw new Error(`${method} ${url}: ${res.status} ${await res.text()}`);
}

/** Scores/s of POST /v2/scores through `npm start`. */
async function ingestRate(): Promise<{ scoresPerS: number; p99: number; failed: number }> {
  const server = await startAgentmon();
  try {
    for (let i = 0; i < SESSIONS; i++) {
      await post(`${server.url}/v2/create_session`, server.key, { session: { id: `bench-${i}` } });
    }
    await post(`${server.url}/v2/score-configs/quality`, server.key, { data_type: "numeric", min: 0, max: 1 }, "PUT");
    let call = 0;
    const body = () => {
      const c = call++;
      return JSON.stringify({
        scores: Array.from({ length: PER_CALL }, (_, i) => {
          const n = c * PER_CALL + i;
          return {
            id: `s-${c}-${i}`,
            name: "quality",
            value: (n % 100) / 100,
            session_id: `bench-${n % SESSIONS}`,
            ...(n % 3 === 0 ? { event_id: `event-${n % 50}`, comment: "a short explanation of the judgement" } : {}),
            source: "eval",
          };
        }),
      });
    };
    const run = (seconds: number) =>
      autocannon({
        url: `${server.url}/v2/scores`,
        connections: CONNECTIONS,
        duration: seconds,
        requests: [
          {
            method: "POST",
            setupRequest: (request) => ({
              ...request,
              headers: { "content-type": "application/json", "x-agentmon-api-key": server.key },
              body: body(),
            }),
          },
        ],
      });
    await run(WARMUP);
    const result = await run(SECONDS);
    return {
      scoresPerS: (result.requests.total * PER_CALL) / SECONDS,
      p99: result.latency.p99,
      failed: result.non2xx + result.errors,
    };
  } finally {
    await server.stop();
  }
}

const dir = mkdtempSync(join(tmpdir(), "agentmon-bench-scores-"));
try {
  log(`agentmon bench:scores${quick ? " --quick" : ""}: ${PER_CALL} scores a call, ${CONNECTIONS} connections`);
  const limit = await storageLimit(dir);
  log(`  storage limit: ${fmt(limit)} scores/s (Store.insertScores, 1000-row transactions, no HTTP)`);
  const run = await ingestRate();
  log(
    `  POST /v2/scores: ${fmt(run.scoresPerS)} scores/s (${(run.scoresPerS / limit).toFixed(2)}× storage limit), p99 ${run.p99} ms, ${run.failed} failed`,
  );
} finally {
  rmSync(dir, { recursive: true, force: true });
}
