/**
 * Scores (issue 25, openapi.yaml SC1-SC7, decision 037): judgements of a session, an event or
 * span of it, or a conversation; numeric, categorical or boolean; checked against the project's
 * score config of the same name when there is one. Pure: the service reads the configs and the
 * store keeps the records.
 */
import type { ErrorDetail } from "./errors.ts";
import type { JsonObject, ScoreCondition } from "./types.ts";

export type ScoreDataType = "numeric" | "categorical" | "boolean";
export type ScoreSource = "api" | "annotation" | "eval";
export type ScoreValue = number | string | boolean;

/** Who made a score: an API key (also for a JWT's or token's score: their key) or a person. */
export interface ScoreAuthor {
  type: "api_key" | "person";
  id: string;
}

export interface ScoreRecord {
  id: string;
  name: string;
  data_type: ScoreDataType;
  value: ScoreValue;
  session_id: string | null;
  event_id: string | null;
  conversation_id: string | null;
  /**
   * The model response it judges (`gen_ai.response.id`), or null. With no event_id, the
   * projector resolves it to the span carrying that response id (decision 038).
   */
  response_id: string | null;
  source: ScoreSource;
  comment: string | null;
  author: ScoreAuthor;
  metadata: JsonObject;
  /** When the judgement was made, UTC ISO, and its instant in microseconds (what lists sort on). */
  timestamp: string;
  time_us: number;
  created_at: string;
  updated_at: string | null;
}

/**
 * OTLP evaluation results of one trace (T18): the trace's session is created (running) when it is
 * not there yet, as for early spans and log records (T17, T3), and the scores stored with it, in
 * one transaction (Store.ingestEvaluations).
 */
export interface TraceScoresWrite {
  /** The trace id as a UUID. */
  session_id: string;
  /** When the earliest of these results happened: a session made by them starts then. */
  init_timestamp: string;
  init_us: number;
  /** `session_id` and `event_id` (the span id, or null) already set. */
  scores: ScoreRecord[];
}

/** What PATCH /v2/scores/{score_id} changes, already checked (updateScore). */
export interface ScoreChanges {
  data_type: ScoreDataType;
  value: ScoreValue;
  comment: string | null;
  metadata: JsonObject;
  timestamp: string;
  time_us: number;
  updated_at: string;
}

export interface ScoreConfigRecord {
  name: string;
  data_type: ScoreDataType;
  min: number | null;
  max: number | null;
  categories: string[] | null;
  description: string | null;
  created_at: string;
  updated_at: string;
}

/** GET /v2/scores' filters; `before`: a page after this position (time_us desc, id desc). */
export interface ScoreFilter {
  name?: string | undefined;
  session_id?: string | undefined;
  event_id?: string | undefined;
  /** Scores of any of these events (a page of a session's events). */
  event_ids?: readonly string[] | undefined;
  conversation_id?: string | undefined;
  response_id?: string | undefined;
  source?: ScoreSource | undefined;
  data_type?: ScoreDataType | undefined;
  from_us?: number | undefined;
  to_us?: number | undefined;
}

export const SCORE_DATA_TYPES: readonly ScoreDataType[] = ["numeric", "categorical", "boolean"];

/** The data type a value says by its JSON type, when the client names none (SC4). */
const typeOfValue = (value: ScoreValue): ScoreDataType =>
  typeof value === "number" ? "numeric" : typeof value === "boolean" ? "boolean" : "categorical";

/**
 * SC4: the value as its data type keeps it, or why not. A boolean is also `1`/`0` or the labels
 * `"true"`/`"false"`; a numeric value must be finite; a label is not empty.
 */
export function readValue(
  value: ScoreValue,
  given: ScoreDataType | null | undefined,
): { data_type: ScoreDataType; value: ScoreValue } | { problem: string } {
  const dataType = given ?? typeOfValue(value);
  if (dataType === "numeric") {
    return typeof value === "number" && Number.isFinite(value)
      ? { data_type: dataType, value }
      : { problem: "must be a finite number for a numeric score" };
  }
  if (dataType === "boolean") {
    if (typeof value === "boolean") return { data_type: dataType, value };
    if (value === 1 || value === "true") return { data_type: dataType, value: true };
    if (value === 0 || value === "false") return { data_type: dataType, value: false };
    return { problem: 'must be true or false (or 1, 0, "true", "false") for a boolean score' };
  }
  return typeof value === "string" && value.length > 0
    ? { data_type: dataType, value }
    : { problem: "must be a label (a non-empty string) for a categorical score" };
}

