/**
 * The contract's `committed` probe for the SQLite runners (store.contract.ts, G7): the store's
 * own reads, on a second, read-only connection to the same file, which sees only what is
 * committed. Closed when the test ends, after the store (teardowns run last first).
 */
import type { Test } from "tap";
import { openReader } from "../../db/sqlite/open.ts";
import { sqliteStore } from "../../db/sqlite/store.ts";

export function committedReader(t: Test, path: string) {
  const reader = sqliteStore(openReader(path), { checkpointer: false });
  t.teardown(() => reader.close());
  return reader;
}
