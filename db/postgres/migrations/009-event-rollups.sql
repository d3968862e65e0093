-- agentmon's PostgreSQL schema, version 9: the event breakdowns' rollups (as SQLite's 011;
-- docs/decisions/027-event-rollups.md). session_keys: per session and group (dim 'model' | 'type'
-- | 'tool', key '' for none or '=' and the key), the sums of the session's events in the group,
-- with the session's project, UTC hour of init_us and whether it ended Fail; event_rollups: their
-- sums per (project, dim, UTC hour (level 0) or day (level 1), key), each session_keys row one
-- session; event_rollup_durations: the events' durations in the 2 % buckets of migration 008.
--
-- Statement-level triggers keep them in the writing transaction, whatever the path: events added
-- (their groups and durations, and the error events naming one of them or named by them), events
-- changed (their durations out and in again, their sessions' groups counted again), events gone
-- with their sessions (the same), a session's start moved to another hour or its end state
-- changed to or from Fail. Every rollup write is in key order, so that two writers wait rather
-- than deadlock.

CREATE TABLE session_keys (
  session_pk        bigint NOT NULL,
  dim               text NOT NULL,
  key               text COLLATE "C" NOT NULL,
  project_id        text NOT NULL,
  slot_us           bigint NOT NULL,
  failed            integer NOT NULL,
  events            bigint NOT NULL DEFAULT 0,
  error_events      bigint NOT NULL DEFAULT 0,
  prompt_tokens     bigint NOT NULL DEFAULT 0,
  completion_tokens bigint NOT NULL DEFAULT 0,
  cost              double precision NOT NULL DEFAULT 0,
  PRIMARY KEY (session_pk, dim, key)
);

CREATE TABLE event_rollups (
  project_id        text NOT NULL,
  dim               text NOT NULL,
  level             integer NOT NULL,
  slot_us           bigint NOT NULL,
  key               text COLLATE "C" NOT NULL,
  sessions          bigint NOT NULL DEFAULT 0,
  failures          bigint NOT NULL DEFAULT 0,
  events            bigint NOT NULL DEFAULT 0,
  error_events      bigint NOT NULL DEFAULT 0,
  prompt_tokens     bigint NOT NULL DEFAULT 0,
  completion_tokens bigint NOT NULL DEFAULT 0,
  cost              double precision NOT NULL DEFAULT 0,
  PRIMARY KEY (project_id, dim, level, slot_us, key)
);

CREATE TABLE event_rollup_durations (
  project_id text NOT NULL,
  dim        text NOT NULL,
  level      integer NOT NULL,
  slot_us    bigint NOT NULL,
  key        text COLLATE "C" NOT NULL,
  bucket     integer NOT NULL,
  n          bigint NOT NULL DEFAULT 0,
  max_us     bigint NOT NULL DEFAULT 0,
  PRIMARY KEY (project_id, dim, level, slot_us, key, bucket) INCLUDE (n, max_us)
);

-- The groups of the sessions pks counted again from their events (update_events, a delete): their
-- rows out (the triggers below take them out of the rollups) and in again, errors included.
CREATE FUNCTION agentmon_session_keys_recount(pks bigint[]) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
  DELETE FROM session_keys WHERE session_pk = ANY(pks);
  INSERT INTO session_keys AS k (session_pk, dim, key, project_id, slot_us, failed, events, prompt_tokens,
    completion_tokens, cost)
  SELECT g.session_pk, g.dim, g.key, s.project_id, (s.init_us - ((s.init_us % 3600000000) + 3600000000) % 3600000000), (s.end_state IS NOT DISTINCT FROM 'Fail')::int, count(*),
    coalesce(sum(g.prompt_tokens) FILTER (WHERE g.type = 'llm'), 0),
    coalesce(sum(g.completion_tokens) FILTER (WHERE g.type = 'llm'), 0),
    coalesce(sum(g.cost) FILTER (WHERE g.type = 'llm'), 0)
  FROM (
      SELECT 'model' AS dim, coalesce('=' || e.model, '') AS key, e.session_pk, e.id, e.type, e.prompt_tokens, e.completion_tokens, e.cost, CASE WHEN e.end_us IS NULL THEN NULL ELSE greatest(0, e.end_us - e.init_us) END AS dur FROM (SELECT * FROM events WHERE session_pk = ANY(pks)) e WHERE e.type = 'llm'
      UNION ALL SELECT 'type', '=' || e.type, e.session_pk, e.id, e.type, e.prompt_tokens, e.completion_tokens, e.cost, CASE WHEN e.end_us IS NULL THEN NULL ELSE greatest(0, e.end_us - e.init_us) END AS dur FROM (SELECT * FROM events WHERE session_pk = ANY(pks)) e
      UNION ALL SELECT 'tool', coalesce('=' || (e.body::json ->> 'name'), ''), e.session_pk, e.id, e.type, e.prompt_tokens, e.completion_tokens, e.cost, CASE WHEN e.end_us IS NULL THEN NULL ELSE greatest(0, e.end_us - e.init_us) END AS dur FROM (SELECT * FROM events WHERE session_pk = ANY(pks)) e WHERE e.type = 'tool'
    ) g JOIN sessions s ON s.pk = g.session_pk
  GROUP BY g.session_pk, g.dim, g.key, s.project_id, s.init_us, s.end_state
  ORDER BY 1, 2, 3;
  UPDATE session_keys k SET error_events = k.error_events + c.n
  FROM (
    SELECT e.session_pk, d.dim, CASE d.dim WHEN 'model' THEN coalesce('=' || e.model, '') WHEN 'type' THEN '=' || e.type
        ELSE coalesce('=' || (e.body::json ->> 'name'), '') END AS key, count(*) AS n
    FROM events r JOIN events e ON e.session_pk = r.session_pk AND e.id = coalesce(r.body::json ->> 'trigger_event_id', r.parent_id) COLLATE "C"
      JOIN (VALUES ('model'), ('type'), ('tool')) AS d(dim)
        ON d.dim = 'type' OR (d.dim = 'model' AND e.type = 'llm') OR (d.dim = 'tool' AND e.type = 'tool')
    WHERE r.session_pk = ANY(pks) AND r.type = 'error' AND (true)
    GROUP BY 1, 2, 3
    ORDER BY 1, 2, 3
  ) c
  WHERE k.session_pk = c.session_pk AND k.dim = c.dim AND k.key = c.key;
END $$;

CREATE FUNCTION agentmon_event_rollups_added() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  pks bigint[];
BEGIN
  WITH a AS (
    SELECT e.session_pk, e.type, e.model, CASE WHEN e.type = 'tool' THEN e.body::json ->> 'name' END AS tool,
      agentmon_duration_bucket(d.dur) AS bucket, count(*) AS events, max(d.dur) AS max_us,
      coalesce(sum(e.prompt_tokens) FILTER (WHERE e.type = 'llm'), 0) AS prompt_tokens,
      coalesce(sum(e.completion_tokens) FILTER (WHERE e.type = 'llm'), 0) AS completion_tokens,
      coalesce(sum(e.cost) FILTER (WHERE e.type = 'llm'), 0) AS cost
    FROM added e CROSS JOIN LATERAL (SELECT CASE WHEN e.end_us IS NULL THEN NULL ELSE greatest(0, e.end_us - e.init_us) END AS dur) d
    GROUP BY 1, 2, 3, 4, 5
  ), g AS (
    SELECT a.*, k.dim, k.key, s.project_id, (s.init_us - ((s.init_us % 3600000000) + 3600000000) % 3600000000) AS slot_us,
      (s.end_state IS NOT DISTINCT FROM 'Fail')::int AS failed
    FROM a JOIN sessions s ON s.pk = a.session_pk CROSS JOIN LATERAL (VALUES
        ('model', CASE WHEN a.type = 'llm' THEN coalesce('=' || a.model, '') END),
        ('type', '=' || a.type),
        ('tool', CASE WHEN a.type = 'tool' THEN coalesce('=' || a.tool, '') END)) AS k (dim, key)
    WHERE k.key IS NOT NULL
  ), keyed AS (
    INSERT INTO session_keys AS k (session_pk, dim, key, project_id, slot_us, failed, events, prompt_tokens,
      completion_tokens, cost)
    SELECT session_pk, dim, key, project_id, slot_us, failed, sum(events), sum(prompt_tokens), sum(completion_tokens), sum(cost)
    FROM g
    GROUP BY session_pk, dim, key, project_id, slot_us, failed
    ORDER BY 1, 2, 3
    ON CONFLICT (session_pk, dim, key) DO UPDATE SET events = k.events + excluded.events,
      prompt_tokens = k.prompt_tokens + excluded.prompt_tokens,
      completion_tokens = k.completion_tokens + excluded.completion_tokens, cost = k.cost + excluded.cost
  )
  INSERT INTO event_rollup_durations AS r (project_id, dim, level, slot_us, key, bucket, n, max_us)
  SELECT project_id, dim, l.level, CASE l.level WHEN 0 THEN slot_us ELSE (slot_us - ((slot_us % 86400000000) + 86400000000) % 86400000000) END, key,
    bucket, sum(events), max(max_us)
  FROM g CROSS JOIN (VALUES (0), (1)) AS l(level)
  WHERE bucket IS NOT NULL
  GROUP BY 1, 2, 3, 4, 5, 6
  ORDER BY 1, 2, 3, 4, 5, 6
  ON CONFLICT (project_id, dim, level, slot_us, key, bucket) DO UPDATE SET n = r.n + excluded.n,
    max_us = greatest(r.max_us, excluded.max_us);
  -- The sessions that have errors (their totals, migration 005's trigger, counted these rows).
  SELECT array_agg(DISTINCT a.session_pk) INTO pks FROM added a JOIN sessions s ON s.pk = a.session_pk
  WHERE s.error_count > 0;
  IF pks IS NOT NULL THEN
  UPDATE session_keys k SET error_events = k.error_events + c.n
  FROM (
    SELECT e.session_pk, d.dim, CASE d.dim WHEN 'model' THEN coalesce('=' || e.model, '') WHEN 'type' THEN '=' || e.type
        ELSE coalesce('=' || (e.body::json ->> 'name'), '') END AS key, count(*) AS n
    FROM events r JOIN events e ON e.session_pk = r.session_pk AND e.id = coalesce(r.body::json ->> 'trigger_event_id', r.parent_id) COLLATE "C"
      JOIN (VALUES ('model'), ('type'), ('tool')) AS d(dim)
        ON d.dim = 'type' OR (d.dim = 'model' AND e.type = 'llm') OR (d.dim = 'tool' AND e.type = 'tool')
    WHERE r.session_pk = ANY(pks) AND r.type = 'error' AND ((r.session_pk, r.id) IN (SELECT session_pk, id FROM added) OR (e.session_pk, e.id) IN (SELECT session_pk, id FROM added))
    GROUP BY 1, 2, 3
    ORDER BY 1, 2, 3
  ) c
  WHERE k.session_pk = c.session_pk AND k.dim = c.dim AND k.key = c.key;
  END IF;
  RETURN NULL;
END $$;

CREATE FUNCTION agentmon_event_rollups_changed() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  pks bigint[];
BEGIN
  -- Only what a group, a sum or a duration depends on; an agent_id inherited (OTLP) changes none.
  SELECT array_agg(DISTINCT n.session_pk ORDER BY n.session_pk) INTO pks
  FROM before_rows o JOIN changed_rows n ON n.session_pk = o.session_pk AND n.id = o.id
  WHERE (o.type, o.model, o.prompt_tokens, o.completion_tokens, o.cost, o.init_us, o.end_us, o.parent_id,
      o.body::json ->> 'name', o.body::json ->> 'trigger_event_id')
    IS DISTINCT FROM (n.type, n.model, n.prompt_tokens, n.completion_tokens, n.cost, n.init_us, n.end_us, n.parent_id,
      n.body::json ->> 'name', n.body::json ->> 'trigger_event_id');
  IF pks IS NULL THEN
    RETURN NULL;
  END IF;
  INSERT INTO event_rollup_durations AS r (project_id, dim, level, slot_us, key, bucket, n, max_us)
  SELECT s.project_id, k.dim, l.level, CASE l.level WHEN 0 THEN (s.init_us - ((s.init_us % 3600000000) + 3600000000) % 3600000000) ELSE ((s.init_us - ((s.init_us % 3600000000) + 3600000000) % 3600000000) - (((s.init_us - ((s.init_us % 3600000000) + 3600000000) % 3600000000) % 86400000000) + 86400000000) % 86400000000) END, k.key,
    agentmon_duration_bucket(k.dur), -count(*), 0
  FROM (
      SELECT 'model' AS dim, coalesce('=' || e.model, '') AS key, e.session_pk, e.id, e.type, e.prompt_tokens, e.completion_tokens, e.cost, CASE WHEN e.end_us IS NULL THEN NULL ELSE greatest(0, e.end_us - e.init_us) END AS dur FROM (SELECT * FROM before_rows WHERE session_pk = ANY(pks)) e WHERE e.type = 'llm'
      UNION ALL SELECT 'type', '=' || e.type, e.session_pk, e.id, e.type, e.prompt_tokens, e.completion_tokens, e.cost, CASE WHEN e.end_us IS NULL THEN NULL ELSE greatest(0, e.end_us - e.init_us) END AS dur FROM (SELECT * FROM before_rows WHERE session_pk = ANY(pks)) e
      UNION ALL SELECT 'tool', coalesce('=' || (e.body::json ->> 'name'), ''), e.session_pk, e.id, e.type, e.prompt_tokens, e.completion_tokens, e.cost, CASE WHEN e.end_us IS NULL THEN NULL ELSE greatest(0, e.end_us - e.init_us) END AS dur FROM (SELECT * FROM before_rows WHERE session_pk = ANY(pks)) e WHERE e.type = 'tool'
    ) k JOIN sessions s ON s.pk = k.session_pk CROSS JOIN (VALUES (0), (1)) AS l(level)
  WHERE k.dur IS NOT NULL
  GROUP BY 1, 2, 3, 4, 5, 6
  ORDER BY 1, 2, 3, 4, 5, 6
  ON CONFLICT (project_id, dim, level, slot_us, key, bucket) DO UPDATE SET n = r.n + excluded.n,
    max_us = greatest(r.max_us, excluded.max_us);
  INSERT INTO event_rollup_durations AS r (project_id, dim, level, slot_us, key, bucket, n, max_us)
  SELECT s.project_id, k.dim, l.level, CASE l.level WHEN 0 THEN (s.init_us - ((s.init_us % 3600000000) + 3600000000) % 3600000000) ELSE ((s.init_us - ((s.init_us % 3600000000) + 3600000000) % 3600000000) - (((s.init_us - ((s.init_us % 3600000000) + 3600000000) % 3600000000) % 86400000000) + 86400000000) % 86400000000) END, k.key,
    agentmon_duration_bucket(k.dur), count(*), max(k.dur)
  FROM (
      SELECT 'model' AS dim, coalesce('=' || e.model, '') AS key, e.session_pk, e.id, e.type, e.prompt_tokens, e.completion_tokens, e.cost, CASE WHEN e.end_us IS NULL THEN NULL ELSE greatest(0, e.end_us - e.init_us) END AS dur FROM (SELECT * FROM changed_rows WHERE session_pk = ANY(pks)) e WHERE e.type = 'llm'
      UNION ALL SELECT 'type', '=' || e.type, e.session_pk, e.id, e.type, e.prompt_tokens, e.completion_tokens, e.cost, CASE WHEN e.end_us IS NULL THEN NULL ELSE greatest(0, e.end_us - e.init_us) END AS dur FROM (SELECT * FROM changed_rows WHERE session_pk = ANY(pks)) e
      UNION ALL SELECT 'tool', coalesce('=' || (e.body::json ->> 'name'), ''), e.session_pk, e.id, e.type, e.prompt_tokens, e.completion_tokens, e.cost, CASE WHEN e.end_us IS NULL THEN NULL ELSE greatest(0, e.end_us - e.init_us) END AS dur FROM (SELECT * FROM changed_rows WHERE session_pk = ANY(pks)) e WHERE e.type = 'tool'
    ) k JOIN sessions s ON s.pk = k.session_pk CROSS JOIN (VALUES (0), (1)) AS l(level)
  WHERE k.dur IS NOT NULL
  GROUP BY 1, 2, 3, 4, 5, 6
  ORDER BY 1, 2, 3, 4, 5, 6
  ON CONFLICT (project_id, dim, level, slot_us, key, bucket) DO UPDATE SET n = r.n + excluded.n,
    max_us = greatest(r.max_us, excluded.max_us);
  PERFORM agentmon_session_keys_recount(pks);
  RETURN NULL;
END $$;

-- Events go only with their session (ON DELETE CASCADE): the session's row may be gone, its
-- session_keys rows (no foreign key) still say where it was counted.
CREATE FUNCTION agentmon_event_rollups_removed() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  pks bigint[];
BEGIN
  SELECT array_agg(DISTINCT session_pk ORDER BY session_pk) INTO pks FROM gone_rows;
  IF pks IS NULL THEN
    RETURN NULL;
  END IF;
  INSERT INTO event_rollup_durations AS r (project_id, dim, level, slot_us, key, bucket, n, max_us)
  SELECT w.project_id, k.dim, l.level, CASE l.level WHEN 0 THEN w.slot_us ELSE (w.slot_us - ((w.slot_us % 86400000000) + 86400000000) % 86400000000) END, k.key,
    agentmon_duration_bucket(k.dur), -count(*), 0
  FROM (
      SELECT 'model' AS dim, coalesce('=' || e.model, '') AS key, e.session_pk, e.id, e.type, e.prompt_tokens, e.completion_tokens, e.cost, CASE WHEN e.end_us IS NULL THEN NULL ELSE greatest(0, e.end_us - e.init_us) END AS dur FROM gone_rows e WHERE e.type = 'llm'
      UNION ALL SELECT 'type', '=' || e.type, e.session_pk, e.id, e.type, e.prompt_tokens, e.completion_tokens, e.cost, CASE WHEN e.end_us IS NULL THEN NULL ELSE greatest(0, e.end_us - e.init_us) END AS dur FROM gone_rows e
      UNION ALL SELECT 'tool', coalesce('=' || (e.body::json ->> 'name'), ''), e.session_pk, e.id, e.type, e.prompt_tokens, e.completion_tokens, e.cost, CASE WHEN e.end_us IS NULL THEN NULL ELSE greatest(0, e.end_us - e.init_us) END AS dur FROM gone_rows e WHERE e.type = 'tool'
    ) k JOIN (SELECT DISTINCT ON (session_pk) session_pk, project_id, slot_us FROM session_keys WHERE session_pk = ANY(pks) ORDER BY session_pk) w ON w.session_pk = k.session_pk CROSS JOIN (VALUES (0), (1)) AS l(level)
  WHERE k.dur IS NOT NULL
  GROUP BY 1, 2, 3, 4, 5, 6
  ORDER BY 1, 2, 3, 4, 5, 6
  ON CONFLICT (project_id, dim, level, slot_us, key, bucket) DO UPDATE SET n = r.n + excluded.n,
    max_us = greatest(r.max_us, excluded.max_us);
  DELETE FROM session_keys WHERE session_pk = ANY(pks)
    AND NOT EXISTS (SELECT 1 FROM sessions WHERE pk = session_keys.session_pk);
  SELECT array_agg(pk ORDER BY pk) INTO pks FROM sessions WHERE pk = ANY(pks);
  IF pks IS NOT NULL THEN
    PERFORM agentmon_session_keys_recount(pks);
  END IF;
  RETURN NULL;
END $$;

-- A session whose start moved to another hour, or whose end state changed to or from Fail.
CREATE FUNCTION agentmon_event_rollups_sessions_changed() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  pks bigint[];
BEGIN
  SELECT array_agg(n.pk ORDER BY n.pk) INTO pks FROM old_rows o JOIN new_rows n USING (pk)
  WHERE o.project_id <> n.project_id OR (o.init_us - ((o.init_us % 3600000000) + 3600000000) % 3600000000) <> (n.init_us - ((n.init_us % 3600000000) + 3600000000) % 3600000000);
  IF pks IS NOT NULL THEN
  INSERT INTO event_rollup_durations AS r (project_id, dim, level, slot_us, key, bucket, n, max_us)
  SELECT o.project_id, k.dim, l.level, CASE l.level WHEN 0 THEN (o.init_us - ((o.init_us % 3600000000) + 3600000000) % 3600000000) ELSE ((o.init_us - ((o.init_us % 3600000000) + 3600000000) % 3600000000) - (((o.init_us - ((o.init_us % 3600000000) + 3600000000) % 3600000000) % 86400000000) + 86400000000) % 86400000000) END, k.key,
    agentmon_duration_bucket(k.dur), -count(*), 0
  FROM (
      SELECT 'model' AS dim, coalesce('=' || e.model, '') AS key, e.session_pk, e.id, e.type, e.prompt_tokens, e.completion_tokens, e.cost, CASE WHEN e.end_us IS NULL THEN NULL ELSE greatest(0, e.end_us - e.init_us) END AS dur FROM (SELECT * FROM events WHERE session_pk = ANY(pks)) e WHERE e.type = 'llm'
      UNION ALL SELECT 'type', '=' || e.type, e.session_pk, e.id, e.type, e.prompt_tokens, e.completion_tokens, e.cost, CASE WHEN e.end_us IS NULL THEN NULL ELSE greatest(0, e.end_us - e.init_us) END AS dur FROM (SELECT * FROM events WHERE session_pk = ANY(pks)) e
      UNION ALL SELECT 'tool', coalesce('=' || (e.body::json ->> 'name'), ''), e.session_pk, e.id, e.type, e.prompt_tokens, e.completion_tokens, e.cost, CASE WHEN e.end_us IS NULL THEN NULL ELSE greatest(0, e.end_us - e.init_us) END AS dur FROM (SELECT * FROM events WHERE session_pk = ANY(pks)) e WHERE e.type = 'tool'
    ) k JOIN old_rows o ON o.pk = k.session_pk CROSS JOIN (VALUES (0), (1)) AS l(level)
  WHERE k.dur IS NOT NULL
  GROUP BY 1, 2, 3, 4, 5, 6
  ORDER BY 1, 2, 3, 4, 5, 6
  ON CONFLICT (project_id, dim, level, slot_us, key, bucket) DO UPDATE SET n = r.n + excluded.n,
    max_us = greatest(r.max_us, excluded.max_us);
  INSERT INTO event_rollup_durations AS r (project_id, dim, level, slot_us, key, bucket, n, max_us)
  SELECT n.project_id, k.dim, l.level, CASE l.level WHEN 0 THEN (n.init_us - ((n.init_us % 3600000000) + 3600000000) % 3600000000) ELSE ((n.init_us - ((n.init_us % 3600000000) + 3600000000) % 3600000000) - (((n.init_us - ((n.init_us % 3600000000) + 3600000000) % 3600000000) % 86400000000) + 86400000000) % 86400000000) END, k.key,
    agentmon_duration_bucket(k.dur), count(*), max(k.dur)
  FROM (
      SELECT 'model' AS dim, coalesce('=' || e.model, '') AS key, e.session_pk, e.id, e.type, e.prompt_tokens, e.completion_tokens, e.cost, CASE WHEN e.end_us IS NULL THEN NULL ELSE greatest(0, e.end_us - e.init_us) END AS dur FROM (SELECT * FROM events WHERE session_pk = ANY(pks)) e WHERE e.type = 'llm'
      UNION ALL SELECT 'type', '=' || e.type, e.session_pk, e.id, e.type, e.prompt_tokens, e.completion_tokens, e.cost, CASE WHEN e.end_us IS NULL THEN NULL ELSE greatest(0, e.end_us - e.init_us) END AS dur FROM (SELECT * FROM events WHERE session_pk = ANY(pks)) e
      UNION ALL SELECT 'tool', coalesce('=' || (e.body::json ->> 'name'), ''), e.session_pk, e.id, e.type, e.prompt_tokens, e.completion_tokens, e.cost, CASE WHEN e.end_us IS NULL THEN NULL ELSE greatest(0, e.end_us - e.init_us) END AS dur FROM (SELECT * FROM events WHERE session_pk = ANY(pks)) e WHERE e.type = 'tool'
    ) k JOIN new_rows n ON n.pk = k.session_pk CROSS JOIN (VALUES (0), (1)) AS l(level)
  WHERE k.dur IS NOT NULL
  GROUP BY 1, 2, 3, 4, 5, 6
  ORDER BY 1, 2, 3, 4, 5, 6
  ON CONFLICT (project_id, dim, level, slot_us, key, bucket) DO UPDATE SET n = r.n + excluded.n,
    max_us = greatest(r.max_us, excluded.max_us);
  END IF;
  UPDATE session_keys k SET project_id = n.project_id, slot_us = (n.init_us - ((n.init_us % 3600000000) + 3600000000) % 3600000000),
    failed = (n.end_state IS NOT DISTINCT FROM 'Fail')::int
  FROM old_rows o JOIN new_rows n USING (pk)
  WHERE k.session_pk = n.pk AND (o.project_id <> n.project_id OR (o.init_us - ((o.init_us % 3600000000) + 3600000000) % 3600000000) <> (n.init_us - ((n.init_us % 3600000000) + 3600000000) % 3600000000)
    OR (o.end_state IS NOT DISTINCT FROM 'Fail') <> (n.end_state IS NOT DISTINCT FROM 'Fail'));
  RETURN NULL;
END $$;

-- session_keys' rows in, out and changed: the rollups' sums, signed, in key order.
CREATE FUNCTION agentmon_session_keys_in() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO event_rollups AS r (project_id, dim, level, slot_us, key, sessions, failures, events, error_events, prompt_tokens, completion_tokens, cost)
  SELECT d.project_id, d.dim, l.level, CASE l.level WHEN 0 THEN d.slot_us ELSE (d.slot_us - ((d.slot_us % 86400000000) + 86400000000) % 86400000000) END, d.key,
    sum(d.sign), sum(d.sign * d.failed), sum(d.sign * d.events), sum(d.sign * d.error_events),
    sum(d.sign * d.prompt_tokens), sum(d.sign * d.completion_tokens), sum(d.sign * d.cost)
  FROM (SELECT project_id, dim, slot_us, key, 1 AS sign, failed, events, error_events, prompt_tokens, completion_tokens, cost FROM new_rows) d CROSS JOIN (VALUES (0), (1)) AS l(level)
  GROUP BY 1, 2, 3, 4, 5
  HAVING sum(d.sign) <> 0 OR sum(d.sign * d.failed) <> 0 OR sum(d.sign * d.events) <> 0 OR sum(d.sign * d.error_events) <> 0
    OR sum(d.sign * d.prompt_tokens) <> 0 OR sum(d.sign * d.completion_tokens) <> 0 OR sum(d.sign * d.cost) <> 0
  ORDER BY 1, 2, 3, 4, 5
  ON CONFLICT (project_id, dim, level, slot_us, key) DO UPDATE SET sessions = r.sessions + excluded.sessions, failures = r.failures + excluded.failures, events = r.events + excluded.events, error_events = r.error_events + excluded.error_events, prompt_tokens = r.prompt_tokens + excluded.prompt_tokens, completion_tokens = r.completion_tokens + excluded.completion_tokens, cost = r.cost + excluded.cost;
  RETURN NULL;
END $$;

CREATE FUNCTION agentmon_session_keys_out() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO event_rollups AS r (project_id, dim, level, slot_us, key, sessions, failures, events, error_events, prompt_tokens, completion_tokens, cost)
  SELECT d.project_id, d.dim, l.level, CASE l.level WHEN 0 THEN d.slot_us ELSE (d.slot_us - ((d.slot_us % 86400000000) + 86400000000) % 86400000000) END, d.key,
    sum(d.sign), sum(d.sign * d.failed), sum(d.sign * d.events), sum(d.sign * d.error_events),
    sum(d.sign * d.prompt_tokens), sum(d.sign * d.completion_tokens), sum(d.sign * d.cost)
  FROM (SELECT project_id, dim, slot_us, key, -1 AS sign, failed, events, error_events, prompt_tokens, completion_tokens, cost FROM old_rows) d CROSS JOIN (VALUES (0), (1)) AS l(level)
  GROUP BY 1, 2, 3, 4, 5
  HAVING sum(d.sign) <> 0 OR sum(d.sign * d.failed) <> 0 OR sum(d.sign * d.events) <> 0 OR sum(d.sign * d.error_events) <> 0
    OR sum(d.sign * d.prompt_tokens) <> 0 OR sum(d.sign * d.completion_tokens) <> 0 OR sum(d.sign * d.cost) <> 0
  ORDER BY 1, 2, 3, 4, 5
  ON CONFLICT (project_id, dim, level, slot_us, key) DO UPDATE SET sessions = r.sessions + excluded.sessions, failures = r.failures + excluded.failures, events = r.events + excluded.events, error_events = r.error_events + excluded.error_events, prompt_tokens = r.prompt_tokens + excluded.prompt_tokens, completion_tokens = r.completion_tokens + excluded.completion_tokens, cost = r.cost + excluded.cost;
  RETURN NULL;
END $$;

CREATE FUNCTION agentmon_session_keys_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO event_rollups AS r (project_id, dim, level, slot_us, key, sessions, failures, events, error_events, prompt_tokens, completion_tokens, cost)
  SELECT d.project_id, d.dim, l.level, CASE l.level WHEN 0 THEN d.slot_us ELSE (d.slot_us - ((d.slot_us % 86400000000) + 86400000000) % 86400000000) END, d.key,
    sum(d.sign), sum(d.sign * d.failed), sum(d.sign * d.events), sum(d.sign * d.error_events),
    sum(d.sign * d.prompt_tokens), sum(d.sign * d.completion_tokens), sum(d.sign * d.cost)
  FROM (SELECT project_id, dim, slot_us, key, -1 AS sign, failed, events, error_events, prompt_tokens, completion_tokens, cost FROM old_rows UNION ALL SELECT project_id, dim, slot_us, key, 1 AS sign, failed, events, error_events, prompt_tokens, completion_tokens, cost FROM new_rows) d CROSS JOIN (VALUES (0), (1)) AS l(level)
  GROUP BY 1, 2, 3, 4, 5
  HAVING sum(d.sign) <> 0 OR sum(d.sign * d.failed) <> 0 OR sum(d.sign * d.events) <> 0 OR sum(d.sign * d.error_events) <> 0
    OR sum(d.sign * d.prompt_tokens) <> 0 OR sum(d.sign * d.completion_tokens) <> 0 OR sum(d.sign * d.cost) <> 0
  ORDER BY 1, 2, 3, 4, 5
  ON CONFLICT (project_id, dim, level, slot_us, key) DO UPDATE SET sessions = r.sessions + excluded.sessions, failures = r.failures + excluded.failures, events = r.events + excluded.events, error_events = r.error_events + excluded.error_events, prompt_tokens = r.prompt_tokens + excluded.prompt_tokens, completion_tokens = r.completion_tokens + excluded.completion_tokens, cost = r.cost + excluded.cost;
  RETURN NULL;
END $$;

-- The events there are.
SELECT agentmon_session_keys_recount(coalesce(array_agg(pk), '{}')) FROM sessions;
  INSERT INTO event_rollups AS r (project_id, dim, level, slot_us, key, sessions, failures, events, error_events, prompt_tokens, completion_tokens, cost)
  SELECT d.project_id, d.dim, l.level, CASE l.level WHEN 0 THEN d.slot_us ELSE (d.slot_us - ((d.slot_us % 86400000000) + 86400000000) % 86400000000) END, d.key,
    sum(d.sign), sum(d.sign * d.failed), sum(d.sign * d.events), sum(d.sign * d.error_events),
    sum(d.sign * d.prompt_tokens), sum(d.sign * d.completion_tokens), sum(d.sign * d.cost)
  FROM (SELECT project_id, dim, slot_us, key, 1 AS sign, failed, events, error_events, prompt_tokens, completion_tokens, cost FROM session_keys) d CROSS JOIN (VALUES (0), (1)) AS l(level)
  GROUP BY 1, 2, 3, 4, 5
  HAVING sum(d.sign) <> 0 OR sum(d.sign * d.failed) <> 0 OR sum(d.sign * d.events) <> 0 OR sum(d.sign * d.error_events) <> 0
    OR sum(d.sign * d.prompt_tokens) <> 0 OR sum(d.sign * d.completion_tokens) <> 0 OR sum(d.sign * d.cost) <> 0
  ORDER BY 1, 2, 3, 4, 5
  ON CONFLICT (project_id, dim, level, slot_us, key) DO UPDATE SET sessions = r.sessions + excluded.sessions, failures = r.failures + excluded.failures, events = r.events + excluded.events, error_events = r.error_events + excluded.error_events, prompt_tokens = r.prompt_tokens + excluded.prompt_tokens, completion_tokens = r.completion_tokens + excluded.completion_tokens, cost = r.cost + excluded.cost;
  INSERT INTO event_rollup_durations AS r (project_id, dim, level, slot_us, key, bucket, n, max_us)
  SELECT s.project_id, k.dim, l.level, CASE l.level WHEN 0 THEN (s.init_us - ((s.init_us % 3600000000) + 3600000000) % 3600000000) ELSE ((s.init_us - ((s.init_us % 3600000000) + 3600000000) % 3600000000) - (((s.init_us - ((s.init_us % 3600000000) + 3600000000) % 3600000000) % 86400000000) + 86400000000) % 86400000000) END, k.key,
    agentmon_duration_bucket(k.dur), count(*), max(k.dur)
  FROM (
      SELECT 'model' AS dim, coalesce('=' || e.model, '') AS key, e.session_pk, e.id, e.type, e.prompt_tokens, e.completion_tokens, e.cost, CASE WHEN e.end_us IS NULL THEN NULL ELSE greatest(0, e.end_us - e.init_us) END AS dur FROM events e WHERE e.type = 'llm'
      UNION ALL SELECT 'type', '=' || e.type, e.session_pk, e.id, e.type, e.prompt_tokens, e.completion_tokens, e.cost, CASE WHEN e.end_us IS NULL THEN NULL ELSE greatest(0, e.end_us - e.init_us) END AS dur FROM events e
      UNION ALL SELECT 'tool', coalesce('=' || (e.body::json ->> 'name'), ''), e.session_pk, e.id, e.type, e.prompt_tokens, e.completion_tokens, e.cost, CASE WHEN e.end_us IS NULL THEN NULL ELSE greatest(0, e.end_us - e.init_us) END AS dur FROM events e WHERE e.type = 'tool'
    ) k JOIN sessions s ON s.pk = k.session_pk CROSS JOIN (VALUES (0), (1)) AS l(level)
  WHERE k.dur IS NOT NULL
  GROUP BY 1, 2, 3, 4, 5, 6
  ORDER BY 1, 2, 3, 4, 5, 6
  ON CONFLICT (project_id, dim, level, slot_us, key, bucket) DO UPDATE SET n = r.n + excluded.n,
    max_us = greatest(r.max_us, excluded.max_us);

CREATE TRIGGER session_keys_in AFTER INSERT ON session_keys REFERENCING NEW TABLE AS new_rows
  FOR EACH STATEMENT EXECUTE FUNCTION agentmon_session_keys_in();
CREATE TRIGGER session_keys_out AFTER DELETE ON session_keys REFERENCING OLD TABLE AS old_rows
  FOR EACH STATEMENT EXECUTE FUNCTION agentmon_session_keys_out();
CREATE TRIGGER session_keys_changed AFTER UPDATE ON session_keys REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
  FOR EACH STATEMENT EXECUTE FUNCTION agentmon_session_keys_changed();
-- Named after migration 005's events_added / events_changed: statement triggers fire in name
-- order, so the sessions' totals (error_count) are counted first.
CREATE TRIGGER events_rollups_added AFTER INSERT ON events REFERENCING NEW TABLE AS added
  FOR EACH STATEMENT EXECUTE FUNCTION agentmon_event_rollups_added();
CREATE TRIGGER events_rollups_changed AFTER UPDATE ON events REFERENCING OLD TABLE AS before_rows NEW TABLE AS changed_rows
  FOR EACH STATEMENT EXECUTE FUNCTION agentmon_event_rollups_changed();
CREATE TRIGGER events_rollups_removed AFTER DELETE ON events REFERENCING OLD TABLE AS gone_rows
  FOR EACH STATEMENT EXECUTE FUNCTION agentmon_event_rollups_removed();
CREATE TRIGGER sessions_event_rollups_changed AFTER UPDATE ON sessions REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
  FOR EACH STATEMENT EXECUTE FUNCTION agentmon_event_rollups_sessions_changed();
