-- agentmon's PostgreSQL schema, version 5: per-session totals kept at write time (issue 15 part 5,
-- as SQLite's 007; docs/decisions/022-session-totals.md), and the indexes of the list's sorts.
--
-- The same sums as the read-time totals of version 4 (db/rows.ts TotalsRow). Triggers keep them
-- exact in the writing statement's own transaction, whatever the write path (the group commit's
-- one create_events statement, OTLP, update_events, import):
-- - AFTER INSERT ON events, once per statement, adds the inserted rows' sums (its transition
--   table holds only the rows really inserted, not those ON CONFLICT DO NOTHING skipped);
-- - AFTER UPDATE ON events, once per statement, counts the touched sessions again from their
--   events (update_events and OTLP are rare next to inserts; a changed type or time cannot be
--   subtracted from a min or max);
-- - BEFORE INSERT OR UPDATE ON sessions, per row, sets duration_us from the row's end, last_us
--   and init_us, so that every write of any of them keeps it right.
-- Events are only ever deleted with their session (ON DELETE CASCADE), which takes its
-- session_models rows with it.

ALTER TABLE sessions
  ADD COLUMN event_count bigint NOT NULL DEFAULT 0,
  ADD COLUMN llm_count bigint NOT NULL DEFAULT 0,
  ADD COLUMN tool_count bigint NOT NULL DEFAULT 0,
  ADD COLUMN action_count bigint NOT NULL DEFAULT 0,
  ADD COLUMN error_count bigint NOT NULL DEFAULT 0,
  ADD COLUMN prompt_tokens bigint NOT NULL DEFAULT 0,
  ADD COLUMN completion_tokens bigint NOT NULL DEFAULT 0,
  ADD COLUMN cache_read_tokens bigint NOT NULL DEFAULT 0,
  ADD COLUMN cache_creation_tokens bigint NOT NULL DEFAULT 0,
  ADD COLUMN reasoning_tokens bigint NOT NULL DEFAULT 0,
  ADD COLUMN cost double precision NOT NULL DEFAULT 0,
  ADD COLUMN first_us bigint,
  ADD COLUMN last_us bigint,
  ADD COLUMN duration_us bigint NOT NULL DEFAULT 0;

CREATE TABLE session_models (
  session_pk        bigint NOT NULL REFERENCES sessions (pk) ON DELETE CASCADE,
  model             text NOT NULL,
  llm_count         bigint NOT NULL DEFAULT 0,
  prompt_tokens     bigint NOT NULL DEFAULT 0,
  completion_tokens bigint NOT NULL DEFAULT 0,
  cost              double precision NOT NULL DEFAULT 0,
  PRIMARY KEY (session_pk, model)
);
CREATE INDEX session_models_by_model ON session_models (model, session_pk);

-- As domain/views.ts statsView's duration_ms, in microseconds: until the end, else the latest
-- event, else the start; never negative. Stored end_timestamps always carry their zone (Z).
CREATE FUNCTION agentmon_session_duration() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  NEW.duration_us := greatest(0, coalesce(
    (extract(epoch FROM NEW.end_timestamp::timestamptz) * 1000000)::int8, NEW.last_us, NEW.init_us) - NEW.init_us);
  RETURN NEW;
END $$;

-- The sessions of `pks` counted again from their events (the rare paths, and the backfill).
CREATE FUNCTION agentmon_recount_sessions(pks bigint[]) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
  UPDATE sessions s SET
    event_count = coalesce(t.events, 0), llm_count = coalesce(t.llm, 0), tool_count = coalesce(t.tool, 0),
    action_count = coalesce(t.action, 0), error_count = coalesce(t.error, 0),
    prompt_tokens = coalesce(t.prompt_tokens, 0), completion_tokens = coalesce(t.completion_tokens, 0),
    cache_read_tokens = coalesce(t.cache_read_tokens, 0), cache_creation_tokens = coalesce(t.cache_creation_tokens, 0),
    reasoning_tokens = coalesce(t.reasoning_tokens, 0), cost = coalesce(t.cost, 0),
    first_us = t.first_us, last_us = t.last_us
  FROM (SELECT p.pk, a.* FROM unnest(pks) AS p (pk) LEFT JOIN LATERAL (
      SELECT count(*) AS events,
        count(*) FILTER (WHERE type = 'llm') AS llm, count(*) FILTER (WHERE type = 'tool') AS tool,
        count(*) FILTER (WHERE type = 'action') AS action, count(*) FILTER (WHERE type = 'error') AS error,
        sum(prompt_tokens) FILTER (WHERE type = 'llm') AS prompt_tokens,
        sum(completion_tokens) FILTER (WHERE type = 'llm') AS completion_tokens,
        sum(cache_read_tokens) FILTER (WHERE type = 'llm') AS cache_read_tokens,
        sum(cache_creation_tokens) FILTER (WHERE type = 'llm') AS cache_creation_tokens,
        sum(reasoning_tokens) FILTER (WHERE type = 'llm') AS reasoning_tokens,
        sum(cost) FILTER (WHERE type = 'llm') AS cost,
        min(init_us) AS first_us, max(greatest(init_us, coalesce(end_us, init_us))) AS last_us
      FROM events e WHERE e.session_pk = p.pk) a ON true) t
  WHERE s.pk = t.pk;
  DELETE FROM session_models WHERE session_pk = ANY(pks);
  INSERT INTO session_models (session_pk, model, llm_count, prompt_tokens, completion_tokens, cost)
  SELECT session_pk, model, count(*), coalesce(sum(prompt_tokens), 0), coalesce(sum(completion_tokens), 0),
    coalesce(sum(cost), 0)
  FROM events WHERE session_pk = ANY(pks) AND type = 'llm' AND model IS NOT NULL
  GROUP BY session_pk, model;
