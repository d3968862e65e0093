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

/**
 * Every projection's rows (docs/decisions/033-projections.md), through a read-only connection of
 * their own, each table in its key's order (the contract's `derived`).
 */
export function derivedRows(t: Test, path: string) {
  let reader: ReturnType<typeof openReader> | undefined;
  t.teardown(() => reader?.close());
  return async () => {
    reader ??= openReader(path);
    const db = reader;
    return Object.fromEntries(
      Object.entries(DERIVED).map(([name, sql]) => [name, db.prepare(sql).all() as Record<string, unknown>[]]),
    );
  };
}

/** The projections' tables, as each engine's runner reads them (the same SQL on both). */
export const DERIVED: Record<string, string> = {
  totals: `SELECT pk, event_count, llm_count, tool_count, action_count, error_count, prompt_tokens,
    completion_tokens, cache_read_tokens, cache_creation_tokens, reasoning_tokens, cost, first_us, last_us,
    duration_us FROM sessions ORDER BY pk`,
  session_models: "SELECT * FROM session_models ORDER BY session_pk, model",
  session_rollups: "SELECT * FROM session_rollups ORDER BY project_id, slot_us",
  session_rollup_durations: "SELECT * FROM session_rollup_durations ORDER BY project_id, slot_us, bucket",
  event_rollups: "SELECT * FROM event_rollups ORDER BY project_id, dim, level, slot_us, key",
  event_rollup_durations: "SELECT * FROM event_rollup_durations ORDER BY project_id, dim, level, slot_us, key, bucket",
  session_shares: "SELECT session_pk, share FROM session_shares ORDER BY session_pk",
  score_facts: `SELECT session_pk, score_pk, project_id, name, dim, key, data_type, num, label, source, time_us
    FROM score_facts ORDER BY session_pk, score_pk, dim, key`,
  response_spans: "SELECT * FROM response_spans ORDER BY session_pk, event_id, response_id",
};

/**
 * The tables that hold projections (or feed them): a test proving that a call wrote nothing reads
 * the other tables, since the projector may catch up on earlier writes meanwhile.
 */
export const PROJECTION_TABLES =
  /^(projection_queue|session_shares|session_models|session_rollup|event_rollup|event_search|session_search|score_facts|response_spans)/;
