/**
 * A session's share (docs/decisions/033-projections.md): everything any projection needs to know
 * of one session, folded from its raw rows, kept per session (table session_shares) so that a
 * change is a difference of two shares and never needs rows that are gone (a delete), values that
 * were overwritten (update_session, update_events), or every row again (an append folds the new
 * rows into the stored share). Pure: no SQL here, the same on both engines.
 */
import { histogramBucket } from "../../domain/analytics.ts";
import { COLUMN, type EventRow } from "../rows.ts";

/** What the projector reads of a session's row (its raw columns). */
export interface SessionFacts {
  project: string;
  init_us: number;
  /** The session's end_timestamp in microseconds, or null. */
  end_us: number | null;
  failed: boolean;
}

/** What the projector reads of an event's row: its raw columns, a tool's and an error's field. */
export interface EventFacts {
  id: string;
  type: string;
  init_us: number;
  end_us: number | null;
  model: string | null;
  prompt: number | null;
  completion: number | null;
  cache_read: number | null;
  cache_creation: number | null;
  reasoning: number | null;
  cost: number | null;
  /** A tool's group key as each engine's SQL makes it: '' without a name, '=' and its text. */
  tool: string | null;
  /** An error's trigger: body.trigger_event_id, or the span it hangs on (T16); else null. */
  target: string | null;
}

/**
 * The facts of a row a call stored (handed to the projector in memory). `text` answers a body's field that is not a string as
 * the engine's SQL reads it as text (SQLite's CAST of json_extract, PostgreSQL's ->>), so that a
 * row's groups are the same whoever computes them.
 */
export function factsOfRow(row: EventRow, text: (body: string, field: string) => string | null): EventFacts {
  const type = row[COLUMN.type] as string;
  let tool: string | null = null;
  let target: string | null = null;
  if (type === "tool" || type === "error") {
    const body = row[COLUMN.body] as string;
    const field = type === "tool" ? "name" : "trigger_event_id";
    const value = (JSON.parse(body) as Record<string, unknown> | null)?.[field];
    const asText = value === undefined || value === null ? null : typeof value === "string" ? value : text(body, field);
    if (type === "tool") tool = asText === null ? "" : `=${asText}`;
    else target = asText ?? (row[COLUMN.parent_id] as string | null);
  }
  return {
    id: row[COLUMN.id] as string,
    type,
    init_us: row[COLUMN.init_us] as number,
    end_us: row[COLUMN.end_us] as number | null,
    model: row[COLUMN.model] as string | null,
    prompt: row[COLUMN.prompt_tokens] as number | null,
    completion: row[COLUMN.completion_tokens] as number | null,
    cache_read: row[COLUMN.cache_read_tokens] as number | null,
    cache_creation: row[COLUMN.cache_creation_tokens] as number | null,
    reasoning: row[COLUMN.reasoning_tokens] as number | null,
    cost: row[COLUMN.cost] as number | null,
    tool,
    target,
  };
}

/** A group's sums: events, error events that name one of them, and the llm events' tokens and cost. */
export type GroupSums = [events: number, errors: number, prompt: number, completion: number, cost: number];
/** A duration bucket's count and largest duration. */
export type Bucket = [n: number, max: number];

/** The share. Keys of `groups` and `buckets` are `dim` + "\u0000" + `key` (decision 027's groups). */
export interface Share {
  session: SessionFacts;
  events: number;
  llm: number;
  tool: number;
  action: number;
  error: number;
  prompt: number;
  completion: number;
  cache_read: number;
  cache_creation: number;
  reasoning: number;
  cost: number;
  first_us: number | null;
  last_us: number | null;
  /** Per model of its llm events: [llm events, prompt, completion, cost]. */
  models: Record<string, [number, number, number, number]>;
  groups: Record<string, GroupSums>;
  /** Per group, its events' durations by histogram bucket. */
  buckets: Record<string, Record<number, Bucket>>;
  /** Error events whose trigger is not (yet) an event of the session, by the trigger's id. */
  waiting: Record<string, number>;
}

export const SEP = "\u0000";

export function emptyShare(session: SessionFacts): Share {
  return {
    session,
    events: 0,
    llm: 0,
    tool: 0,
    action: 0,
    error: 0,
    prompt: 0,
    completion: 0,
    cache_read: 0,
    cache_creation: 0,
    reasoning: 0,
    cost: 0,
    first_us: null,
    last_us: null,
    models: {},
    groups: {},
    buckets: {},
    waiting: {},
  };
}

/** Group keys made once: a fold meets the same few types, models and tools again and again. */
const KEYS = new Map<string, string>();
const keyOf = (dim: string, key: string) => {
  const id = `${dim}\u0001${key}`;
  let made = KEYS.get(id);
  if (made === undefined) {
    made = `${dim}${SEP}${key}`;
    if (KEYS.size < 10_000) KEYS.set(id, made);
  }
  return made;
};

/** The groups an event is in (decision 027): its type; an llm event its model, a tool its name. */
export function groupsOf(event: Pick<EventFacts, "type" | "model" | "tool">): string[] {
  const type = keyOf("type", `=${event.type}`);
  if (event.type === "llm") return [type, keyOf("model", event.model === null ? "" : `=${event.model}`)];
  if (event.type === "tool") return [type, keyOf("tool", event.tool ?? "")];
  return [type];
}

