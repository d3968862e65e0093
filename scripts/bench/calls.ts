/**
 * The write cost of per-session work done once per call (docs/decisions/022-session-totals.md):
 * B1's and B2's storage shape without HTTP. 50 sessions; each turn, one insertEvents call per
 * session, all at once, so that the group commit takes them together as it does under B1; events
 * per call as given. Prints events/s and the CPU time of this process per event, the steadier
 * figure on a shared machine for SQLite, whose work is all in this process (for PostgreSQL the
 * work is in the server: compare events/s over many alternating runs).
 *
 *   node --import tsx scripts/bench/calls.ts <sqlite|postgres> <events per call> <seconds> [postgres url]
 *
 * To compare two revisions, run it from each checkout in turn (A B B A ...).
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { openPostgresStore } from "../../db/postgres/store.ts";
import { openDb } from "../../db/sqlite/open.ts";
import { sqliteStore } from "../../db/sqlite/store.ts";
import type { Store } from "../../db/store.ts";
import { newEvent, readEvent } from "../../domain/records.ts";
import { timestampFromMillis } from "../../domain/timestamps.ts";
import type { EventRecord } from "../../domain/types.ts";
import { eventBatch } from "../load.ts";

const [engine = "sqlite", perCallText = "100", secondsText = "8", url = ""] = process.argv.slice(2);
const perCall = Number(perCallText);
const dir = mkdtempSync(join(tmpdir(), "agentmon-calls-"));
const store: Store =
  engine === "postgres" ? await openPostgresStore({ url }) : sqliteStore(openDb(join(dir, "calls.db")));
const { project_id: p } = await store.createApiKey(
  `calls-${process.pid}-${Date.now()}`,
  "callsxxx",
  `calls-${process.pid}-${Date.now()}`,
  new Date().toISOString(),
);
const received = timestampFromMillis(Date.now());
const sessions = Array.from({ length: 50 }, (_, i) => `calls-${process.pid}-${Date.now()}-${i}`);
for (const id of sessions) {
  await store.createSession(p, {
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
}
const records = (n: number): EventRecord[] =>
  eventBatch(n).events.map((raw, index) => {
    const input = readEvent(raw, `events[${index}]`, [], "id");
    return newEvent(input as Parameters<typeof newEvent>[0], String(raw.id), received);
  });
const prepared = Array.from({ length: 20 }, () => records(perCall));
let turn = 0;
let events = 0;
async function run(until: number) {
  while (performance.now() < until) {
    await Promise.all(
      sessions.map((id, i) => {
        const batch = (prepared[(turn + i) % prepared.length] as EventRecord[]).map((e, j) => ({
          ...e,
          id: `${turn}-${i}-${j}`,
        }));
        return store.insertEvents(p, id, batch);
      }),
    );
    turn++;
    events += sessions.length * perCall;
  }
}
await run(performance.now() + 1000); // warm-up
events = 0;
const started = performance.now();
const cpu0 = process.cpuUsage();
await run(started + Number(secondsText) * 1000);
const seconds = (performance.now() - started) / 1000;
const cpu = process.cpuUsage(cpu0);
await store.close();
rmSync(dir, { recursive: true, force: true });
process.stdout.write(
  `${JSON.stringify({ engine, perCall, eventsPerS: Math.round(events / seconds), cpuUsPerEvent: (cpu.user + cpu.system) / events })}\n`,
);
