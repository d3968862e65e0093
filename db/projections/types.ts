/**
 * The shapes of the projections (docs/decisions/033-projections.md): what a projection is given
 * (a batch of changed sessions) and the writes it answers, which each engine's projector runs.
 */
import type { Share } from "./share.ts";

/** A session in a batch: its share as projected so far (none: new) and now (none: deleted). */
export interface Change {
  pk: number;
  before: Share | undefined;
  after: Share | undefined;
  /**
   * The session's scores and what their groups need (./scores.ts), when it has scores or its
   * scores changed; undefined: nothing of score analytics changes.
   */
  scored?: Scored | undefined;
  /**
   * Events of the session whose stored `extra` mentions `gen_ai.response.id` (./responses.ts):
   * all of them (`whole`) when it is counted again, else the ones added; undefined: none changed.
   */
  responses?: { whole: boolean; events: ResponseEvent[] } | undefined;
}

/**
 * A table of sums: a row per key, written by adding signed amounts; the largest of `max` is kept;
 * a row whose `count` falls to 0 is removed (nothing is left in it).
 */
export interface SumTable {
  name: string;
  keys: readonly string[];
  sums: readonly string[];
  /** The column that counts what is in the row (one of `sums`). */
  count: string;
  max?: string;
}

/** A table of rows per session, replaced whole for the sessions of a batch. */
export interface SessionTable {
  name: string;
  /** Its columns, session_pk first. */
  columns: readonly string[];
}

/** An event given to the response projection (./responses.ts): its stored `extra`, or the response id its writer read already. */
export type ResponseEvent = { id: string; extra: string } | { id: string; response: string };

export type Write =
  /** Rows of `table`: keys, then signed sums, then the max when the table has one. */
  | { kind: "add"; table: SumTable; rows: unknown[][] }
  /** The rows of these sessions replaced by `rows` (session_pk first). */
  | { kind: "replace"; table: SessionTable; pks: number[]; rows: unknown[][] }
  /** Rows added to a table of rows per session (a row already there is left as it is). */
  | { kind: "insert"; table: SessionTable; rows: unknown[][] }
  /** Columns of the sessions' rows set: [pk, ...values] in the order of `columns`. */
  | { kind: "session"; columns: readonly string[]; rows: unknown[][] };

export interface Projection {
  /** Its name, for `agentmon rebuild <name>`, and its version: a new one is rebuilt. */
  name: string;
  version: number;
  /** The tables a rebuild empties first. */
  tables: readonly string[];
  apply(changes: readonly Change[]): Write[];
}

/** A score as the projector reads it. */
export interface ScoreFact {
  pk: number;
  name: string;
  data_type: string;
  num: number | null;
  label: string | null;
  source: string;
  time_us: number;
  event_id: string | null;
}

/** An event a score names: its kind, model, tool name and agent. */
export interface ScoredEvent {
  id: string;
  type: string;
  model: string | null;
  tool: string | null;
  agent: string | null;
}

/** What the projector loads of a session that has scores, or had some. */
export interface Scored {
  /** Only the scores added since the session was last projected (nothing else of it changed). */
  appended?: boolean;
  scores: ScoreFact[];
  tags: string[];
  agents: string[];
  events: ScoredEvent[];
}
