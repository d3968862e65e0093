/**
 * `agentmon rebuild [--resume]` (docs/decisions/033-projections.md) on a real file: projections
 * damaged behind the projector's back (a total, a rollup, a share) are made again from the raw
 * rows, with progress on stderr and one line on stdout; `--resume` finishes a rebuild that was
 * queued and not projected, without emptying anything again; a file nobody wrote rebuilds to
 * nothing, exit 0.
 */
import { join } from "node:path";
import Database from "better-sqlite3";
import t from "tap";
import { openDb } from "../db/sqlite/open.ts";
import { sqliteStore } from "../db/sqlite/store.ts";
import { differences, drain } from "./db/contract/projections.ts";
import { eventAt, newSession } from "./db/contract/values.ts";
import { DERIVED } from "./db/sqlite-committed.ts";
import { tempDir } from "./helper.ts";
import { run } from "./server.helpers.ts";

const derivedOf = (path: string) => {
  const db = new Database(path, { readonly: true });
  try {
    return Object.fromEntries(Object.entries(DERIVED).map(([name, sql]) => [name, db.prepare(sql).all()]));
  } finally {
    db.close();
  }
};

async function written(path: string) {
  const store = sqliteStore(openDb(path), { checkpointer: false });
  const { project_id: p } = await store.createApiKey("hash", "abcdefgh", "p", "2026-01-01T00:00:00Z");
  for (let i = 0; i < 5; i++) {
    await store.createSession(p, newSession(`s${i}`));
    await store.insertEvents(p, `s${i}`, [
      eventAt(`a${i}`, Date.UTC(2026, 0, 1) * 1000 + i, { cost: i / 3 }, Date.UTC(2026, 0, 1) * 1000 + 9_000 * i),
      eventAt(`t${i}`, Date.UTC(2026, 0, 1) * 1000 + i, { type: "tool", model: null, fields: { name: "search" } }),
    ]);
  }
  await drain(store);
  await store.close();
  return derivedOf(path);
}

t.test("rebuild: damaged projections are made again from the raw rows", async (t) => {
  const path = join(tempDir(t), "agentmon.db");
  const good = await written(path);
  const db = new Database(path);
  db.exec(`UPDATE sessions SET cost = 999, event_count = 0; DELETE FROM session_rollups;
    UPDATE session_shares SET share = '{"broken":true}' WHERE session_pk = (SELECT min(session_pk) FROM session_shares)`);
  db.close();
  t.not(differences(derivedOf(path), good).length, 0, "the projections are damaged");

  const { code, out, err } = await run(["rebuild"], path);
  t.equal(code, 0, "exit 0");
  t.match(err.join("\n"), /rebuilding the projections: \d+ changes to project/, "says what it is doing");
  t.match(out.join("\n"), /^Projections rebuilt from the raw rows: \d+ changes projected in [\d.]+ s\.$/m);
  t.strictSame(differences(derivedOf(path), good), [], "every projection as the writes had made it");
});

t.test("rebuild --resume: finishes what is queued, empties nothing", async (t) => {
  const path = join(tempDir(t), "agentmon.db");
  const good = await written(path);
  // A rebuild stopped right after it queued everything: the projections are empty, the queue full.
  const store = sqliteStore(openDb(path), { checkpointer: false });
  await store.rebuildProjections();
  const queued = (await store.stats()).projection?.backlog ?? 0;
  await store.close();
  t.ok(queued >= 5, `${queued} changes queued`);

  const { code, out, err } = await run(["rebuild", "--resume"], path);
  t.equal(code, 0);
  t.match(err.join("\n"), new RegExp(`resuming the projections: ${queued} changes to project`));
  t.match(out.join("\n"), new RegExp(`${queued} changes projected`));
  t.strictSame(differences(derivedOf(path), good), [], "every projection");
});

t.test("rebuild on an empty database: nothing to do, exit 0", async (t) => {
  const path = join(tempDir(t), "agentmon.db");
  const { code, out } = await run(["rebuild"], path);
  t.equal(code, 0);
  t.match(out.join("\n"), /: 0 changes projected/);
});

t.test("rebuild with an unknown flag: usage, exit 1, nothing changed", async (t) => {
  const path = join(tempDir(t), "agentmon.db");
  const { code, err } = await run(["rebuild", "--everything"], path);
  t.equal(code, 1);
  t.match(err.join("\n"), /Unknown option '--everything'/);
});
