/**
 * The storage limit of `npm run bench`, in its own process: the same event rows agentmon stores,
 * inserted straight through agentmon's schema and Store (no HTTP, no JSON parsing, no
 * validation) in transactions of `batch` rows. The rows are built before the clock starts.
 * Also seeds a database for the growth scenario (B6).
 *
 *   node --import tsx scripts/bench/storage.ts <db file> <events> <batch> <api key>
 *
 * Prints one JSON line: {"rows", "seconds", "rows_per_s", "session_id"}.
 */
import { randomUUID } from "node:crypto";
import { openDb } from "../../db/sqlite/open.ts";
import { sqliteStore } from "../../db/sqlite/store.ts";
import { hashApiKey, keyPrefix } from "../../domain/keys.ts";
import { newEvent, readEvent } from "../../domain/records.ts";
import { timestampFromMillis } from "../../domain/timestamps.ts";
import type { EventRecord } from "../../domain/types.ts";
import { eventBatch } from "../load.ts";

const [path = "", total = "100000", batchSize = "1000", key = randomUUID()] = process.argv.slice(2);
const rows = Number(total);
const batch = Number(batchSize);

const store = sqliteStore(openDb(path));
const existing = await store.apiKeyByHash(hashApiKey(key));
const projectId = existing
  ? existing.project_id
  : (await store.createApiKey(hashApiKey(key), keyPrefix(key), "default", new Date().toISOString())).project_id;
const sessionId = randomUUID();
const received = timestampFromMillis(Date.now());
await store.createSession(projectId, {
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

/** Builds one transaction's rows exactly as create_events would. */
function records(n: number): EventRecord[] {
  return eventBatch(n).events.map((raw, index) => {
    const input = readEvent(raw, `events[${index}]`, [], "id");
    return newEvent(input as Parameters<typeof newEvent>[0], String(raw.id), received);
  });
}

// Build every batch first (bounded: 100 batches are reused with fresh ids when more are needed).
const prepared = Array.from({ length: Math.min(100, Math.ceil(rows / batch)) }, () => records(batch));
let inserted = 0;
let round = 0;
const started = process.hrtime.bigint();
while (inserted < rows) {
  const slot = prepared[round % prepared.length] as EventRecord[];
  const events = round < prepared.length ? slot : slot.map((e, i) => ({ ...e, id: `${round}-${i}-${e.id}` }));
  await store.insertEvents(projectId, sessionId, events.slice(0, rows - inserted));
  inserted += Math.min(events.length, rows - inserted);
  round++;
}
const seconds = Number(process.hrtime.bigint() - started) / 1e9;
await store.close();
process.stdout.write(
  `${JSON.stringify({ rows: inserted, seconds, rows_per_s: Math.round(inserted / seconds), session_id: sessionId })}\n`,
);