END $$;

CREATE FUNCTION agentmon_events_added() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  -- The sessions' rows locked in pk order, so that two groups adding to the same sessions
  -- wait for each other rather than deadlock.
  PERFORM 1 FROM sessions WHERE pk IN (SELECT session_pk FROM added) ORDER BY pk FOR UPDATE;
  UPDATE sessions s SET
    event_count = s.event_count + d.events, llm_count = s.llm_count + d.llm, tool_count = s.tool_count + d.tool,
    action_count = s.action_count + d.action, error_count = s.error_count + d.error,
    prompt_tokens = s.prompt_tokens + d.prompt_tokens, completion_tokens = s.completion_tokens + d.completion_tokens,
    cache_read_tokens = s.cache_read_tokens + d.cache_read_tokens,
    cache_creation_tokens = s.cache_creation_tokens + d.cache_creation_tokens,
    reasoning_tokens = s.reasoning_tokens + d.reasoning_tokens, cost = s.cost + d.cost,
    first_us = least(s.first_us, d.first_us), last_us = greatest(s.last_us, d.last_us)
  FROM (
    SELECT session_pk, count(*) AS events,
      count(*) FILTER (WHERE type = 'llm') AS llm, count(*) FILTER (WHERE type = 'tool') AS tool,
      count(*) FILTER (WHERE type = 'action') AS action, count(*) FILTER (WHERE type = 'error') AS error,
      coalesce(sum(prompt_tokens) FILTER (WHERE type = 'llm'), 0) AS prompt_tokens,
      coalesce(sum(completion_tokens) FILTER (WHERE type = 'llm'), 0) AS completion_tokens,
      coalesce(sum(cache_read_tokens) FILTER (WHERE type = 'llm'), 0) AS cache_read_tokens,
      coalesce(sum(cache_creation_tokens) FILTER (WHERE type = 'llm'), 0) AS cache_creation_tokens,
      coalesce(sum(reasoning_tokens) FILTER (WHERE type = 'llm'), 0) AS reasoning_tokens,
      coalesce(sum(cost) FILTER (WHERE type = 'llm'), 0) AS cost,
      min(init_us) AS first_us, max(greatest(init_us, coalesce(end_us, init_us))) AS last_us
    FROM added GROUP BY session_pk
  ) d
  WHERE s.pk = d.session_pk;
  INSERT INTO session_models AS m (session_pk, model, llm_count, prompt_tokens, completion_tokens, cost)
  SELECT session_pk, model, count(*), coalesce(sum(prompt_tokens), 0), coalesce(sum(completion_tokens), 0),
    coalesce(sum(cost), 0)
  FROM added WHERE type = 'llm' AND model IS NOT NULL
  GROUP BY session_pk, model
  ORDER BY session_pk, model
  ON CONFLICT (session_pk, model) DO UPDATE SET llm_count = m.llm_count + excluded.llm_count,
    prompt_tokens = m.prompt_tokens + excluded.prompt_tokens,
    completion_tokens = m.completion_tokens + excluded.completion_tokens, cost = m.cost + excluded.cost;
  RETURN NULL;
END $$;

CREATE FUNCTION agentmon_events_changed() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  pks bigint[];
BEGIN
  SELECT array_agg(DISTINCT session_pk ORDER BY session_pk) INTO pks FROM changed;
  IF pks IS NOT NULL THEN
    PERFORM 1 FROM sessions WHERE pk = ANY(pks) ORDER BY pk FOR UPDATE;
    PERFORM agentmon_recount_sessions(pks);
  END IF;
  RETURN NULL;
END $$;

SELECT agentmon_recount_sessions(coalesce(array_agg(pk), '{}')) FROM sessions;
UPDATE sessions SET duration_us = greatest(0, coalesce(
  (extract(epoch FROM end_timestamp::timestamptz) * 1000000)::int8, last_us, init_us) - init_us);

CREATE TRIGGER sessions_duration BEFORE INSERT OR UPDATE ON sessions
  FOR EACH ROW EXECUTE FUNCTION agentmon_session_duration();
CREATE TRIGGER events_added AFTER INSERT ON events REFERENCING NEW TABLE AS added
  FOR EACH STATEMENT EXECUTE FUNCTION agentmon_events_added();
CREATE TRIGGER events_changed AFTER UPDATE ON events REFERENCING NEW TABLE AS changed
  FOR EACH STATEMENT EXECUTE FUNCTION agentmon_events_changed();

-- The sorts of GET /v2/sessions: each first page, either order, is a walk of one of these.
CREATE INDEX sessions_by_project_duration ON sessions (project_id, duration_us DESC, id DESC);
CREATE INDEX sessions_by_project_cost ON sessions (project_id, cost DESC, id DESC);
CREATE INDEX sessions_by_project_tokens ON sessions (project_id, (prompt_tokens + completion_tokens) DESC, id DESC);
CREATE INDEX sessions_by_project_events ON sessions (project_id, event_count DESC, id DESC);
