-- agentmon schema, version 7: per-session totals kept at write time (issue 15 part 5,
-- docs/decisions/022-session-totals.md), and the indexes of the sessions list's sorts.

-- The same sums as the read-time totals of version 6 (db/rows.ts TotalsRow): every event counts,
-- tokens and cost of llm events only. Every write of events keeps them exact in its own
-- transaction (db/sqlite/totals.ts); this migration fills them in for the sessions there are.
ALTER TABLE sessions ADD COLUMN event_count INTEGER NOT NULL DEFAULT 0;
ALTER TABLE sessions ADD COLUMN llm_count INTEGER NOT NULL DEFAULT 0;
ALTER TABLE sessions ADD COLUMN tool_count INTEGER NOT NULL DEFAULT 0;
ALTER TABLE sessions ADD COLUMN action_count INTEGER NOT NULL DEFAULT 0;
ALTER TABLE sessions ADD COLUMN error_count INTEGER NOT NULL DEFAULT 0;
ALTER TABLE sessions ADD COLUMN prompt_tokens INTEGER NOT NULL DEFAULT 0;
ALTER TABLE sessions ADD COLUMN completion_tokens INTEGER NOT NULL DEFAULT 0;
ALTER TABLE sessions ADD COLUMN cache_read_tokens INTEGER NOT NULL DEFAULT 0;
ALTER TABLE sessions ADD COLUMN cache_creation_tokens INTEGER NOT NULL DEFAULT 0;
ALTER TABLE sessions ADD COLUMN reasoning_tokens INTEGER NOT NULL DEFAULT 0;
ALTER TABLE sessions ADD COLUMN cost REAL NOT NULL DEFAULT 0;
-- Earliest event init; latest event init or end (microseconds); NULL without events.
ALTER TABLE sessions ADD COLUMN first_us INTEGER;
ALTER TABLE sessions ADD COLUMN last_us INTEGER;
-- As domain/views.ts statsView's duration_ms, in microseconds: until the session's end, else its
-- latest event, else its start; from init_us; never negative.
ALTER TABLE sessions ADD COLUMN duration_us INTEGER NOT NULL DEFAULT 0;

UPDATE sessions SET
  event_count = t.events, llm_count = t.llm, tool_count = t.tool, action_count = t.action, error_count = t.error,
  prompt_tokens = t.prompt_tokens, completion_tokens = t.completion_tokens,
  cache_read_tokens = t.cache_read_tokens, cache_creation_tokens = t.cache_creation_tokens,
  reasoning_tokens = t.reasoning_tokens, cost = t.cost, first_us = t.first_us, last_us = t.last_us
FROM (
  SELECT session_pk, count(*) AS events,
    count(*) FILTER (WHERE type = 'llm') AS llm, count(*) FILTER (WHERE type = 'tool') AS tool,
    count(*) FILTER (WHERE type = 'action') AS action, count(*) FILTER (WHERE type = 'error') AS error,
    coalesce(sum(prompt_tokens) FILTER (WHERE type = 'llm'), 0) AS prompt_tokens,
    coalesce(sum(completion_tokens) FILTER (WHERE type = 'llm'), 0) AS completion_tokens,
    coalesce(sum(cache_read_tokens) FILTER (WHERE type = 'llm'), 0) AS cache_read_tokens,
    coalesce(sum(cache_creation_tokens) FILTER (WHERE type = 'llm'), 0) AS cache_creation_tokens,
    coalesce(sum(reasoning_tokens) FILTER (WHERE type = 'llm'), 0) AS reasoning_tokens,
    total(cost) FILTER (WHERE type = 'llm') AS cost,
    min(init_us) AS first_us, max(max(init_us, coalesce(end_us, init_us))) AS last_us
  FROM events GROUP BY session_pk
) AS t
WHERE sessions.pk = t.session_pk;

-- Stored end_timestamps are always YYYY-MM-DDTHH:MM:SS[.f{1,6}]Z: microseconds as migration 002.
UPDATE sessions SET duration_us = max(0, coalesce(
  CASE WHEN end_timestamp IS NULL THEN NULL
    ELSE unixepoch(substr(end_timestamp, 1, 19)) * 1000000
      + CASE WHEN length(end_timestamp) > 21
          THEN CAST(substr(substr(end_timestamp, 21, length(end_timestamp) - 21) || '000000', 1, 6) AS INTEGER)
          ELSE 0 END
  END, last_us, init_us) - init_us);

-- The models a session's llm events used (the model filter), with their share of the totals.
-- llm events without a model are not in it.
CREATE TABLE session_models (
  session_pk        INTEGER NOT NULL REFERENCES sessions (pk) ON DELETE CASCADE,
  model             TEXT NOT NULL,
  llm_count         INTEGER NOT NULL DEFAULT 0,
  prompt_tokens     INTEGER NOT NULL DEFAULT 0,
  completion_tokens INTEGER NOT NULL DEFAULT 0,
  cost              REAL NOT NULL DEFAULT 0,
  PRIMARY KEY (session_pk, model)
) STRICT, WITHOUT ROWID;
CREATE INDEX session_models_by_model ON session_models (model, session_pk);

INSERT INTO session_models (session_pk, model, llm_count, prompt_tokens, completion_tokens, cost)
SELECT session_pk, model, count(*), coalesce(sum(prompt_tokens), 0), coalesce(sum(completion_tokens), 0), total(cost)
FROM events WHERE type = 'llm' AND model IS NOT NULL
GROUP BY session_pk, model;

-- The sorts of GET /v2/sessions: each first page, either order, is a walk of one of these.
CREATE INDEX sessions_by_project_duration ON sessions (project_id, duration_us DESC, id DESC);
CREATE INDEX sessions_by_project_cost ON sessions (project_id, cost DESC, id DESC);
CREATE INDEX sessions_by_project_tokens ON sessions (project_id, (prompt_tokens + completion_tokens) DESC, id DESC);
CREATE INDEX sessions_by_project_events ON sessions (project_id, event_count DESC, id DESC);

-- duration_us follows the session's own fields: its end and start, on every write of them (a
-- new session that ends, update_session, an OTLP root span or an earlier span). The writes of
-- events set it with last_us (db/sqlite/totals.ts).
CREATE TRIGGER sessions_duration_created AFTER INSERT ON sessions WHEN NEW.end_timestamp IS NOT NULL
BEGIN
  UPDATE sessions SET duration_us = max(0, coalesce(
    unixepoch(substr(end_timestamp, 1, 19)) * 1000000
      + CASE WHEN length(end_timestamp) > 21
          THEN CAST(substr(substr(end_timestamp, 21, length(end_timestamp) - 21) || '000000', 1, 6) AS INTEGER)
          ELSE 0 END,
    last_us, init_us) - init_us)
  WHERE pk = NEW.pk;
END;
CREATE TRIGGER sessions_duration_changed AFTER UPDATE OF init_us, end_timestamp ON sessions
BEGIN
  UPDATE sessions SET duration_us = max(0, coalesce(
    unixepoch(substr(end_timestamp, 1, 19)) * 1000000
      + CASE WHEN length(end_timestamp) > 21
          THEN CAST(substr(substr(end_timestamp, 21, length(end_timestamp) - 21) || '000000', 1, 6) AS INTEGER)
          ELSE 0 END,
    last_us, init_us) - init_us)
  WHERE pk = NEW.pk;
END;
