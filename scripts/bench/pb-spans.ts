/**
 * B7's storage limit, in its own process, measured as scripts/bench/storage.ts measures B1's: the
 * rows agentmon stores for B7's spans (scripts/bench/otlp.ts bodies, decoded, checked, mapped
 * and priced as services/otlp.ts does, before the clock starts), written straight through
 * agentmon's schema and Store (`ingestTraces`: sessions, events, agents) in transactions of
 * about `batch` spans (whole requests' traces), with no HTTP, no decoding and no mapping.
 *
 *   node --import tsx scripts/bench/storage-spans.ts <db file> <spans> <batch> <api key>
 *
 * Prints one JSON line: {"rows", "seconds", "rows_per_s"} (rows: span events).
 */
import { randomUUID } from "node:crypto";
import { openDb } from "/work/main/db/sqlite/open.ts";
import { sqliteStore } from "/work/main/db/sqlite/store.ts";
import { hashApiKey, keyPrefix } from "/work/main/domain/keys.ts";
import { priceEvent, priceTable } from "/work/main/domain/prices.ts";
import type { SpanEventRecord, TraceWrite } from "/work/main/domain/types.ts";
import { decodeTraces } from "/work/main/ingest/otlp/decode.ts";
import { mapTraces, traceIdToSessionId } from "/work/main/ingest/otlp/map.ts";
import { acceptSpans } from "/work/main/ingest/otlp/validate.ts";
import { otlpBodies, SPANS_PER_REQUEST } from "/work/main/scripts/bench/otlp.ts";

const [path = "", total = "100000", batchSize = "1000", key = randomUUID()] = process.argv.slice(2);
const spans = Number(total);
const perTransaction = Math.max(1, Math.round(Number(batchSize) / SPANS_PER_REQUEST));

const store = sqliteStore(openDb(path));
const existing = await store.apiKeyByHash(hashApiKey(key));
const projectId = existing
  ? existing.project_id
  : (await store.createApiKey(hashApiKey(key), keyPrefix(key), "default", new Date().toISOString())).project_id;

const prices = priceTable();
const bodies = otlpBodies();
/** One transaction's traces: `perTransaction` requests' writes, exactly as the service builds them. */
function transaction(): TraceWrite[] {
  return Array.from({ length: perTransaction }, () => {
    const writes = mapTraces(acceptSpans(decodeTraces(bodies.next())).request);
    for (const write of writes) {
      write.events = write.events.map((event) => priceEvent(event, prices) as SpanEventRecord);
    }
    return writes;
  }).flat();
}

// Build the transactions first (bounded: 20 are reused with fresh trace ids, that is new sessions,
// when more are needed; a span's rows do not depend on its trace id).
const requests = Math.ceil(spans / SPANS_PER_REQUEST);
const transactions = Math.ceil(requests / perTransaction);
const prepared = Array.from({ length: Math.min(20, transactions) }, transaction);
const prefix = randomUUID().replaceAll("-", "").slice(0, 16);
let next = 0;
const freshId = () => traceIdToSessionId(`${prefix}${(++next).toString(16).padStart(16, "0")}`);
let inserted = 0;
const started = process.hrtime.bigint();
for (let round = 0; round < transactions; round++) {
  const slot = prepared[round % prepared.length] as TraceWrite[];
  const writes = round < prepared.length ? slot : slot.map((write) => ({ ...write, session_id: freshId() }));
  await store.ingestTraces(projectId, writes);
  for (const write of writes) inserted += write.events.length;
}
const written = Number(process.hrtime.bigint() - started) / 1e9;
while ((await store.projectBatch()) > 0) {}
const seconds = Number(process.hrtime.bigint() - started) / 1e9;
process.stdout.write(`written ${written.toFixed(2)} s, projected ${(seconds - written).toFixed(2)} s\n`);
await store.close();
process.stdout.write(`${JSON.stringify({ rows: inserted, seconds, rows_per_s: Math.round(inserted / seconds) })}\n`);
