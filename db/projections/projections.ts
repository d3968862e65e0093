/**
 * The projections (docs/decisions/033-projections.md): everything derived from the raw rows, each
 * a pure function from a batch of changed sessions (their share before and after, ./share.ts) to
 * the writes that bring its tables up to date. No SQL here: each engine's projector
 * (db/sqlite/projector.ts, db/postgres/projector.ts) runs the writes. A new projection is a
 * module exporting a `Projection` and one line in PROJECTIONS; the Store contract suite holds
 * every projection equal to a rebuild from raw rows after every kind of write.
 */
import { histogramBucket } from "../../domain/analytics.ts";
import { TOTALS_COLUMNS } from "../rows.ts";
import { responseSpans } from "./responses.ts";
import { scoreFacts } from "./scores.ts";
import { type Bucket, durationOf, SEP, type Share } from "./share.ts";
import type { Change, Projection, SessionTable, SumTable, Write } from "./types.ts";

export type { Change, Projection, SessionTable, SumTable, Write };

const HOUR_US = 3_600_000_000;
const DAY_US = 86_400_000_000;
const SLOT_US = 900_000_000;
/** The start of the slot of `size` that holds `us` (floor, also before 1970). */
const slotOf = (us: number, size: number) => us - (((us % size) + size) % size);

/** Signed sums by key, written once per batch however many sessions share a row. */
class Deltas {
  readonly #rows = new Map<string, { keys: unknown[]; sums: number[]; max: number; maxBefore: number }>();
  constructor(readonly table: SumTable) {}

  add(keys: unknown[], sums: readonly number[], sign: 1 | -1, max = 0) {
    const id = keys.join(SEP);
    let row = this.#rows.get(id);
    if (row === undefined) {
      row = { keys, sums: sums.map(() => 0), max: 0, maxBefore: 0 };
      this.#rows.set(id, row);
    }
    const into = row.sums;
    for (let i = 0; i < sums.length; i++) into[i] = (into[i] as number) + sign * (sums[i] as number);
    if (sign > 0 && max > row.max) row.max = max;
    if (sign < 0 && max > row.maxBefore) row.maxBefore = max;
  }

  write(): Write[] {
    const rows: unknown[][] = [];
    for (const { keys, sums, max, maxBefore } of this.#rows.values()) {
      // A row the batch leaves as it was (the unchanged part of a session's share) is not written.
      if (sums.every((s) => s === 0) && max <= maxBefore) continue;
      rows.push(this.table.max ? [...keys, ...sums, max] : [...keys, ...sums]);
    }
    return rows.length === 0 ? [] : [{ kind: "add", table: this.table, rows }];
  }
}

const each = (changes: readonly Change[], visit: (share: Share, sign: 1 | -1) => void) => {
  for (const { before, after } of changes) {
    if (before) visit(before, -1);
    if (after) visit(after, 1);
  }
};

const failedOf = (share: Share) => (share.session.failed ? 1 : 0);

/** The same project, hour and end state: a change whose rollup rows are the same ones. */
const sameSlot = (a: Share, b: Share) =>
  a.session.project === b.session.project &&
  failedOf(a) === failedOf(b) &&
  slotOf(a.session.init_us, HOUR_US) === slotOf(b.session.init_us, HOUR_US);

/** The per-session totals on the session's row, and session_models (decision 022). */
export const totals: Projection = {
  name: "totals",
  version: 1,
  tables: ["session_models"],
  apply(changes) {
    const models: SessionTable = {
      name: "session_models",
      columns: ["session_pk", "model", "llm_count", "prompt_tokens", "completion_tokens", "cost"],
    };
    const rows: unknown[][] = [];
    const modelRows: unknown[][] = [];
    for (const { pk, after: s } of changes) {
      if (!s) continue;
      rows.push([
        pk,
        s.events,
        s.llm,
        s.tool,
        s.action,
        s.error,
        s.prompt,
        s.completion,
        s.cache_read,
        s.cache_creation,
        s.reasoning,
        s.cost,
        s.first_us,
        s.last_us,
        durationOf(s),
      ]);
      for (const [model, m] of Object.entries(s.models)) modelRows.push([pk, model, ...m]);
    }
    const writes: Write[] = [{ kind: "replace", table: models, pks: changes.map((c) => c.pk), rows: modelRows }];
    if (rows.length > 0) writes.push({ kind: "session", columns: TOTALS, rows });
    return writes;
  },
};

