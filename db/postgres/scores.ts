/**
 * Scores on PostgreSQL (issue 25, migration 012-scores.sql): the same answers as
 * db/sqlite/scores.ts. A batch is one statement inside the group commit's transaction of its call.
 */
import type pg from "pg";
import type { Range } from "../../domain/analytics.ts";
import type {
  ScoreChanges,
  ScoreConfigRecord,
  ScoreDimension,
  ScoreFilter,
  ScoreGroupRow,
  ScoreRecord,
} from "../../domain/scores.ts";
import { emptyScoreSums, valueColumns } from "../../domain/scores.ts";
import type { Position } from "../../domain/types.ts";
import { pending } from "../projections/responses.ts";
import {
  configOfRow,
  SCORE_CONFIG_COLUMNS,
  SCORE_INSERT_COLUMNS,
  SCORE_ORDER,
  SCORE_SELECT,
  type ScoreConfigRow,
  type ScoreRow,
  scoreConditions,
  scoreFactsQuery,
  scoreOfRow,
  scoreValues,
  sumsByGroup,
} from "../scores.ts";
import type { ScoreAnalyticsQuery } from "../store.ts";
import { CHANGE, RESOLVE_PK } from "./projector.ts";

type Queryable = pg.Pool | pg.ClientBase;

/**
 * A statement that changes scores, wrapped to queue their sessions for the projector (score
 * analytics, decision 037) in the same statement; answers how many scores it changed as `n`.
 * An INSERT (`inserted`) queues each session's new scores, and those that wait for their
 * response's span (decision 038).
 */
const queued = (sql: string, inserted = false) =>
  `WITH changed AS (${sql} RETURNING session_pk, pk, ${pending()} AS pending),
   queued AS (INSERT INTO projection_queue (session_pk, kind, ids)
     SELECT * FROM (
       ${
         inserted
           ? // New scores only: the projector adds their facts (kind scored, their pks).
             `SELECT session_pk, ${CHANGE.scored}, array_agg(pk::text ORDER BY pk) FROM changed
              WHERE session_pk IS NOT NULL GROUP BY session_pk`
           : `SELECT DISTINCT session_pk, ${CHANGE.scores}, NULL::text[] FROM changed WHERE session_pk IS NOT NULL`
}
       UNION ALL
       SELECT ${RESOLVE_PK}, ${CHANGE.resolve}, array_agg(pk::text) FROM changed WHERE pending HAVING count(*) > 0) q
     ORDER BY 1)
   SELECT count(*)::int AS n FROM changed`;

const COLUMN_COUNT = SCORE_INSERT_COLUMNS.split(",").length;

/** T18: scores of one session (its pk known), in the caller's transaction; a stored id changes nothing. */
export async function insertScoresAt(tx: pg.ClientBase, projectId: string, pk: number, scores: ScoreRecord[]) {
  if (scores.length === 0) return;
  const tuples = scores.map(
    (_, row) =>
      `(${Array.from({ length: COLUMN_COUNT }, (_, column) => `$${row * COLUMN_COUNT + column + 1}`).join(", ")})`,
  );
  await tx.query(
    queued(
      `INSERT INTO scores (${SCORE_INSERT_COLUMNS}) VALUES ${tuples.join(", ")} ON CONFLICT (project_id, id) DO NOTHING`,
      true,
    ),
    scores.flatMap((score) => scoreValues(projectId, pk, score)),
  );
}

/** Store.insertScores, in the caller's transaction. */
export async function insertScores(
  tx: pg.ClientBase,
  projectId: string,
  scores: ScoreRecord[],
): Promise<{ stored: number } | { missing: number[] }> {
  const named = [...new Set(scores.flatMap((score) => (score.session_id === null ? [] : [score.session_id])))];
  const { rows } = await tx.query<{ id: string; pk: number }>(
    "SELECT id, pk FROM sessions WHERE id = ANY($1::text[]) AND project_id = $2",
    [named, projectId],
  );
  const pks = new Map(rows.map((row) => [row.id, row.pk]));
  const missing = scores.flatMap((score, index) =>
    score.session_id !== null && !pks.has(score.session_id) ? [index] : [],
  );
  if (missing.length > 0) return { missing };
  const values = scores.flatMap((score) =>
    scoreValues(projectId, score.session_id === null ? null : (pks.get(score.session_id) ?? null), score),
  );
  const tuples = scores.map(
    (_, row) =>
      `(${Array.from({ length: COLUMN_COUNT }, (_, column) => `$${row * COLUMN_COUNT + column + 1}`).join(", ")})`,
  );
  const { rows: stored } = await tx.query<{ n: number }>(
    queued(
      `INSERT INTO scores (${SCORE_INSERT_COLUMNS}) VALUES ${tuples.join(", ")} ON CONFLICT (project_id, id) DO NOTHING`,
      true,
    ),
    values,
  );
  return { stored: stored[0]?.n ?? 0 };
}

