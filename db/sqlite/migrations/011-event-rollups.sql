-- agentmon schema, version 11: the event breakdowns' rollups (issue 15; docs/decisions/027-event-rollups.md).
-- A breakdown by model, event type or tool with no filter but its range reads these (a few
-- thousand rows) instead of every event of the range's sessions.
--
-- session_keys: per session and group (dim 'model' | 'type' | 'tool', and the group's key), the
-- sums of the session's events in that group. The code that writes events keeps it
-- (db/sqlite/event-rollups.ts: a call's rows added, update_events' session out and in again, a
-- delete's sessions out, before the session's row goes); triggers here keep event_rollups equal
-- to its sums per (project, dim, UTC hour or day of the session's init_us, key), each
-- session_keys row counting as one session (and one failure if the session ended Fail), and move
-- a session's share when its start moves to another hour or its end state to or from Fail.
--
-- key: '' for no key (an llm event without a model, a tool event without a name), otherwise '='
-- and the key (a WITHOUT ROWID primary key cannot hold NULL).
CREATE TABLE session_keys (
  session_pk        INTEGER NOT NULL,
  dim               TEXT NOT NULL,
  key               TEXT NOT NULL,
  events            INTEGER NOT NULL DEFAULT 0,
  error_events      INTEGER NOT NULL DEFAULT 0,
  prompt_tokens     INTEGER NOT NULL DEFAULT 0,
  completion_tokens INTEGER NOT NULL DEFAULT 0,
  cost              REAL NOT NULL DEFAULT 0,
  PRIMARY KEY (session_pk, dim, key)
) STRICT, WITHOUT ROWID;

-- level 0: per UTC hour of the sessions' init_us; level 1: per UTC day. A range reads whole days
-- where it can, hours at its ends, and the sessions of its partial hours exactly (db/analytics.ts).
CREATE TABLE event_rollups (
  project_id        TEXT NOT NULL,
  dim               TEXT NOT NULL,
  level             INTEGER NOT NULL,
  slot_us           INTEGER NOT NULL,
  key               TEXT NOT NULL,
  sessions          INTEGER NOT NULL DEFAULT 0,
  failures          INTEGER NOT NULL DEFAULT 0,
  events            INTEGER NOT NULL DEFAULT 0,
  error_events      INTEGER NOT NULL DEFAULT 0,
  prompt_tokens     INTEGER NOT NULL DEFAULT 0,
  completion_tokens INTEGER NOT NULL DEFAULT 0,
  cost              REAL NOT NULL DEFAULT 0,
  PRIMARY KEY (project_id, dim, level, slot_us, key)
) STRICT, WITHOUT ROWID;

-- The events' durations (end - init, never negative; events without an end are not in it), in the
-- buckets of session_rollup_durations (migration 010): bucket 0 holds 0 µs, bucket k >= 1
-- [1.02^(k-1), 1.02^k) µs; max_us the largest duration ever put in. The bucket is found by
-- agentmon_duration_bucket (a JS function every connection registers: db/sqlite/event-rollups.ts),
-- the same function the write path uses, so that what a write put in a bucket is taken out of it.
CREATE TABLE event_rollup_durations (
  project_id TEXT NOT NULL,
  dim        TEXT NOT NULL,
  level      INTEGER NOT NULL,
  slot_us    INTEGER NOT NULL,
  key        TEXT NOT NULL,
  bucket     INTEGER NOT NULL,
  n          INTEGER NOT NULL DEFAULT 0,
  max_us     INTEGER NOT NULL DEFAULT 0,
  PRIMARY KEY (project_id, dim, level, slot_us, key, bucket)
) STRICT, WITHOUT ROWID;

-- The events there are: sums per session and group, then the error events per group of their
-- trigger (body.trigger_event_id, or the span they hang on: parent_id), then the rollups.
INSERT INTO session_keys (session_pk, dim, key, events, prompt_tokens, completion_tokens, cost)
SELECT k.session_pk, k.dim, k.key, count(*),
  coalesce(sum(CASE WHEN k.type = 'llm' THEN k.prompt_tokens END), 0),
  coalesce(sum(CASE WHEN k.type = 'llm' THEN k.completion_tokens END), 0),
  total(CASE WHEN k.type = 'llm' THEN k.cost END)
FROM (
      SELECT 'model' AS dim, ifnull('=' || e.model, '') AS key, e.pk, e.session_pk, e.id, e.type, e.prompt_tokens, e.completion_tokens, e.cost, CASE WHEN e.end_us IS NULL THEN NULL ELSE max(0, e.end_us - e.init_us) END AS dur FROM events e WHERE 1 = 1 AND e.type = 'llm'
      UNION ALL SELECT 'type', '=' || e.type, e.pk, e.session_pk, e.id, e.type, e.prompt_tokens, e.completion_tokens, e.cost, CASE WHEN e.end_us IS NULL THEN NULL ELSE max(0, e.end_us - e.init_us) END AS dur FROM events e WHERE 1 = 1
      UNION ALL SELECT 'tool', ifnull('=' || CAST(json_extract(e.body, '$.name') AS TEXT), ''), e.pk, e.session_pk, e.id, e.type, e.prompt_tokens, e.completion_tokens, e.cost, CASE WHEN e.end_us IS NULL THEN NULL ELSE max(0, e.end_us - e.init_us) END AS dur FROM events e WHERE 1 = 1 AND e.type = 'tool'
    ) k
GROUP BY k.session_pk, k.dim, k.key;

UPDATE session_keys SET error_events = c.n
FROM (
  SELECT k.session_pk, k.dim, k.key, count(*) AS n
  FROM events r JOIN (
      SELECT 'model' AS dim, ifnull('=' || e.model, '') AS key, e.pk, e.session_pk, e.id, e.type, e.prompt_tokens, e.completion_tokens, e.cost, CASE WHEN e.end_us IS NULL THEN NULL ELSE max(0, e.end_us - e.init_us) END AS dur FROM events e WHERE 1 = 1 AND e.type = 'llm'
      UNION ALL SELECT 'type', '=' || e.type, e.pk, e.session_pk, e.id, e.type, e.prompt_tokens, e.completion_tokens, e.cost, CASE WHEN e.end_us IS NULL THEN NULL ELSE max(0, e.end_us - e.init_us) END AS dur FROM events e WHERE 1 = 1
      UNION ALL SELECT 'tool', ifnull('=' || CAST(json_extract(e.body, '$.name') AS TEXT), ''), e.pk, e.session_pk, e.id, e.type, e.prompt_tokens, e.completion_tokens, e.cost, CASE WHEN e.end_us IS NULL THEN NULL ELSE max(0, e.end_us - e.init_us) END AS dur FROM events e WHERE 1 = 1 AND e.type = 'tool'
    ) k ON k.session_pk = r.session_pk AND k.id = coalesce(CAST(json_extract(r.body, '$.trigger_event_id') AS TEXT), r.parent_id)
  WHERE r.type = 'error'
  GROUP BY k.session_pk, k.dim, k.key
) c
WHERE session_keys.session_pk = c.session_pk AND session_keys.dim = c.dim AND session_keys.key = c.key;

INSERT INTO event_rollups (project_id, dim, level, slot_us, key, sessions, failures, events, error_events, prompt_tokens, completion_tokens, cost)
SELECT s.project_id, k.dim, l.level, CASE l.level WHEN 0 THEN (s.init_us - ((s.init_us % 3600000000) + 3600000000) % 3600000000) ELSE (s.init_us - ((s.init_us % 86400000000) + 86400000000) % 86400000000) END, k.key, count(*), sum(s.end_state IS 'Fail'),
  sum(k.events), sum(k.error_events), sum(k.prompt_tokens), sum(k.completion_tokens), total(k.cost)
FROM session_keys k JOIN sessions s ON s.pk = k.session_pk CROSS JOIN (SELECT 0 AS level UNION ALL SELECT 1 AS level) l
GROUP BY 1, 2, 3, 4, 5;

  INSERT INTO event_rollup_durations (project_id, dim, level, slot_us, key, bucket, n, max_us)
  SELECT s.project_id, k.dim, l.level, CASE l.level WHEN 0 THEN (s.init_us - ((s.init_us % 3600000000) + 3600000000) % 3600000000) ELSE (s.init_us - ((s.init_us % 86400000000) + 86400000000) % 86400000000) END, k.key, agentmon_duration_bucket(k.dur), count(*), max(k.dur)
  FROM (
      SELECT 'model' AS dim, ifnull('=' || e.model, '') AS key, e.pk, e.session_pk, e.id, e.type, e.prompt_tokens, e.completion_tokens, e.cost, CASE WHEN e.end_us IS NULL THEN NULL ELSE max(0, e.end_us - e.init_us) END AS dur FROM events e WHERE 1 = 1 AND e.type = 'llm'
      UNION ALL SELECT 'type', '=' || e.type, e.pk, e.session_pk, e.id, e.type, e.prompt_tokens, e.completion_tokens, e.cost, CASE WHEN e.end_us IS NULL THEN NULL ELSE max(0, e.end_us - e.init_us) END AS dur FROM events e WHERE 1 = 1
      UNION ALL SELECT 'tool', ifnull('=' || CAST(json_extract(e.body, '$.name') AS TEXT), ''), e.pk, e.session_pk, e.id, e.type, e.prompt_tokens, e.completion_tokens, e.cost, CASE WHEN e.end_us IS NULL THEN NULL ELSE max(0, e.end_us - e.init_us) END AS dur FROM events e WHERE 1 = 1 AND e.type = 'tool'
    ) k CROSS JOIN (SELECT 0 AS level UNION ALL SELECT 1 AS level) l JOIN sessions s ON s.pk = k.session_pk
  WHERE k.dur IS NOT NULL
  GROUP BY 1, 2, 3, 4, 5, 6
  ON CONFLICT (project_id, dim, level, slot_us, key, bucket) DO UPDATE SET n = n + excluded.n,
    max_us = max(max_us, excluded.max_us);

-- Each row of session_keys is one session in its group: in, out, or changed (the sums of a call),
-- as signed upserts on both levels of the session's hour (its row is there: a session's rows
-- go before it does).
CREATE TRIGGER session_keys_in AFTER INSERT ON session_keys
BEGIN
  INSERT INTO event_rollups (project_id, dim, level, slot_us, key, sessions, failures, events, error_events, prompt_tokens, completion_tokens, cost)
  SELECT s.project_id, NEW.dim, l.level, CASE l.level WHEN 0 THEN (s.init_us - ((s.init_us % 3600000000) + 3600000000) % 3600000000) ELSE (s.init_us - ((s.init_us % 86400000000) + 86400000000) % 86400000000) END, NEW.key, 1, 1 * (s.end_state IS 'Fail'),
    NEW.events, NEW.error_events, NEW.prompt_tokens, NEW.completion_tokens, NEW.cost
  FROM sessions s CROSS JOIN (SELECT 0 AS level UNION ALL SELECT 1 AS level) l WHERE s.pk = NEW.session_pk
  ON CONFLICT (project_id, dim, level, slot_us, key) DO UPDATE SET sessions = sessions + excluded.sessions, failures = failures + excluded.failures, events = events + excluded.events, error_events = error_events + excluded.error_events, prompt_tokens = prompt_tokens + excluded.prompt_tokens, completion_tokens = completion_tokens + excluded.completion_tokens, cost = cost + excluded.cost;
END;

CREATE TRIGGER session_keys_out AFTER DELETE ON session_keys
BEGIN
  INSERT INTO event_rollups (project_id, dim, level, slot_us, key, sessions, failures, events, error_events, prompt_tokens, completion_tokens, cost)
  SELECT s.project_id, OLD.dim, l.level, CASE l.level WHEN 0 THEN (s.init_us - ((s.init_us % 3600000000) + 3600000000) % 3600000000) ELSE (s.init_us - ((s.init_us % 86400000000) + 86400000000) % 86400000000) END, OLD.key, -1, -1 * (s.end_state IS 'Fail'),
    -OLD.events, -OLD.error_events, -OLD.prompt_tokens, -OLD.completion_tokens, -OLD.cost
  FROM sessions s CROSS JOIN (SELECT 0 AS level UNION ALL SELECT 1 AS level) l WHERE s.pk = OLD.session_pk
  ON CONFLICT (project_id, dim, level, slot_us, key) DO UPDATE SET sessions = sessions + excluded.sessions, failures = failures + excluded.failures, events = events + excluded.events, error_events = error_events + excluded.error_events, prompt_tokens = prompt_tokens + excluded.prompt_tokens, completion_tokens = completion_tokens + excluded.completion_tokens, cost = cost + excluded.cost;
END;

CREATE TRIGGER session_keys_changed AFTER UPDATE ON session_keys
BEGIN
  INSERT INTO event_rollups (project_id, dim, level, slot_us, key, sessions, failures, events, error_events, prompt_tokens, completion_tokens, cost)
  SELECT s.project_id, NEW.dim, l.level, CASE l.level WHEN 0 THEN (s.init_us - ((s.init_us % 3600000000) + 3600000000) % 3600000000) ELSE (s.init_us - ((s.init_us % 86400000000) + 86400000000) % 86400000000) END, NEW.key, 0, 0, NEW.events - OLD.events,
    NEW.error_events - OLD.error_events, NEW.prompt_tokens - OLD.prompt_tokens,
    NEW.completion_tokens - OLD.completion_tokens, NEW.cost - OLD.cost
  FROM sessions s CROSS JOIN (SELECT 0 AS level UNION ALL SELECT 1 AS level) l WHERE s.pk = NEW.session_pk
  ON CONFLICT (project_id, dim, level, slot_us, key) DO UPDATE SET sessions = sessions + excluded.sessions, failures = failures + excluded.failures, events = events + excluded.events, error_events = error_events + excluded.error_events, prompt_tokens = prompt_tokens + excluded.prompt_tokens, completion_tokens = completion_tokens + excluded.completion_tokens, cost = cost + excluded.cost;
END;

-- A session whose start moved to another hour (update_session, an earlier OTLP span): its share
-- out of the old hour and day, into the new ones (counted with its old end state both times, so
-- that a change of end state in the same UPDATE, the trigger below, adds to the new hour in
-- whichever order the two fire).
CREATE TRIGGER sessions_event_rollups_moved AFTER UPDATE OF project_id, init_us ON sessions
  WHEN OLD.project_id <> NEW.project_id OR (OLD.init_us - ((OLD.init_us % 3600000000) + 3600000000) % 3600000000) <> (NEW.init_us - ((NEW.init_us % 3600000000) + 3600000000) % 3600000000)
BEGIN
  INSERT INTO event_rollups (project_id, dim, level, slot_us, key, sessions, failures, events, error_events, prompt_tokens, completion_tokens, cost)
  SELECT OLD.project_id, k.dim, l.level, CASE l.level WHEN 0 THEN (OLD.init_us - ((OLD.init_us % 3600000000) + 3600000000) % 3600000000) ELSE (OLD.init_us - ((OLD.init_us % 86400000000) + 86400000000) % 86400000000) END, k.key, -1, -(OLD.end_state IS 'Fail'),
    -k.events, -k.error_events, -k.prompt_tokens, -k.completion_tokens, -k.cost
  FROM session_keys k CROSS JOIN (SELECT 0 AS level UNION ALL SELECT 1 AS level) l WHERE k.session_pk = NEW.pk
  ON CONFLICT (project_id, dim, level, slot_us, key) DO UPDATE SET sessions = sessions + excluded.sessions, failures = failures + excluded.failures, events = events + excluded.events, error_events = error_events + excluded.error_events, prompt_tokens = prompt_tokens + excluded.prompt_tokens, completion_tokens = completion_tokens + excluded.completion_tokens, cost = cost + excluded.cost;
  INSERT INTO event_rollups (project_id, dim, level, slot_us, key, sessions, failures, events, error_events, prompt_tokens, completion_tokens, cost)
  SELECT NEW.project_id, k.dim, l.level, CASE l.level WHEN 0 THEN (NEW.init_us - ((NEW.init_us % 3600000000) + 3600000000) % 3600000000) ELSE (NEW.init_us - ((NEW.init_us % 86400000000) + 86400000000) % 86400000000) END, k.key, 1, (OLD.end_state IS 'Fail'),
    k.events, k.error_events, k.prompt_tokens, k.completion_tokens, k.cost
  FROM session_keys k CROSS JOIN (SELECT 0 AS level UNION ALL SELECT 1 AS level) l WHERE k.session_pk = NEW.pk
  ON CONFLICT (project_id, dim, level, slot_us, key) DO UPDATE SET sessions = sessions + excluded.sessions, failures = failures + excluded.failures, events = events + excluded.events, error_events = error_events + excluded.error_events, prompt_tokens = prompt_tokens + excluded.prompt_tokens, completion_tokens = completion_tokens + excluded.completion_tokens, cost = cost + excluded.cost;
  INSERT INTO event_rollup_durations (project_id, dim, level, slot_us, key, bucket, n, max_us)
  SELECT OLD.project_id, k.dim, l.level, CASE l.level WHEN 0 THEN (OLD.init_us - ((OLD.init_us % 3600000000) + 3600000000) % 3600000000) ELSE (OLD.init_us - ((OLD.init_us % 86400000000) + 86400000000) % 86400000000) END, k.key, agentmon_duration_bucket(k.dur), -count(*), 0
  FROM (
      SELECT 'model' AS dim, ifnull('=' || e.model, '') AS key, e.pk, e.session_pk, e.id, e.type, e.prompt_tokens, e.completion_tokens, e.cost, CASE WHEN e.end_us IS NULL THEN NULL ELSE max(0, e.end_us - e.init_us) END AS dur FROM events e WHERE e.session_pk = NEW.pk AND e.type = 'llm'
      UNION ALL SELECT 'type', '=' || e.type, e.pk, e.session_pk, e.id, e.type, e.prompt_tokens, e.completion_tokens, e.cost, CASE WHEN e.end_us IS NULL THEN NULL ELSE max(0, e.end_us - e.init_us) END AS dur FROM events e WHERE e.session_pk = NEW.pk
      UNION ALL SELECT 'tool', ifnull('=' || CAST(json_extract(e.body, '$.name') AS TEXT), ''), e.pk, e.session_pk, e.id, e.type, e.prompt_tokens, e.completion_tokens, e.cost, CASE WHEN e.end_us IS NULL THEN NULL ELSE max(0, e.end_us - e.init_us) END AS dur FROM events e WHERE e.session_pk = NEW.pk AND e.type = 'tool'
    ) k CROSS JOIN (SELECT 0 AS level UNION ALL SELECT 1 AS level) l
  WHERE k.dur IS NOT NULL
  GROUP BY 1, 2, 3, 4, 5, 6
  ON CONFLICT (project_id, dim, level, slot_us, key, bucket) DO UPDATE SET n = n + excluded.n,
    max_us = max(max_us, excluded.max_us);
  INSERT INTO event_rollup_durations (project_id, dim, level, slot_us, key, bucket, n, max_us)
  SELECT NEW.project_id, k.dim, l.level, CASE l.level WHEN 0 THEN (NEW.init_us - ((NEW.init_us % 3600000000) + 3600000000) % 3600000000) ELSE (NEW.init_us - ((NEW.init_us % 86400000000) + 86400000000) % 86400000000) END, k.key, agentmon_duration_bucket(k.dur), count(*), max(k.dur)
  FROM (
      SELECT 'model' AS dim, ifnull('=' || e.model, '') AS key, e.pk, e.session_pk, e.id, e.type, e.prompt_tokens, e.completion_tokens, e.cost, CASE WHEN e.end_us IS NULL THEN NULL ELSE max(0, e.end_us - e.init_us) END AS dur FROM events e WHERE e.session_pk = NEW.pk AND e.type = 'llm'
      UNION ALL SELECT 'type', '=' || e.type, e.pk, e.session_pk, e.id, e.type, e.prompt_tokens, e.completion_tokens, e.cost, CASE WHEN e.end_us IS NULL THEN NULL ELSE max(0, e.end_us - e.init_us) END AS dur FROM events e WHERE e.session_pk = NEW.pk
      UNION ALL SELECT 'tool', ifnull('=' || CAST(json_extract(e.body, '$.name') AS TEXT), ''), e.pk, e.session_pk, e.id, e.type, e.prompt_tokens, e.completion_tokens, e.cost, CASE WHEN e.end_us IS NULL THEN NULL ELSE max(0, e.end_us - e.init_us) END AS dur FROM events e WHERE e.session_pk = NEW.pk AND e.type = 'tool'
    ) k CROSS JOIN (SELECT 0 AS level UNION ALL SELECT 1 AS level) l
  WHERE k.dur IS NOT NULL
  GROUP BY 1, 2, 3, 4, 5, 6
  ON CONFLICT (project_id, dim, level, slot_us, key, bucket) DO UPDATE SET n = n + excluded.n,
    max_us = max(max_us, excluded.max_us);
END;

-- A session that ended Fail, or no longer does: its groups' failures, in its (new) hour.
CREATE TRIGGER sessions_event_rollups_failed AFTER UPDATE OF end_state ON sessions
  WHEN (OLD.end_state IS 'Fail') <> (NEW.end_state IS 'Fail')
BEGIN
  INSERT INTO event_rollups (project_id, dim, level, slot_us, key, sessions, failures, events, error_events, prompt_tokens, completion_tokens, cost)
  SELECT NEW.project_id, k.dim, l.level, CASE l.level WHEN 0 THEN (NEW.init_us - ((NEW.init_us % 3600000000) + 3600000000) % 3600000000) ELSE (NEW.init_us - ((NEW.init_us % 86400000000) + 86400000000) % 86400000000) END, k.key, 0,
    (NEW.end_state IS 'Fail') - (OLD.end_state IS 'Fail'), 0, 0, 0, 0, 0
  FROM session_keys k CROSS JOIN (SELECT 0 AS level UNION ALL SELECT 1 AS level) l WHERE k.session_pk = NEW.pk
  ON CONFLICT (project_id, dim, level, slot_us, key) DO UPDATE SET sessions = sessions + excluded.sessions, failures = failures + excluded.failures, events = events + excluded.events, error_events = error_events + excluded.error_events, prompt_tokens = prompt_tokens + excluded.prompt_tokens, completion_tokens = completion_tokens + excluded.completion_tokens, cost = cost + excluded.cost;
END;