/** SC5: the problems of a score against its name's config, each with its path under `path`. */
export function breaksConfig(
  score: { data_type: ScoreDataType; value: ScoreValue },
  config: ScoreConfigRecord,
  path: string,
): ErrorDetail[] {
  const at = (field: string) => (path === "" ? field : `${path}.${field}`);
  if (score.data_type !== config.data_type) {
    return [
      {
        path: at("data_type"),
        message: `the score config "${config.name}" says ${config.data_type}, not ${score.data_type}`,
      },
    ];
  }
  if (score.data_type === "numeric") {
    const value = score.value as number;
    if ((config.min !== null && value < config.min) || (config.max !== null && value > config.max)) {
      return [{ path: at("value"), message: `must be ${rangeText(config)} (score config "${config.name}")` }];
    }
  }
  if (score.data_type === "categorical" && config.categories && !config.categories.includes(score.value as string)) {
    const allowed = config.categories.map((c) => JSON.stringify(c)).join(", ");
    return [{ path: at("value"), message: `must be one of ${allowed} (score config "${config.name}")` }];
  }
  return [];
}

const rangeText = (config: ScoreConfigRecord) =>
  config.min !== null && config.max !== null
    ? `between ${config.min} and ${config.max}`
    : config.min !== null
      ? `at least ${config.min}`
      : `at most ${config.max}`;

/** PUT /v2/score-configs/{name}: the config's own rules (ajv checked the shapes). */
export function configProblems(request: {
  data_type: ScoreDataType;
  min?: number | null | undefined;
  max?: number | null | undefined;
  categories?: string[] | null | undefined;
}): ErrorDetail[] {
  const problems: ErrorDetail[] = [];
  const numeric = request.data_type === "numeric";
  for (const field of ["min", "max"] as const) {
    if (request[field] != null && !numeric) problems.push({ path: field, message: "only a numeric config has it" });
  }
  if (numeric && request.min != null && request.max != null && request.min > request.max) {
    problems.push({ path: "min", message: `must not be more than max (${request.max})` });
  }
  if (request.categories != null && request.data_type !== "categorical") {
    problems.push({ path: "categories", message: "only a categorical config has them" });
  }
  if (request.data_type === "categorical" && request.categories == null) {
    problems.push({ path: "categories", message: "a categorical config lists its labels" });
  }
  return problems;
}

/**
 * How storage keeps a value: `num` (numeric; boolean 1/0) and `label` (categorical), so that
 * analytics read numbers as numbers; `valueOfColumns` gives it back.
 */
export const valueColumns = (dataType: ScoreDataType, value: ScoreValue) =>
  dataType === "categorical"
    ? { num: null, label: value as string }
    : { num: dataType === "boolean" ? (value ? 1 : 0) : (value as number), label: null };

export const valueOfColumns = (dataType: ScoreDataType, num: number | null, label: string | null): ScoreValue =>
  dataType === "categorical" ? (label as string) : dataType === "boolean" ? num === 1 : (num as number);

/** The author as storage keeps it (`api_key:<id>`, `person:<id>`) and back. */
export const authorColumn = (author: ScoreAuthor) => `${author.type}:${author.id}`;
export const authorOfColumn = (column: string): ScoreAuthor => {
  const colon = column.indexOf(":");
  return { type: column.slice(0, colon) as ScoreAuthor["type"], id: column.slice(colon + 1) };
};

/** A JSON number as the filters take it (decision 031's rule: no `+`, leading zeros, `.5` or `3.`). */
const JSON_NUMBER = /^-?(0|[1-9]\d*)(\.\d+)?([eE][+-]?\d+)?$/;

/**
 * `score.<name>=<value>`: `lo..hi` a numeric range (either side may be empty), `true`/`false` a
 * boolean score, `*` any score of the name, `-` no score of the name, anything else a label.
 */
export function readScoreCondition(name: string, text: string): ScoreCondition | { problem: string } {
  if (text === "-") return { name, missing: true };
  if (text === "*") return { name };
  if (text === "true" || text === "false") return { name, bool: text === "true" };
  const range = text.indexOf("..");
  if (range < 0) return { name, label: text };
  const [lo, hi] = [text.slice(0, range), text.slice(range + 2)];
  if ((lo === "" && hi === "") || [lo, hi].some((side) => side !== "" && !JSON_NUMBER.test(side))) {
    return { problem: "a range is <min>..<max> with numbers, either side may be left out (0.5.., ..0.2, 0..1)" };
  }
  const condition: ScoreCondition = { name };
  if (lo !== "") condition.lo = Number(lo);
  if (hi !== "") condition.hi = Number(hi);
  return condition;
}

/** The conditions as the storage queries read them: a JSON array of {name, lo, hi, label, bool, missing}, 0/1 for booleans. */
export const scoreFilterJson = (conditions: readonly ScoreCondition[]) =>
  JSON.stringify(
    conditions.map((c) => ({
      name: c.name,
      lo: c.lo ?? null,
      hi: c.hi ?? null,
      label: c.label ?? null,
      bool: c.bool === undefined ? null : c.bool ? 1 : 0,
      missing: c.missing ? 1 : 0,
    })),
  );

