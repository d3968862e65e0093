-- agentmon's PostgreSQL schema, version 8: the time series' rollups (as SQLite's 010;
-- docs/decisions/026-analytics-rollups.md). Per project and 15-minute slot of the sessions'
-- init_us, the sums the series shows, and a log-scale histogram of duration_us (bucket 0: 0 µs;
-- bucket k >= 1: [1.02^(k-1), 1.02^k) µs; max_us the largest duration ever put in).
--
-- Statement-level triggers on sessions keep them in the writing transaction, whatever the path
-- (create_events' and update_events' totals, migration 005's triggers, update_session, OTLP,
-- import, delete, bulk delete, retention): the transition tables' old rows taken out, new rows
-- put in, the rollup rows written in (project_id, slot_us) order so that two writers wait rather
-- than deadlock.

CREATE TABLE session_rollups (
  project_id        text NOT NULL,
  slot_us           bigint NOT NULL,
  sessions          bigint NOT NULL DEFAULT 0,
  failures          bigint NOT NULL DEFAULT 0,
  events            bigint NOT NULL DEFAULT 0,
  error_events      bigint NOT NULL DEFAULT 0,
  prompt_tokens     bigint NOT NULL DEFAULT 0,
  completion_tokens bigint NOT NULL DEFAULT 0,
  cost              double precision NOT NULL DEFAULT 0,
  PRIMARY KEY (project_id, slot_us)
);

CREATE TABLE session_rollup_durations (
  project_id text NOT NULL,
  slot_us    bigint NOT NULL,
  bucket     integer NOT NULL,
  n          bigint NOT NULL DEFAULT 0,
  max_us     bigint NOT NULL DEFAULT 0,
  -- n and max_us carried in the key's index, so that a series reads it only (a 30-day range is
  -- ~75 000 rows: 290 ms fetching each from the heap, 50 ms index-only on 100 000 sessions).
  PRIMARY KEY (project_id, slot_us, bucket) INCLUDE (n, max_us)
);

-- The histogram bucket of a duration, as SQLite's migration 010 computes it (libm's log on both).
CREATE FUNCTION agentmon_duration_bucket(d bigint) RETURNS integer LANGUAGE sql IMMUTABLE AS $$
  SELECT CASE WHEN d < 1 THEN 0 ELSE 1 + floor(ln(d::float8) / ln(1.02::float8))::int END
$$;

CREATE FUNCTION agentmon_sessions_rollup_added() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO session_rollups AS r (project_id, slot_us, sessions, failures, events, error_events, prompt_tokens,
    completion_tokens, cost)
  SELECT project_id, slot_us, sum(sign), sum(sign * fail), sum(sign * event_count), sum(sign * error_count),
    sum(sign * prompt_tokens), sum(sign * completion_tokens), sum(sign * cost)
  FROM (SELECT project_id, new_rows.init_us - ((new_rows.init_us % 900000000) + 900000000) % 900000000 AS slot_us, 1 AS sign, (end_state IS NOT DISTINCT FROM 'Fail')::int AS fail,
      event_count, error_count, prompt_tokens, completion_tokens, cost, duration_us FROM new_rows) d
  GROUP BY project_id, slot_us
  HAVING sum(sign) <> 0 OR sum(sign * fail) <> 0 OR sum(sign * event_count) <> 0 OR sum(sign * error_count) <> 0
    OR sum(sign * prompt_tokens) <> 0 OR sum(sign * completion_tokens) <> 0 OR sum(sign * cost) <> 0
  ORDER BY project_id, slot_us
  ON CONFLICT (project_id, slot_us) DO UPDATE SET sessions = r.sessions + excluded.sessions,
    failures = r.failures + excluded.failures, events = r.events + excluded.events,
    error_events = r.error_events + excluded.error_events, prompt_tokens = r.prompt_tokens + excluded.prompt_tokens,
    completion_tokens = r.completion_tokens + excluded.completion_tokens, cost = r.cost + excluded.cost;
  INSERT INTO session_rollup_durations AS r (project_id, slot_us, bucket, n, max_us)
  SELECT project_id, slot_us, agentmon_duration_bucket(duration_us), sum(sign),
    coalesce(max(duration_us) FILTER (WHERE sign > 0), 0)
  FROM (SELECT project_id, new_rows.init_us - ((new_rows.init_us % 900000000) + 900000000) % 900000000 AS slot_us, 1 AS sign, (end_state IS NOT DISTINCT FROM 'Fail')::int AS fail,
      event_count, error_count, prompt_tokens, completion_tokens, cost, duration_us FROM new_rows) d
  GROUP BY 1, 2, 3
  ORDER BY 1, 2, 3
  ON CONFLICT (project_id, slot_us, bucket) DO UPDATE SET n = r.n + excluded.n,
    max_us = greatest(r.max_us, excluded.max_us);
  RETURN NULL;
