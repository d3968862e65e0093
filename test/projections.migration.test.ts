/**
 * SQLite migration 012 (docs/decisions/033-projections.md): a file an older agentmon wrote (schema
 * version 11, its totals and rollups kept by triggers and by the writing code) opens with every
 * projection queued and made again from its raw rows by the projector. The raw rows of a file the
 * current code wrote are copied into a version-11 file (its triggers fire as that version's did);
 * once migrated, every projection equals the one the current code kept while writing, and the
 * answers equal the exact scans.
 */
import { join } from "node:path";
import t from "tap";
import { openDb } from "../db/sqlite/open.ts";
import { sqliteStore } from "../db/sqlite/store.ts";
import type { Store } from "../db/store.ts";
import { differences, drain } from "./db/contract/projections.ts";
import { eventAt, newSession } from "./db/contract/values.ts";
import { iso, patch, US0 } from "./db/records.ts";
import { DERIVED } from "./db/sqlite-committed.ts";
import { fileAtVersion, tempDir } from "./helper.ts";

const SECOND = 1_000_000;
const HOUR = 3600 * SECOND;

/** Every kind of write, on sessions spread over hours; answers the project. */
async function write(store: Store) {
  const key = await store.createApiKey("hash", "abcdefgh", "p", "2026-01-01T00:00:00Z");
  const p = key.project_id;
  for (let i = 0; i < 12; i += 1) {
    const init = US0 + i * 37 * 60 * SECOND + i;
    await store.createSession(
      p,
      newSession(`s${i}`, {
        init_us: init,
        init_timestamp: iso(init),
        end_timestamp: i % 3 ? iso(init + 9 * SECOND) : null,
        end_state: i % 3 ? (i % 4 ? "Success" : "Fail") : null,
      }),
    );
    await store.insertEvents(p, `s${i}`, [
      eventAt("a", init + SECOND, { model: i % 2 ? "m1" : "m2", cost: 0.25 * i, prompt_tokens: i }, init + i * SECOND),
      eventAt(
        "t",
        init + 2 * SECOND,
        { type: "tool", model: null, fields: { name: i % 3 ? "search" : 7 } },
        init + 3 * SECOND,
      ),
      eventAt("e", init + 5 * SECOND, {
        type: "error",
        model: null,
        fields: { trigger_event_id: i % 2 ? "a" : "later" },
      }),
    ]);
    if (i % 2 === 0)
      await store.insertEvents(p, `s${i}`, [eventAt("later", init + 6 * SECOND, { type: "action", model: null })]);
  }
  await store.updateEvents(p, "s3", [patch({ event_id: "a", model: "m3", cost: 9 })]);
  await store.updateSession(p, "s4", { init_us: US0 + 30 * HOUR, init_timestamp: iso(US0 + 30 * HOUR), extra: {} });
  await store.deleteSession(p, "s7");
  return p;
}

const derivedOf = (path: string) => {
  const db = openDb(path);
  try {
    return Object.fromEntries(Object.entries(DERIVED).map(([name, sql]) => [name, db.prepare(sql).all()]));
  } finally {
    db.close();
  }
};

t.test("SQLite: migration 012 makes every projection of a version-11 file again from its raw rows", async (t) => {
  const dir = tempDir(t);
  const current = join(dir, "current.db");
  let store: Store = sqliteStore(openDb(current), { checkpointer: false });
  const p = await write(store);
  await drain(store);
  const range = { from_us: US0 - 2 * HOUR, to_us: US0 + 40 * HOUR };
  const before = {
    series: await store.analyticsSeries(p, {}, [{ lo: US0 - HOUR, hi: US0 + 40 * HOUR }]),
    breakdown: await store.analyticsBreakdown(p, range, { by: "tool", sort: "events", limit: 100 }),
    list: await store.listSessions(p, {}, undefined, 100),
  };
  await store.close();
  const expected = derivedOf(current);

  const old = join(dir, "v11.db");
  const v11 = fileAtVersion(old, 11);
  v11.exec(`ATTACH ${JSON.stringify(current).replaceAll('"', "'")} AS w`);
  for (const table of ["projects", "api_keys", "agents", "span_records", "session_logs"]) {
    v11.exec(`INSERT INTO main.${table} SELECT * FROM w.${table}`);
  }
  v11.exec(`INSERT INTO main.sessions (pk, id, project_id, init_timestamp, init_us, end_timestamp, end_state,
      end_state_reason, tags, host_env, extra, root_rank, conversation_id)
    SELECT pk, id, project_id, init_timestamp, init_us, end_timestamp, end_state, end_state_reason, tags, host_env,
      extra, root_rank, conversation_id FROM w.sessions`);
  v11.exec("INSERT INTO main.events SELECT * FROM w.events");
  v11.exec("DETACH w");
  v11.close();

  store = sqliteStore(openDb(old), { checkpointer: false });
  t.teardown(() => store.close());
  t.ok((await store.stats()).projection?.backlog, "every session is queued");
  t.strictSame(
    {
      series: await store.analyticsSeries(p, {}, [{ lo: US0 - HOUR, hi: US0 + 40 * HOUR }]),
      breakdown: await store.analyticsBreakdown(p, range, { by: "tool", sort: "events", limit: 100 }),
      list: await store.listSessions(p, {}, undefined, 100),
    },
    before,
    "the answers are those of the file the current code wrote",
  );
  await drain(store);
  t.strictSame(differences(derivedOf(old), expected).slice(0, 10), [], "every projection, table by table");
});