const num = (value: number | null) => value ?? 0;

/** The session's duration: to its end, else to its last event, else 0 (migration 007's rule). */
export function durationOf(share: Share): number {
  const { init_us, end_us } = share.session;
  return Math.max(0, (end_us ?? share.last_us ?? init_us) - init_us);
}

/**
 * Folds new rows into a copy of `share` (whose session facts are replaced by `session`). Errors
 * are counted in their trigger's groups: a trigger among `rows`, else one `lookup` finds among
 * the session's stored events (called once, with every id not among the rows), else the error
 * waits for its trigger, which a later fold finds in `waiting`.
 */
export function fold(
  share: Share,
  session: SessionFacts,
  rows: readonly EventFacts[],
  lookup: (ids: string[]) => readonly EventFacts[],
): Share {
  const next: Share = {
    ...share,
    session,
    models: { ...share.models },
    groups: { ...share.groups },
    buckets: { ...share.buckets },
    waiting: { ...share.waiting },
  };
  // Each group's sums, bucket map and model's sums are copied once per fold, then changed in
  // place: the stored share never changes.
  const touched = new Set<string>();
  const sums = (key: string): GroupSums => {
    if (touched.has(key)) return next.groups[key] as GroupSums;
    touched.add(key);
    const old = next.groups[key];
    const copy: GroupSums = old ? [old[0], old[1], old[2], old[3], old[4]] : [0, 0, 0, 0, 0];
    next.groups[key] = copy;
    return copy;
  };
  const touchedBuckets = new Set<string>();
  const bucketsOf = (key: string) => {
    if (touchedBuckets.has(key)) return next.buckets[key] as Record<number, Bucket>;
    touchedBuckets.add(key);
    const copy: Record<number, Bucket> = {};
    const old = next.buckets[key];
    if (old) for (const b in old) copy[b as unknown as number] = [...(old[b as unknown as number] as Bucket)];
    next.buckets[key] = copy;
    return copy;
  };
  const touchedModels = new Set<string>();
  const byId = new Map<string, EventFacts>();
  for (const row of rows) {
    byId.set(row.id, row);
    next.events++;
    if (row.type === "llm" || row.type === "tool" || row.type === "action" || row.type === "error") next[row.type]++;
    const last = row.end_us !== null && row.end_us > row.init_us ? row.end_us : row.init_us;
    if (next.first_us === null || row.init_us < next.first_us) next.first_us = row.init_us;
    if (next.last_us === null || last > next.last_us) next.last_us = last;
    const llm = row.type === "llm";
    const prompt = num(row.prompt);
    const completion = num(row.completion);
    const cost = num(row.cost);
    if (llm) {
      next.prompt += prompt;
      next.completion += completion;
      next.cache_read += num(row.cache_read);
      next.cache_creation += num(row.cache_creation);
      next.reasoning += num(row.reasoning);
      next.cost += cost;
      if (row.model !== null) {
        let m = next.models[row.model];
        if (!touchedModels.has(row.model)) {
          touchedModels.add(row.model);
          m = m ? [m[0], m[1], m[2], m[3]] : [0, 0, 0, 0];
          next.models[row.model] = m;
        }
        const into = m as [number, number, number, number];
        into[0]++;
        into[1] += prompt;
        into[2] += completion;
        into[3] += cost;
      }
    }
    const duration = row.end_us === null ? -1 : Math.max(0, row.end_us - row.init_us);
    const bucket = duration < 0 ? 0 : histogramBucket(duration);
    for (const key of groupsOf(row)) {
      const s = sums(key);
      s[0]++;
      if (llm) {
        s[2] += prompt;
        s[3] += completion;
        s[4] += cost;
      }
      if (duration < 0) continue;
      const buckets = bucketsOf(key);
      const old = buckets[bucket];
      if (old === undefined) buckets[bucket] = [1, duration];
      else {
        old[0]++;
        if (duration > old[1]) old[1] = duration;
      }
    }
  }
  // The errors of these rows, each counted once in its trigger's groups.
  const targets = rows.filter((row) => row.type === "error" && row.target !== null);
  const missing = [...new Set(targets.map((r) => r.target as string).filter((id) => !byId.has(id)))];
  const stored = missing.length > 0 ? new Map(lookup(missing).map((e) => [e.id, e])) : new Map<string, EventFacts>();
  for (const error of targets) {
    const id = error.target as string;
    const trigger = byId.get(id) ?? stored.get(id);
    if (trigger) for (const key of groupsOf(trigger)) sums(key)[1]++;
    else next.waiting[id] = (next.waiting[id] ?? 0) + 1;
  }
  // Errors that came before their trigger, now that it is here.
  for (const row of rows) {
    const waiting = share.waiting[row.id];
    if (waiting === undefined) continue;
    for (const key of groupsOf(row)) sums(key)[1] += waiting;
    delete next.waiting[row.id];
  }
  return next;
}

/** The share of a session from all of its rows. */
export function shareOf(session: SessionFacts, rows: readonly EventFacts[]): Share {
  return fold(emptyShare(session), session, rows, () => []);
}