END $$;

CREATE FUNCTION agentmon_sessions_rollup_removed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO session_rollups AS r (project_id, slot_us, sessions, failures, events, error_events, prompt_tokens,
    completion_tokens, cost)
  SELECT project_id, slot_us, sum(sign), sum(sign * fail), sum(sign * event_count), sum(sign * error_count),
    sum(sign * prompt_tokens), sum(sign * completion_tokens), sum(sign * cost)
  FROM (SELECT project_id, old_rows.init_us - ((old_rows.init_us % 900000000) + 900000000) % 900000000 AS slot_us, -1 AS sign, (end_state IS NOT DISTINCT FROM 'Fail')::int AS fail,
      event_count, error_count, prompt_tokens, completion_tokens, cost, duration_us FROM old_rows) d
  GROUP BY project_id, slot_us
  HAVING sum(sign) <> 0 OR sum(sign * fail) <> 0 OR sum(sign * event_count) <> 0 OR sum(sign * error_count) <> 0
    OR sum(sign * prompt_tokens) <> 0 OR sum(sign * completion_tokens) <> 0 OR sum(sign * cost) <> 0
  ORDER BY project_id, slot_us
  ON CONFLICT (project_id, slot_us) DO UPDATE SET sessions = r.sessions + excluded.sessions,
    failures = r.failures + excluded.failures, events = r.events + excluded.events,
    error_events = r.error_events + excluded.error_events, prompt_tokens = r.prompt_tokens + excluded.prompt_tokens,
    completion_tokens = r.completion_tokens + excluded.completion_tokens, cost = r.cost + excluded.cost;
  INSERT INTO session_rollup_durations AS r (project_id, slot_us, bucket, n, max_us)
  SELECT project_id, slot_us, agentmon_duration_bucket(duration_us), sum(sign),
    coalesce(max(duration_us) FILTER (WHERE sign > 0), 0)
  FROM (SELECT project_id, old_rows.init_us - ((old_rows.init_us % 900000000) + 900000000) % 900000000 AS slot_us, -1 AS sign, (end_state IS NOT DISTINCT FROM 'Fail')::int AS fail,
      event_count, error_count, prompt_tokens, completion_tokens, cost, duration_us FROM old_rows) d
  GROUP BY 1, 2, 3
  ORDER BY 1, 2, 3
  ON CONFLICT (project_id, slot_us, bucket) DO UPDATE SET n = r.n + excluded.n,
    max_us = greatest(r.max_us, excluded.max_us);
  RETURN NULL;
END $$;

