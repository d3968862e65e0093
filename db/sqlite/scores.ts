/**
 * Scores on SQLite (issue 25, migration 014-scores.sql): raw rows, written inside the group
 * commit's savepoint of their call (store.ts), so a batch is all or nothing.
 */
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
import type { Db } from "./open.ts";

/**
 * `queued`: a session's scores changed (score analytics are a projection: the projector makes
 * them again; decision 037); `pending`: scores pk lo..hi may wait for their response's span (the
 * projector resolves them, decision 038). Both called inside the call's savepoint.
 */
export function scoreStatements(
  db: Db,
  pkOf: (projectId: string, sessionId: string) => number | undefined,
  queued: (sessionPk: number) => void,
  pending: (lo: number, hi: number) => void,
  appended: (sessionPk: number, lo: number, hi: number) => void,
) {
  /** The pks of the pending scores a call stored, queued once at its end. */
  let waiting: number[] = [];
  /** Each session's new scores (their pks lo..hi) a call stored, queued once at its end. */
  let added = new Map<number, [number, number]>();
  const store = (values: unknown[], score: ScoreRecord, sessionPk: number | null) => {
    const result = q.insert.run(values);
    if (result.changes === 0) return 0;
    const pk = Number(result.lastInsertRowid);
    if (score.response_id !== null && score.event_id === null) waiting.push(pk);
    if (sessionPk !== null) {
      const range = added.get(sessionPk);
      if (range === undefined) added.set(sessionPk, [pk, pk]);
      else range[1] = pk;
    }
    return result.changes;
  };
  const flush = () => {
    if (waiting.length > 0) pending(Math.min(...waiting), Math.max(...waiting));
    for (const [sessionPk, [lo, hi]] of added) appended(sessionPk, lo, hi);
    waiting = [];
    added = new Map();
  };
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
       WHERE project_id = @project_id AND id = @id RETURNING session_pk`,
    ),
    delete: db.prepare<[string, string], { session_pk: number | null }>(
      "DELETE FROM scores WHERE project_id = ? AND id = ? RETURNING session_pk",
    ),
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

  const statements = new Map<string, ReturnType<typeof db.prepare<unknown[]>>>();
  const statement = (sql: string) => {
    let made = statements.get(sql);
    if (made === undefined) {
      made = db.prepare<unknown[]>(sql);
      statements.set(sql, made);
    }
    return made;
  };

  return {
    /** Store.insertScores, in the caller's savepoint. */
    insert(projectId: string, scores: ScoreRecord[]): { stored: number } | { missing: number[] } {
      const pks = scores.map((score) => (score.session_id === null ? null : pkOf(projectId, score.session_id)));
      const missing = pks.flatMap((pk, index) => (pk === undefined ? [index] : []));
      if (missing.length > 0) return { missing };
      let stored = 0;
      scores.forEach((score, index) => {
        const pk = pks[index] ?? null;
        stored += store(scoreValues(projectId, pk, score), score, pk);
      });
      flush();
      return { stored };
    },
    /** T18: scores of one session (its pk known), in the caller's savepoint; a stored id changes nothing. */
    insertAt(projectId: string, pk: number, scores: ScoreRecord[]) {
      for (const score of scores) store(scoreValues(projectId, pk, score), score, pk);
      flush();
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
      const changed = q.update.get({
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
      }) as { session_pk: number | null } | undefined;
      if (changed === undefined) return undefined;
      if (changed.session_pk !== null) queued(changed.session_pk);
      return this.get(projectId, id);
    },
    delete(projectId: string, id: string) {
      const gone = q.delete.get(projectId, id);
      if (gone?.session_pk != null) queued(gone.session_pk);
      return gone !== undefined;
    },
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
    /** Store.scoreSeries (the caller catches the projector up first). */
    series(projectId: string, query: ScoreAnalyticsQuery, ranges: Range[]) {
      const values: unknown[] = [];
      const p = (value: unknown) => {
        values.push(value);
        return "?";
      };
      const lo = p(JSON.stringify(ranges.map((r) => r.lo)));
      const hi = p(JSON.stringify(ranges.map((r) => r.hi)));
      // Each range one index range of the facts (its bounds from one row of json_each).
      const from = `json_each(${lo}) r CROSS JOIN score_facts f
        ON f.time_us >= r.value AND f.time_us < json_extract(${hi}, '$[' || r.key || ']')`;
      const sql = scoreFactsQuery(from, "r.key", query, p, projectId, "");
      const groups = sumsByGroup(statement(sql).all(...values) as (ScoreGroupRow & { g: number })[]);
      return ranges.map((_, i) => groups.get(i) ?? emptyScoreSums());
    },
    /** Store.scoreBreakdown (the caller catches the projector up first). */
    breakdown(projectId: string, query: ScoreAnalyticsQuery & { by: ScoreDimension; from_us: number; to_us: number }) {
      const values: unknown[] = [];
      const p = (value: unknown) => {
        values.push(value);
        return "?";
      };
      const sql = scoreFactsQuery("score_facts f", "f.key", query, p, projectId, query.by, query);
      const groups = sumsByGroup(statement(sql).all(...values) as (ScoreGroupRow & { g: string | null })[]);
      return [...groups.entries()].map(([key, sums]) => ({ key, sums }));
    },
  };
}