/** The session columns `totals` sets, in its rows' order: those db/rows.ts reads. */
export const TOTALS = TOTALS_COLUMNS;

const SUMS = ["sessions", "failures", "events", "error_events", "prompt_tokens", "completion_tokens", "cost"];

/** The time series' rollups per 15-minute slot and their duration histogram (decision 026). */
export const sessionRollups: Projection = {
  name: "session-rollups",
  version: 1,
  tables: ["session_rollups", "session_rollup_durations"],
  apply(changes) {
    const sums = new Deltas({
      name: "session_rollups",
      keys: ["project_id", "slot_us"],
      sums: SUMS,
      count: "sessions",
    });
    const durations = new Deltas({
      name: "session_rollup_durations",
      keys: ["project_id", "slot_us", "bucket"],
      sums: ["n"],
      count: "n",
      max: "max_us",
    });
    each(changes, (s, sign) => {
      const slot = slotOf(s.session.init_us, SLOT_US);
      const { project } = s.session;
      sums.add([project, slot], [1, failedOf(s), s.events, s.error, s.prompt, s.completion, s.cost], sign);
      const duration = durationOf(s);
      durations.add([project, slot, histogramBucket(duration)], [1], sign, duration);
    });
    return [...sums.write(), ...durations.write()];
  },
};

/** The event breakdowns' rollups per UTC hour (level 0) and day (level 1) and group (decision 027). */
export const eventRollups: Projection = {
  name: "event-rollups",
  version: 1,
  tables: ["event_rollups", "event_rollup_durations"],
  apply(changes) {
    const keys = ["project_id", "dim", "level", "slot_us", "key"];
    const sums = new Deltas({ name: "event_rollups", keys, sums: SUMS, count: "sessions" });
    const durations = new Deltas({
      name: "event_rollup_durations",
      keys: [...keys, "bucket"],
      sums: ["n"],
      count: "n",
      max: "max_us",
    });
    /** A session's groups, those of `only` when given, signed, into both levels of its hour. */
    const visit = (s: Share, sign: 1 | -1, only?: string[]) => {
      const hour = slotOf(s.session.init_us, HOUR_US);
      const slots = [hour, slotOf(hour, DAY_US)];
      const { project } = s.session;
      const failed = failedOf(s);
      for (const group of only ?? Object.keys(s.groups)) {
        const g = s.groups[group];
        if (g === undefined || g[0] === 0) continue;
        const [dim, key] = group.split(SEP) as [string, string];
        const buckets = Object.entries(s.buckets[group] ?? {}) as unknown as [string, Bucket][];
        slots.forEach((slot, level) => {
          sums.add([project, dim, level, slot, key], [1, failed, g[0], g[1], g[2], g[3], g[4]], sign);
          for (const [bucket, [n, max]] of buckets)
            durations.add([project, dim, level, slot, key, Number(bucket)], [n], sign, max);
        });
      }
    };
    for (const { before, after } of changes) {
      // An append in the same hour and state changes only the groups the fold touched: the
      // others are the very objects of the share before (share.ts fold copies what it changes).
      if (before && after && sameSlot(before, after)) {
        const changed = Object.keys(after.groups).filter(
          (g) => after.groups[g] !== before.groups[g] || after.buckets[g] !== before.buckets[g],
        );
        for (const g of Object.keys(before.groups)) if (!(g in after.groups)) changed.push(g);
        visit(before, -1, changed);
        visit(after, 1, changed);
        continue;
      }
      if (before) visit(before, -1);
      if (after) visit(after, 1);
    }
    return [...sums.write(), ...durations.write()];
  },
};

/** Every projection, in the order the projector applies them. */
export const PROJECTIONS: readonly Projection[] = [totals, sessionRollups, eventRollups, scoreFacts, responseSpans];
