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

/** The rows of every table of the file, through a read-only connection of its own (the contract's `rows`). */
export function tableRows(t: Test, path: string) {
  let reader: ReturnType<typeof openReader> | undefined;
  t.teardown(() => reader?.close());
  return async () => {
    reader ??= openReader(path);
    const tables = reader
      .prepare<[], string>(
        // Not the shadow tables of the FTS5 indexes (their rows are segments, not documents).
        `SELECT name FROM sqlite_schema WHERE type = 'table' AND name NOT LIKE 'sqlite_%'
           AND name NOT GLOB '*_search_[dic]*' ORDER BY name`,
      )
      .pluck()
      .all();
    return Object.fromEntries(
      tables.map((name) => [name, reader?.prepare(`SELECT count(*) FROM "${name}"`).pluck().get() as number]),
    );
  };
}
