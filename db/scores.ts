/**
 * Scores' rows (issue 25, migrations SQLite 014 / PostgreSQL 012), shared by both adapters: the
 * columns a score is read with, a row back to its record, and the list query's conditions with
 * the engine's placeholders. Raw rows only: analytics of scores are projections (decision 033).
 */
import {
  addScoreRow,
  authorColumn,
  authorOfColumn,
  emptyScoreSums,
  type ScoreConfigRecord,
  type ScoreDataType,
  type ScoreFilter,
  type ScoreGroupRow,
  type ScoreRecord,
  type ScoreSource,
  valueColumns,
  valueOfColumns,
} from "../domain/scores.ts";
import type { Position } from "../domain/types.ts";

/** A score's columns, its session's id joined (`s`), from `scores c`. */
export const SCORE_SELECT = `SELECT c.id, c.name, c.data_type, c.num, c.label, s.id AS session_id, c.event_id,
  c.conversation_id, c.response_id, c.source, c.comment, c.author, c.metadata, c.timestamp, c.time_us, c.created_at, c.updated_at
  FROM scores c LEFT JOIN sessions s ON s.pk = c.session_pk`;

export interface ScoreRow {
  id: string;
  name: string;
  data_type: ScoreDataType;
  num: number | null;
  label: string | null;
  session_id: string | null;
  event_id: string | null;
  conversation_id: string | null;
  response_id: string | null;
  source: ScoreSource;
  comment: string | null;
  author: string;
  metadata: string;
  timestamp: string;
  time_us: number | string;
  created_at: string;
  updated_at: string | null;
}

export const scoreOfRow = (row: ScoreRow): ScoreRecord => ({
  id: row.id,
  name: row.name,
  data_type: row.data_type,
  value: valueOfColumns(row.data_type, row.num, row.label),
  session_id: row.session_id,
  event_id: row.event_id,
  conversation_id: row.conversation_id,
  response_id: row.response_id,
  source: row.source,
  comment: row.comment,
  author: authorOfColumn(row.author),
  metadata: JSON.parse(row.metadata),
  timestamp: row.timestamp,
  time_us: Number(row.time_us),
  created_at: row.created_at,
  updated_at: row.updated_at,
});

/** The values of an INSERT INTO scores, in SCORE_INSERT_COLUMNS' order (session_pk resolved by the caller). */
export const SCORE_INSERT_COLUMNS =
  "project_id, id, session_pk, event_id, conversation_id, response_id, name, data_type, num, label, source, comment, author, metadata, timestamp, time_us, created_at, updated_at";

export function scoreValues(projectId: string, sessionPk: number | null, score: ScoreRecord) {
  const { num, label } = valueColumns(score.data_type, score.value);
  return [
    projectId,
    score.id,
    sessionPk,
    score.event_id,
    score.conversation_id,
    score.response_id,
    score.name,
    score.data_type,
    num,
    label,
    score.source,
    score.comment,
    authorColumn(score.author),
    JSON.stringify(score.metadata),
    score.timestamp,
    score.time_us,
    score.created_at,
    score.updated_at,
  ];
}

/**
 * The conditions of GET /v2/scores (and its page position: time_us desc, id desc) over
 * `scores c`/`sessions s`, with `param(value)` giving the engine's placeholder for each value.
 */
export function scoreConditions(
  projectId: string,
  filter: ScoreFilter,
  after: Position | undefined,
  param: (value: unknown) => string,
): string {
  const where = [`c.project_id = ${param(projectId)}`];
  if (filter.name !== undefined) where.push(`c.name = ${param(filter.name)}`);
  if (filter.session_id !== undefined) where.push(`s.id = ${param(filter.session_id)}`);
  if (filter.event_id !== undefined) where.push(`c.event_id = ${param(filter.event_id)}`);
  if (filter.event_ids !== undefined) {
    where.push(filter.event_ids.length === 0 ? "FALSE" : `c.event_id IN (${filter.event_ids.map(param).join(", ")})`);
  }
  if (filter.conversation_id !== undefined) where.push(`c.conversation_id = ${param(filter.conversation_id)}`);
  if (filter.response_id !== undefined) where.push(`c.response_id = ${param(filter.response_id)}`);
  if (filter.source !== undefined) where.push(`c.source = ${param(filter.source)}`);
  if (filter.data_type !== undefined) where.push(`c.data_type = ${param(filter.data_type)}`);
  if (filter.from_us !== undefined) where.push(`c.time_us >= ${param(filter.from_us)}`);
  if (filter.to_us !== undefined) where.push(`c.time_us < ${param(filter.to_us)}`);
  if (after !== undefined) {
    where.push(
      `(c.time_us < ${param(after.init_us)} OR (c.time_us = ${param(after.init_us)} AND c.id < ${param(after.id)}))`,
    );
  }
  return where.join(" AND ");
}

export const SCORE_ORDER = "ORDER BY c.time_us DESC, c.id DESC";

export interface ScoreConfigRow {
  name: string;
  data_type: ScoreDataType;
  min: number | null;
  max: number | null;
  categories: string | null;
  description: string | null;
  created_at: string;
  updated_at: string;
}

export const SCORE_CONFIG_COLUMNS = "name, data_type, min, max, categories, description, created_at, updated_at";

export const configOfRow = (row: ScoreConfigRow): ScoreConfigRecord => ({
  ...row,
  categories: row.categories === null ? null : JSON.parse(row.categories),
});

/**
 * Score analytics' read (decision 037): the facts of the score analytics projection grouped by
 * `group` (a range's index, or a dimension's key), data type and label, in the engine's
 * placeholders `p(value)`. The same SQL on both engines but for how `group` and the ranges are
 * spelled.
 */
export function scoreFactsQuery(
  from: string,
  group: string,
  query: { name: string; source?: string | undefined },
  p: (value: unknown) => string,
  projectId: string,
  dim: string,
  range?: { from_us: number; to_us: number },
) {
  const where = [`f.project_id = ${p(projectId)}`, `f.name = ${p(query.name)}`, `f.dim = ${p(dim)}`];
  if (range) where.push(`f.time_us >= ${p(range.from_us)}`, `f.time_us < ${p(range.to_us)}`);
  if (query.source !== undefined) where.push(`f.source = ${p(query.source)}`);
  return `SELECT ${group} AS g, f.data_type, f.label, count(*) AS n, sum(f.num) AS total, min(f.num) AS lo,
      max(f.num) AS hi
    FROM ${from}
    WHERE ${where.join(" AND ")}
    GROUP BY ${group}, f.data_type, f.label`;
}

/** The grouped rows folded into sums per group. */
export function sumsByGroup<K>(rows: (ScoreGroupRow & { g: K })[]) {
  const groups = new Map<K, ReturnType<typeof emptyScoreSums>>();
  for (const row of rows) {
    let sums = groups.get(row.g);
    if (sums === undefined) {
      sums = emptyScoreSums();
      groups.set(row.g, sums);
    }
    addScoreRow(sums, row);
  }
  return groups;
}
