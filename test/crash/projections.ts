/**
 * The crash test's check of the projections (docs/decisions/033-projections.md): the file as a
 * kill left it (copied with SQLite's online backup while the restarted server runs) is projected
 * to the end of its queue, and every projection then equals a rebuild from the raw rows, table by
 * table: a kill in the middle of a batch left each projection exactly at the queue.
 */
import { rmSync } from "node:fs";
import Database from "better-sqlite3";
import type { Test } from "tap";
import { openDb } from "../../db/sqlite/open.ts";
import { sqliteStore } from "../../db/sqlite/store.ts";
import { differences, drain } from "../db/contract/projections.ts";
import { DERIVED } from "../db/sqlite-committed.ts";

const rowsOf = (db: Database.Database) =>
  Object.fromEntries(Object.entries(DERIVED).map(([name, sql]) => [name, db.prepare(sql).all()]));

export async function verifyProjections(t: Test, file: string, what: string) {
  const copy = `${file}.copy`;
  const source = new Database(file, { readonly: true });
  try {
    await source.backup(copy);
  } finally {
    source.close();
  }
  const db = openDb(copy);
  const store = sqliteStore(db, { checkpointer: false });
  try {
    const queued = (await store.stats()).projection?.backlog ?? 0;
    await drain(store);
    const projected = rowsOf(db);
    await store.rebuildProjections();
    await drain(store);
    const diff = differences(projected, rowsOf(db));
    t.strictSame(
      diff.slice(0, 10),
      [],
      `${what}: with the ${queued} changes queued at the kill projected, every projection equals a rebuild`,
    );
  } finally {
    await store.close();
    for (const suffix of ["", "-wal", "-shm"]) rmSync(`${copy}${suffix}`, { force: true });
  }
}
