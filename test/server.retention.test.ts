/**
 * Retention from the command line, in-process through main() on a real database file:
 * `projects list|set-retention`, `sessions delete`, `vacuum`; and the sweep on a file with
 * incremental auto-vacuum, which shrinks it.
 */
import { statSync } from "node:fs";
import { join } from "node:path";
import t from "tap";
import { openDb } from "../db/sqlite/open.ts";
import { sqliteStore } from "../db/sqlite/store.ts";
import { Metrics } from "../services/metrics.ts";
import { startSweeper, sweep } from "../services/retention.ts";
import { iso, newEvent, newSession } from "./db/records.ts";
import { tempDir } from "./helper.ts";
import { run, seedKeys } from "./server.helpers.ts";

const DAY_US = 86_400_000_000;
const NOW_US = Date.UTC(2026, 11, 1) * 1000;

/** `n` sessions of the project, each with `events` events of about 2 KB, starting `daysAgo` days before NOW. */
async function fill(db: string, project: string, prefix: string, n: number, daysAgo: number, events = 5) {
  const store = sqliteStore(openDb(db), { checkpointer: false });
  const projectId = (await store.listProjects()).find((p) => p.name === project)?.id as string;
  const start = NOW_US - daysAgo * DAY_US;
  for (let i = 0; i < n; i++) {
    await store.createSession(
      projectId,
      newSession(`${prefix}${i}`, { init_us: start + i, init_timestamp: iso(start + i) }),
    );
    await store.insertEvents(
      projectId,
      `${prefix}${i}`,
      Array.from({ length: events }, (_, e) =>
        newEvent(`e${e}`, {
          init_us: start + i + e,
          init_timestamp: iso(start + i + e),
          fields: { prompt: "x".repeat(2000) },
        }),
      ),
    );
  }
  await store.close();
}

t.test("projects list and set-retention", async (t) => {
  const db = join(tempDir(t), "p.db");
  await seedKeys(db, "alpha", ["11111111-1111-4111-8111-111111111111"]);
  await seedKeys(db, "beta", ["22222222-2222-4222-8222-222222222222"]);
  let r = await run(["projects", "list"], db);
  t.equal(r.code, 0);
  t.strictSame(r.out, [
    "alpha  retention default (AGENTMON_RETENTION_DAYS)",
    "beta  retention default (AGENTMON_RETENTION_DAYS)",
  ]);
  r = await run(["projects", "set-retention", "alpha", "30"], db);
  t.equal(r.code, 0);
  t.strictSame(r.out, ['Project "alpha": retention 30 days.']);
  r = await run(["projects", "set-retention", "beta", "forever"], db);
  t.strictSame(r.out, ['Project "beta": retention forever.']);
  t.strictSame((await run(["projects", "list"], db)).out, ["alpha  retention 30 days", "beta  retention forever"]);
  r = await run(["projects", "set-retention", "alpha", "default"], db);
  t.strictSame(r.out, ['Project "alpha": retention default (AGENTMON_RETENTION_DAYS).']);

  for (const [args, pattern] of [
    [["projects", "set-retention", "alpha", "-1"], /Unknown option '-1'/],
    [["projects", "set-retention", "alpha", "1.5"], /the retention must be a whole number of days/],
    [["projects", "set-retention", "alpha", "0"], /the retention must be a whole number of days/],
    [["projects", "set-retention", "alpha"], /needs a project and a number of days/],
    [["projects", "set-retention", "nobody", "5"], /no project is named "nobody"/],
  ] as [string[], RegExp][]) {
    r = await run(args, db);
    t.equal(r.code, 1, `${args.join(" ")}: exit 1`);
    t.match(r.err.join("\n"), pattern);
  }
  t.equal((await run(["projects", "nope"], db)).code, 2, "an unknown subcommand");
});

t.test("sessions delete --before [--tag] [--dry-run]", async (t) => {
  const db = join(tempDir(t), "s.db");
  await seedKeys(db, "default", ["11111111-1111-4111-8111-111111111111"]);
  await fill(db, "default", "old", 3, 40, 2);
  await fill(db, "default", "new", 2, 1, 2);
  const before = new Date((NOW_US - 10 * DAY_US) / 1000).toISOString();
  let r = await run(["sessions", "delete", "--before", before, "--dry-run"], db);
  t.equal(r.code, 0);
  t.match(r.out[0], /^Would delete 3 sessions and 6 events of project "default"/);
  r = await run(["sessions", "delete", "--before", before, "--tag", "nope"], db);
  t.match(r.out[0], /^Deleted 0 sessions/);
  r = await run(["sessions", "delete", "--before", before], db);
  t.match(r.out[0], /^Deleted 3 sessions and 6 events/);
  r = await run(["sessions", "delete", "--before", "last week"], db);
  t.equal(r.code, 1);
  t.match(r.err[0], /--before/);
});