/**
 * Score analytics (getScoreTimeseries, getScoreBreakdown): the sums of a set of scores of one
 * name, from the rows of the score analytics projection grouped by data type and label.
 */
export interface ScoreSums {
  count: number;
  numeric_count: number;
  /** The numeric scores' sum, smallest and largest. */
  sum: number;
  min: number | null;
  max: number | null;
  true_count: number;
  false_count: number;
  labels: Record<string, number>;
}

/** A row of either engine's grouped read: data type, label, scores, sum, min and max of `num`. */
export interface ScoreGroupRow {
  data_type: string;
  label: string | null;
  n: number;
  total: number | null;
  lo: number | null;
  hi: number | null;
}

export const emptyScoreSums = (): ScoreSums => ({
  count: 0,
  numeric_count: 0,
  sum: 0,
  min: null,
  max: null,
  true_count: 0,
  false_count: 0,
  labels: {},
});

/** Adds a grouped row (booleans' num is 1 or 0, so their sum is how many are true). */
export function addScoreRow(into: ScoreSums, row: ScoreGroupRow) {
  const n = Number(row.n);
  into.count += n;
  if (row.data_type === "numeric") {
    into.numeric_count += n;
    into.sum += Number(row.total ?? 0);
    const lo = row.lo === null ? null : Number(row.lo);
    const hi = row.hi === null ? null : Number(row.hi);
    if (lo !== null && (into.min === null || lo < into.min)) into.min = lo;
    if (hi !== null && (into.max === null || hi > into.max)) into.max = hi;
  } else if (row.data_type === "boolean") {
    const trues = Number(row.total ?? 0);
    into.true_count += trues;
    into.false_count += n - trues;
  } else {
    const label = row.label ?? "";
    into.labels[label] = (into.labels[label] ?? 0) + n;
  }
}

export function mergeScoreSums(into: ScoreSums, from: ScoreSums) {
  into.count += from.count;
  into.numeric_count += from.numeric_count;
  into.sum += from.sum;
  if (from.min !== null && (into.min === null || from.min < into.min)) into.min = from.min;
  if (from.max !== null && (into.max === null || from.max > into.max)) into.max = from.max;
  into.true_count += from.true_count;
  into.false_count += from.false_count;
  for (const [label, n] of Object.entries(from.labels)) into.labels[label] = (into.labels[label] ?? 0) + n;
}

const meanOf = (s: ScoreSums) => (s.numeric_count === 0 ? null : s.sum / s.numeric_count);
const passRateOf = (s: ScoreSums) => {
  const booleans = s.true_count + s.false_count;
  return booleans === 0 ? null : s.true_count / booleans;
};

/** The measures openapi.yaml ScoreMeasures documents. */
export function scoreMeasuresView(s: ScoreSums) {
  return {
    count: s.count,
    numeric_count: s.numeric_count,
    mean: meanOf(s),
    min: s.min,
    max: s.max,
    true_count: s.true_count,
    false_count: s.false_count,
    pass_rate: passRateOf(s),
    labels: s.labels,
  };
}

export type ScoreSort = "count" | "mean" | "pass_rate";
export type ScoreDimension = "model" | "agent" | "tag" | "tool";

/** Keys in byte order (UTF-8), null last: the breakdowns' tie rule. */
const byKey = (a: string | null, b: string | null) =>
  a === b ? 0 : a === null ? 1 : b === null ? -1 : Buffer.compare(Buffer.from(a), Buffer.from(b));

/**
 * The top `limit` groups by `sort`, largest first (a group without the measure last), ties by
 * key; the rest summed as `other` (null when there is no rest).
 */
export function rankScoreGroups(groups: Map<string | null, ScoreSums>, sort: ScoreSort, limit: number) {
  const measure = (s: ScoreSums) => (sort === "count" ? s.count : sort === "mean" ? meanOf(s) : passRateOf(s));
  const ranked = [...groups.entries()].sort(([ka, a], [kb, b]) => {
    const ma = measure(a);
    const mb = measure(b);
    if (ma !== mb) {
      if (ma === null) return 1;
      if (mb === null) return -1;
      return mb - ma;
    }
    return byKey(ka, kb);
  });
  const rest = ranked.slice(limit);
  let other: ScoreSums | null = null;
  for (const [, sums] of rest) {
    other ??= emptyScoreSums();
    mergeScoreSums(other, sums);
  }
  return { items: ranked.slice(0, limit).map(([key, sums]) => ({ key, sums })), other };
}
