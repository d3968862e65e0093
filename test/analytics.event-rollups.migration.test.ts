/**
 * SQLite migration 011 (docs/decisions/027-event-rollups.md) fills the event rollups from the
 * events a version-10 file holds: the same rows the write path keeps. A file is written through
 * the Store (every kind of event write), its rollup tables are read, then taken back to version
 * 10 (the tables and triggers dropped) and opened again: the migration must rebuild the same
 * sums, the same histogram counts, and breakdowns equal to the exact ones.
 */
import { join } from "node:path";
import t from "tap";
import { openDb } from "../db/sqlite/open.ts";
import { sqliteStore } from "../db/sqlite/store.ts";
import { type BreakdownBy, breakdownRollupPlan } from "../domain/analytics.ts";
import { eventAt, newSession } from "./db/contract/values.ts";
import { iso, patch, US0 } from "./db/records.ts";
import { tempDir } from "./helper.ts";

const SECOND = 1_000_000;
const HOUR = 3600 * SECOND;

/** The rollup tables' rows that hold something, in key order (emptied rows are left by writes). */
function tables(path: string) {
  const db = openDb(path);
  try {
    return {
      session_keys: db
        .prepare("SELECT * FROM session_keys WHERE events <> 0 ORDER BY session_pk, dim, key")
        .raw(true)
        .all(),
      event_rollups: db
        .prepare(
          `SELECT project_id, dim, level, slot_us, key, sessions, failures, events, error_events, prompt_tokens,
             completion_tokens, round(cost, 9) FROM event_rollups WHERE sessions <> 0 ORDER BY 1, 2, 3, 4, 5`,
        )
        .raw(true)
        .all(),
      event_rollup_durations: db
        .prepare(
          "SELECT project_id, dim, level, slot_us, key, bucket, n FROM event_rollup_durations WHERE n <> 0 ORDER BY 1, 2, 3, 4, 5, 6",
        )
        .raw(true)
        .all(),
    };
  } finally {
    db.close();
  }
}

t.test("SQLite: migration 011 rolls up the events of a version-10 file as the writes do", async (t) => {
  const path = join(tempDir(t), "v10.db");
  let store = sqliteStore(openDb(path));
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
        { type: "tool", model: null, fields: { name: i % 3 ? "search" : "fetch" } },
        init + 3 * SECOND + i,
      ),
      eventAt("n", init + 2 * SECOND, { model: null }, init + 4 * SECOND),
      eventAt("e", init + 5 * SECOND, {
        type: "error",
        model: null,
        fields: { trigger_event_id: i % 2 ? "a" : "later" },
      }),
    ]);
    if (i % 2 === 0) {
      await store.insertEvents(p, `s${i}`, [
        eventAt("later", init + 6 * SECOND, { type: "action", model: null }, init + 7 * SECOND),
      ]);
    }
  }
  await store.updateEvents(p, "s3", [patch({ event_id: "a", model: "m3", cost: 9 })]);
  await store.updateSession(p, "s4", { init_us: US0 + 30 * HOUR, init_timestamp: iso(US0 + 30 * HOUR), extra: {} });
  await store.updateSession(p, "s5", { end_state: "Fail", extra: {} });
  await store.close();
  const written = tables(path);
  t.ok(written.event_rollups.length > 10 && written.event_rollup_durations.length > 10, "the writes rolled up");

  const db = openDb(path);
  for (const { name } of db
    .prepare(
      "SELECT name FROM sqlite_master WHERE type = 'trigger' AND (name LIKE 'session_keys_%' OR name LIKE 'sessions_event_rollups_%')",
    )
    .all() as { name: string }[]) {
    db.exec(`DROP TRIGGER ${name}`);
  }
  db.exec(
    "DROP TABLE session_keys; DROP TABLE event_rollups; DROP TABLE event_rollup_durations; PRAGMA user_version = 10",
  );
  db.close();

  store = sqliteStore(openDb(path));
  t.teardown(() => store.close());
  t.strictSame(tables(path), written, "migration 011 made the rows the writes had made");
  const range = { from_us: US0 - 2 * HOUR - 5, to_us: US0 + 40 * HOUR + 5 };
  for (const by of ["model", "type", "tool"] as BreakdownBy[]) {
    t.ok(breakdownRollupPlan(range, by), `${by}: from the rollups`);
    const rolled = await store.analyticsBreakdown(p, range, { by, sort: "events", limit: 100 });
    const exact = await store.analyticsBreakdown(
      p,
      { ...range, min_duration_us: 0 },
      { by, sort: "events", limit: 100 },
    );
    t.equal(rolled.percentiles, "approximate");
    t.strictSame(
      rolled.items.map(({ p50_us, p95_us, p99_us, ...sums }) => sums),
      exact.items.map(({ p50_us, p95_us, p99_us, ...sums }) => sums),
      `${by}: the sums of the exact breakdown`,
    );
  }
  // Written after the migration: the triggers are back.
  await store.insertEvents(p, "s1", [eventAt("x", US0 + 3 * SECOND, { model: "m9" }, US0 + 8 * SECOND)]);
  const after = await store.analyticsBreakdown(p, range, { by: "model", sort: "events", limit: 100 });
  t.ok(
    after.items.some((g) => g.key === "m9" && g.events === 1 && g.sessions === 1),
    "an event written after the migration counts",
  );
});