CREATE FUNCTION agentmon_sessions_rollup_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO session_rollups AS r (project_id, slot_us, sessions, failures, events, error_events, prompt_tokens,
    completion_tokens, cost)
  SELECT project_id, slot_us, sum(sign), sum(sign * fail), sum(sign * event_count), sum(sign * error_count),
    sum(sign * prompt_tokens), sum(sign * completion_tokens), sum(sign * cost)
  FROM (SELECT project_id, old_rows.init_us - ((old_rows.init_us % 900000000) + 900000000) % 900000000 AS slot_us, -1 AS sign, (end_state IS NOT DISTINCT FROM 'Fail')::int AS fail,
      event_count, error_count, prompt_tokens, completion_tokens, cost, duration_us FROM old_rows
    UNION ALL SELECT project_id, new_rows.init_us - ((new_rows.init_us % 900000000) + 900000000) % 900000000 AS slot_us, 1 AS sign, (end_state IS NOT DISTINCT FROM 'Fail')::int AS fail,
      event_count, error_count, prompt_tokens, completion_tokens, cost, duration_us FROM new_rows) d
  GROUP BY project_id, slot_us
  HAVING sum(sign) <> 0 OR sum(sign * fail) <> 0 OR sum(sign * event_count) <> 0 OR sum(sign * error_count) <> 0
    OR sum(sign * prompt_tokens) <> 0 OR sum(sign * completion_tokens) <> 0 OR sum(sign * cost) <> 0
  ORDER BY project_id, slot_us
  ON CONFLICT (project_id, slot_us) DO UPDATE SET sessions = r.sessions + excluded.sessions,
    failures = r.failures + excluded.failures, events = r.events + excluded.events,
    error_events = r.error_events + excluded.error_events, prompt_tokens = r.prompt_tokens + excluded.prompt_tokens,
    completion_tokens = r.completion_tokens + excluded.completion_tokens, cost = r.cost + excluded.cost;
  INSERT INTO session_rollup_durations AS r (project_id, slot_us, bucket, n, max_us)
  SELECT project_id, slot_us, agentmon_duration_bucket(duration_us), sum(sign),
    coalesce(max(duration_us) FILTER (WHERE sign > 0), 0)
  FROM (SELECT o.project_id, o.init_us - ((o.init_us % 900000000) + 900000000) % 900000000 AS slot_us, -1 AS sign, o.duration_us
      FROM old_rows o JOIN new_rows n USING (pk) WHERE o.project_id <> n.project_id OR o.init_us <> n.init_us OR o.duration_us <> n.duration_us
    UNION ALL SELECT n.project_id, n.init_us - ((n.init_us % 900000000) + 900000000) % 900000000, 1, n.duration_us
      FROM old_rows o JOIN new_rows n USING (pk) WHERE o.project_id <> n.project_id OR o.init_us <> n.init_us OR o.duration_us <> n.duration_us) d
  GROUP BY 1, 2, 3
  ORDER BY 1, 2, 3
  ON CONFLICT (project_id, slot_us, bucket) DO UPDATE SET n = r.n + excluded.n,
    max_us = greatest(r.max_us, excluded.max_us);
  RETURN NULL;
END $$;

INSERT INTO session_rollups (project_id, slot_us, sessions, failures, events, error_events, prompt_tokens,
  completion_tokens, cost)
SELECT project_id, sessions.init_us - ((sessions.init_us % 900000000) + 900000000) % 900000000, count(*), count(*) FILTER (WHERE end_state = 'Fail'),
  sum(event_count), sum(error_count), sum(prompt_tokens), sum(completion_tokens), sum(cost)
FROM sessions GROUP BY 1, 2;

INSERT INTO session_rollup_durations (project_id, slot_us, bucket, n, max_us)
SELECT project_id, sessions.init_us - ((sessions.init_us % 900000000) + 900000000) % 900000000, agentmon_duration_bucket(duration_us), count(*), max(duration_us)
FROM sessions GROUP BY 1, 2, 3;

CREATE TRIGGER sessions_rollup_added AFTER INSERT ON sessions REFERENCING NEW TABLE AS new_rows
  FOR EACH STATEMENT EXECUTE FUNCTION agentmon_sessions_rollup_added();
CREATE TRIGGER sessions_rollup_removed AFTER DELETE ON sessions REFERENCING OLD TABLE AS old_rows
  FOR EACH STATEMENT EXECUTE FUNCTION agentmon_sessions_rollup_removed();
CREATE TRIGGER sessions_rollup_changed AFTER UPDATE ON sessions REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
  FOR EACH STATEMENT EXECUTE FUNCTION agentmon_sessions_rollup_changed();