export async function getScore(db: Queryable, projectId: string, id: string) {
  const { rows } = await db.query<ScoreRow>(`${SCORE_SELECT} WHERE c.project_id = $1 AND c.id = $2`, [projectId, id]);
  return rows[0] && scoreOfRow(rows[0]);
}

export async function listScores(
  db: Queryable,
  projectId: string,
  filter: ScoreFilter,
  after: Position | undefined,
  limit: number,
) {
  const values: unknown[] = [];
  const where = scoreConditions(projectId, filter, after, (value) => {
    values.push(value);
    return `$${values.length}`;
  });
  values.push(limit);
  const { rows } = await db.query<ScoreRow>(
    `${SCORE_SELECT} WHERE ${where} ${SCORE_ORDER} LIMIT $${values.length}`,
    values,
  );
  return rows.map(scoreOfRow);
}

export async function updateScore(tx: pg.ClientBase, projectId: string, id: string, changes: ScoreChanges) {
  const { num, label } = valueColumns(changes.data_type, changes.value);
  const { rows } = await tx.query<{ n: number }>(
    queued(`UPDATE scores SET data_type = $3, num = $4, label = $5, comment = $6, metadata = $7, timestamp = $8,
     time_us = $9, updated_at = $10 WHERE project_id = $1 AND id = $2`),
    [
      projectId,
      id,
      changes.data_type,
      num,
      label,
      changes.comment,
      JSON.stringify(changes.metadata),
      changes.timestamp,
      changes.time_us,
      changes.updated_at,
    ],
  );
  return rows[0]?.n === 0 ? undefined : getScore(tx, projectId, id);
}

export async function deleteScore(db: Queryable, projectId: string, id: string) {
  const { rows } = await db.query<{ n: number }>(queued("DELETE FROM scores WHERE project_id = $1 AND id = $2"), [
    projectId,
    id,
  ]);
  return (rows[0]?.n ?? 0) > 0;
}

export async function putScoreConfig(db: Queryable, projectId: string, config: ScoreConfigRecord) {
  const { rows } = await db.query<ScoreConfigRow>(
    `INSERT INTO score_configs (project_id, ${SCORE_CONFIG_COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)
     ON CONFLICT (project_id, name) DO UPDATE SET data_type = excluded.data_type, min = excluded.min,
       max = excluded.max, categories = excluded.categories, description = excluded.description,
       updated_at = excluded.updated_at
     RETURNING ${SCORE_CONFIG_COLUMNS}`,
    [
      projectId,
      config.name,
      config.data_type,
      config.min,
      config.max,
      config.categories === null ? null : JSON.stringify(config.categories),
      config.description,
      config.created_at,
      config.updated_at,
    ],
  );
  return configOfRow(rows[0] as ScoreConfigRow);
}

export async function listScoreConfigs(db: Queryable, projectId: string) {
  const { rows } = await db.query<ScoreConfigRow>(
    `SELECT ${SCORE_CONFIG_COLUMNS} FROM score_configs WHERE project_id = $1 ORDER BY name`,
    [projectId],
  );
  return rows.map(configOfRow);
}

/** The engine's placeholders for scoreFactsQuery: $1, $2, ... in the order of `values`. */
const placeholders = () => {
  const values: unknown[] = [];
  const p = (value: unknown) => {
    values.push(value);
    return `$${values.length}`;
  };
  return { values, p };
};

/** Store.scoreSeries (the caller catches the projector up first). */
export async function scoreSeries(db: Queryable, projectId: string, query: ScoreAnalyticsQuery, ranges: Range[]) {
  const { values, p } = placeholders();
  const lo = p(ranges.map((r) => r.lo));
  const hi = p(ranges.map((r) => r.hi));
  const from = `unnest(${lo}::int8[], ${hi}::int8[]) WITH ORDINALITY AS r (lo, hi, i)
    JOIN score_facts f ON f.time_us >= r.lo AND f.time_us < r.hi`;
  const { rows } = await db.query<ScoreGroupRow & { g: string }>(
    scoreFactsQuery(from, "r.i", query, p, projectId, ""),
    values,
  );
  const groups = sumsByGroup(rows.map((row) => ({ ...row, g: Number(row.g) - 1 })));
  return ranges.map((_, i) => groups.get(i) ?? emptyScoreSums());
}

/** Store.scoreBreakdown (the caller catches the projector up first). */
export async function scoreBreakdown(
  db: Queryable,
  projectId: string,
  query: ScoreAnalyticsQuery & { by: ScoreDimension; from_us: number; to_us: number },
) {
  const { values, p } = placeholders();
  const { rows } = await db.query<ScoreGroupRow & { g: string | null }>(
    scoreFactsQuery("score_facts f", "f.key", query, p, projectId, query.by, query),
    values,
  );
  return [...sumsByGroup(rows).entries()].map(([key, sums]) => ({ key, sums }));
}
