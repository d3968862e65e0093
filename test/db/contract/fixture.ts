/** How the Store contract opens the adapter under test: a bare store, or one with two projects. */
import type { Test } from "tap";
import type { Store } from "../../../db/store.ts";
import { T0, WHOLE } from "./values.ts";

/** A store as the runner opened it. */
export interface Opened {
  store: Store;
  /**
   * Reads of the same database through another connection, which sees only what is committed:
   * the G7 checks look through it. Optional; without it they are skipped.
   */
  committed?: Pick<Store, "readSession" | "apiKeyById">;
  /** The rows of every table of the database, by table (what retention removes is counted). Optional. */
  rows?: () => Promise<Record<string, number>>;
  /**
   * Every projection's rows by table (docs/decisions/033-projections.md), read directly: the
   * contract compares them with a rebuild from the raw rows. Optional.
   */
  derived?: () => Promise<Record<string, Record<string, unknown>[]>>;
}

export interface Adapter {
  /**
   * Opens a fresh, empty store on a new database, removed when `t` ends (the contract closes
   * the store itself, in a teardown registered after `open` returns, so before the runner's).
   */
  open(t: Test): Promise<Opened>;
  /** What ping must answer. */
  schemaVersion: number;
  /** Whether event breakdowns come from rollups (SQLite migration 011; PostgreSQL computes them exactly). */
  eventRollups?: boolean;
}

export type Fixtures = ReturnType<typeof fixtures>;

export function fixtures(adapter: Adapter) {
  /** A fresh store, closed when the test ends unless the test closed it. */
  async function bare(t: Test) {
    const { store, committed, rows, derived } = await adapter.open(t);
    let closed = false;
    t.teardown(() => (closed ? undefined : store.close()));
    const close = () => {
      closed = true;
      return store.close();
    };
    return { store, committed, rows, derived, close };
  }

  /** A fresh store with two projects, `p` (key `key`) and `other` (key `otherKey`). */
  async function fresh(t: Test) {
    const opened = await bare(t);
    const key = await opened.store.createApiKey("hash-mine", "minemine", "mine", T0);
    const otherKey = await opened.store.createApiKey("hash-theirs", "theirs00", "theirs", T0);
    const { store } = opened;
    return {
      ...opened,
      key,
      otherKey,
      p: key.project_id,
      other: otherKey.project_id,
      /** The session whole (agents and events), in that project. */
      snapshot: (project: string, id: string) => store.readSession(project, id, WHOLE),
    };
  }
  return { bare, fresh, schemaVersion: adapter.schemaVersion, eventRollups: adapter.eventRollups === true };
}
