import { join } from "node:path";
import Database from "better-sqlite3";
import type { Test } from "tap";
import { type DbOptions, openDb } from "../../db/sqlite/open.ts";
import { type SqliteStore, type StoreOptions, sqliteStore } from "../../db/sqlite/store.ts";
import { tempDir } from "../helper.ts";
import { newEvent, newSession } from "./records.ts";

export const session = (id: string) => newSession(id);

/** An llm event; `bytes` of prompt make it take room (a few pages for a batch of 50 at 4 KB). */
export const event = (id: string, bytes = 10) => newEvent(id, { fields: { prompt: "x".repeat(bytes) } });
export const events = (prefix: string, n: number, bytes = 10) =>
  Array.from({ length: n }, (_, i) => event(`${prefix}-${i}`, bytes));

export interface Fixture {
  path: string;
  db: Database.Database;
  store: SqliteStore;
  project: string;
  /** Another connection on the same file: it sees only what is committed. */
  reader: Database.Database;
  /** Rows committed to the file, as the reader sees them. */
  committed: {
    events(...ids: string[]): number;
    session(id: string): { end_state: string | null; end_state_reason: string | null } | undefined;
    agent(id: string): { name: string | null } | undefined;
  };
}

export async function fixture(t: Test, options: DbOptions = {}, storeOptions: StoreOptions = {}): Promise<Fixture> {
  const path = join(tempDir(t), "agentmon.db");
  const db = openDb(path, options);
  const store = sqliteStore(db, storeOptions);
  t.teardown(() => store.close());
  const project = (await store.createApiKey("hash", "hhhhhhhh", "p", "2026-11-22T00:00:00Z")).project_id;
  const reader = new Database(path, { readonly: true });
  t.teardown(() => reader.close());
  const eventCount = reader.prepare("SELECT count(*) FROM events WHERE id IN (SELECT value FROM json_each(?))");
  const sessionRow = reader.prepare("SELECT end_state, end_state_reason FROM sessions WHERE id = ?");
  const agentRow = reader.prepare("SELECT name FROM agents WHERE id = ?");
  return {
    path,
    db,
    store,
    project,
    reader,
    committed: {
      events: (...ids) => eventCount.pluck().get(JSON.stringify(ids)) as number,
      session: (id) => sessionRow.get(id) as ReturnType<Fixture["committed"]["session"]>,
      agent: (id) => agentRow.get(id) as ReturnType<Fixture["committed"]["agent"]>,
    },
  };
}

/** The SQLite code of a rejection (a storage fault keeps it as its cause), or "resolved". */
export const outcome = async (promise: Promise<unknown>) =>
  promise.then(
    () => "resolved",
    (error: unknown) => {
      const e = error as { code?: unknown; cause?: { code?: unknown }; message: string };
      return String(e.cause?.code ?? e.code ?? e.message);
    },
  );
