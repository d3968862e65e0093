/**
 * Scores on SQLite (issue 25, migration 014-scores.sql): raw rows, written inside the group
 * commit's savepoint of their call (store.ts), so a batch is all or nothing.
 */
import type { ScoreChanges, ScoreConfigRecord, ScoreFilter, ScoreRecord } from "../../domain/scores.ts";
import { valueColumns } from "../../domain/scores.ts";
import type { Position } from "../../domain/types.ts";
import {
  configOfRow,
  SCORE_CONFIG_COLUMNS,
  SCORE_INSERT_COLUMNS,
  SCORE_ORDER,
  SCORE_SELECT,
  type ScoreConfigRow,
  type ScoreRow,
  scoreConditions,
  scoreOfRow,
  scoreValues,
} from "../scores.ts";
import type { Db } from "./open.ts";

export function scoreStatements(db: Db, pkOf: (projectId: string, sessionId: string) => number | undefined) {
  const q = {
    insert: db.prepare(
      `INSERT INTO scores (${SCORE_INSERT_COLUMNS}) VALUES (${SCORE_INSERT_COLUMNS.split(",")
        .map(() => "?")
        .join(", ")})
       ON CONFLICT (project_id, id) DO NOTHING`,
    ),
    get: db.prepare<[string, string], ScoreRow>(`${SCORE_SELECT} WHERE c.project_id = ? AND c.id = ?`),
    update: db.prepare(
      `UPDATE scores SET data_type = @data_type, num = @num, label = @label, comment = @comment,
       metadata = @metadata, timestamp = @timestamp, time_us = @time_us, updated_at = @updated_at
       WHERE project_id = @project_id AND id = @id`,
    ),
    delete: db.prepare("DELETE FROM scores WHERE project_id = ? AND id = ?"),
    configUpsert: db.prepare<unknown[], ScoreConfigRow>(
      `INSERT INTO score_configs (project_id, ${SCORE_CONFIG_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
       ON CONFLICT (project_id, name) DO UPDATE SET data_type = excluded.data_type, min = excluded.min,
         max = excluded.max, categories = excluded.categories, description = excluded.description,
         updated_at = excluded.updated_at
       RETURNING ${SCORE_CONFIG_COLUMNS}`,
    ),
    configs: db.prepare<[string], ScoreConfigRow>(
      `SELECT ${SCORE_CONFIG_COLUMNS} FROM score_configs WHERE project_id = ? ORDER BY name`,
    ),
  };

  return {
    /** Store.insertScores, in the caller's savepoint. */
    insert(projectId: string, scores: ScoreRecord[]): { stored: number } | { missing: number[] } {
      const pks = scores.map((score) => (score.session_id === null ? null : pkOf(projectId, score.session_id)));
      const missing = pks.flatMap((pk, index) => (pk === undefined ? [index] : []));
      if (missing.length > 0) return { missing };
      let stored = 0;
      scores.forEach((score, index) => {
        stored += q.insert.run(scoreValues(projectId, pks[index] ?? null, score)).changes;
      });
      return { stored };
    },
    /** T18: scores of one session (its pk known), in the caller's savepoint; a stored id changes nothing. */
    insertAt(projectId: string, pk: number, scores: ScoreRecord[]) {
      for (const score of scores) q.insert.run(scoreValues(projectId, pk, score));
    },
    get: (projectId: string, id: string) => {
      const row = q.get.get(projectId, id);
      return row && scoreOfRow(row);
    },
    list(projectId: string, filter: ScoreFilter, after: Position | undefined, limit: number) {
      const values: unknown[] = [];
      const where = scoreConditions(projectId, filter, after, (value) => {
        values.push(value);
        return "?";
      });
      const rows = db.prepare<unknown[], ScoreRow>(`${SCORE_SELECT} WHERE ${where} ${SCORE_ORDER} LIMIT ?`);
      return rows.all(...values, limit).map(scoreOfRow);
    },
    update(projectId: string, id: string, changes: ScoreChanges) {
      const { num, label } = valueColumns(changes.data_type, changes.value);
      const { changes: count } = q.update.run({
        project_id: projectId,
        id,
        data_type: changes.data_type,
        num,
        label,
        comment: changes.comment,
        metadata: JSON.stringify(changes.metadata),
        timestamp: changes.timestamp,
        time_us: changes.time_us,
        updated_at: changes.updated_at,
      });
      return count === 0 ? undefined : this.get(projectId, id);
    },
    delete: (projectId: string, id: string) => q.delete.run(projectId, id).changes > 0,
    putConfig(projectId: string, config: ScoreConfigRecord) {
      const row = q.configUpsert.get(
        projectId,
        config.name,
        config.data_type,
        config.min,
        config.max,
        config.categories === null ? null : JSON.stringify(config.categories),
        config.description,
        config.created_at,
        config.updated_at,
      ) as ScoreConfigRow;
      return configOfRow(row);
    },
    configs: (projectId: string) => q.configs.all(projectId).map(configOfRow),
  };
}