t.test("the sweep removes idle sessions by each project's retention, counts them, and the file shrinks", async (t) => {
  const db = join(tempDir(t), "sweep.db");
  await seedKeys(db, "short", ["11111111-1111-4111-8111-111111111111"]);
  await seedKeys(db, "forever", ["22222222-2222-4222-8222-222222222222"]);
  await fill(db, "short", "old", 200, 60);
  await fill(db, "short", "new", 20, 1);
  await fill(db, "forever", "kept", 20, 60);
  t.equal((await run(["projects", "set-retention", "forever", "forever"], db)).code, 0);

  const conn = openDb(db);
  t.equal(conn.pragma("auto_vacuum", { simple: true }), 2, "a new file has incremental auto-vacuum");
  const pages = () => Number(conn.pragma("page_count", { simple: true }));
  conn.pragma("wal_checkpoint(TRUNCATE)");
  const pagesBefore = pages();
  const bytesBefore = statSync(db).size;
  const store = sqliteStore(conn, { checkpointer: false });
  const metrics = new Metrics(() => store.stats());
  const removed = await sweep({ store, defaultDays: 30, now: () => NOW_US / 1000, metrics });
  t.strictSame(removed, { sessions: 200, events: 1000 }, "the idle sessions of the project with a retention");
  const projects = await store.listProjects();
  const idOf = (name: string) => projects.find((p) => p.name === name)?.id as string;
  t.equal((await store.listSessions(idOf("short"), {}, undefined, 200)).items.length, 20, "the recent ones stay");
  t.equal((await store.listSessions(idOf("forever"), {}, undefined, 200)).items.length, 20, "forever: all stay");
  conn.pragma("wal_checkpoint(TRUNCATE)");
  t.ok(pages() < pagesBefore / 2, `pages: ${pagesBefore} before, ${pages()} after`);
  t.ok(statSync(db).size < bytesBefore / 2, `bytes: ${bytesBefore} before, ${statSync(db).size} after`);
  t.equal(Number(conn.pragma("freelist_count", { simple: true })), 0, "no free page left");
  const text = await metrics.exposition();
  t.match(text, /agentmon_retention_removed_total\{kind="sessions"\} 200/);
  t.match(text, /agentmon_retention_removed_total\{kind="events"\} 1000/);
  await store.close();
});

t.test("the sweeper runs shortly after start, then every interval, and stops cleanly", async (t) => {
  const db = join(tempDir(t), "sweeper.db");
  await seedKeys(db, "default", ["11111111-1111-4111-8111-111111111111"]);
  await fill(db, "default", "old", 5, 60, 1);
  const store = sqliteStore(openDb(db), { checkpointer: false });
  t.teardown(() => store.close());
  const swept: number[] = [];
  const sweeper = startSweeper({
    store,
    defaultDays: 30,
    now: () => NOW_US / 1000,
    firstDelayMs: 10,
    intervalMs: 50,
    onSwept: (removed) => swept.push(removed.sessions),
  });
  await new Promise((resolve) => setTimeout(resolve, 200));
  t.strictSame(swept, [5], "the first sweep removed them; the later ones found none");
  t.strictSame(await sweeper.runNow(), { sessions: 0, events: 0 });
  await sweeper.stop();
});

t.test("vacuum turns incremental auto-vacuum on for an older file", async (t) => {
  const db = join(tempDir(t), "old.db");
  const conn = openDb(db);
  conn.close();
  // An older file: auto_vacuum NONE, as every file made before retention.
  const raw = openDb(db);
  raw.pragma("auto_vacuum = NONE");
  raw.exec("VACUUM");
  t.equal(raw.pragma("auto_vacuum", { simple: true }), 0, "NONE before");
  raw.close();
  const r = await run(["vacuum"], db);
  t.equal(r.code, 0);
  t.match(r.out[0], /incremental auto-vacuum is now on/);
  t.match(r.err[0], /writes wait until it ends/);
  const after = openDb(db);
  t.equal(after.pragma("auto_vacuum", { simple: true }), 2, "INCREMENTAL after");
  after.close();
});
