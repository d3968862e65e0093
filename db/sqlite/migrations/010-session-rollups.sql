-- agentmon schema, version 10: the time series' rollups (issue 15; docs/decisions/026-analytics-rollups.md).
-- Per project and 15-minute slot of the sessions' init_us (every zone's hour and day edges, +5:30
-- and +5:45 included, fall on a slot edge), the sums the series shows, and a log-scale histogram
-- of the sessions' duration_us. A series with no filter but its range, every range edge on a slot
-- edge, reads these (a few thousand rows) instead of every session (db/analytics.ts).
--
-- Triggers keep them in the transaction of every write of a session's row: its insert, each
-- update of its totals (create_events, update_events, OTLP, import: db/sqlite/totals.ts), of its
-- start or end (update_session; migration 007's duration triggers), and its delete (delete,
-- bulk delete, retention): the old row's values are taken out, the new row's put in.
CREATE TABLE session_rollups (
  project_id        TEXT NOT NULL,
  slot_us           INTEGER NOT NULL,
  sessions          INTEGER NOT NULL DEFAULT 0,
  failures          INTEGER NOT NULL DEFAULT 0,
  events            INTEGER NOT NULL DEFAULT 0,
  error_events      INTEGER NOT NULL DEFAULT 0,
  prompt_tokens     INTEGER NOT NULL DEFAULT 0,
  completion_tokens INTEGER NOT NULL DEFAULT 0,
  cost              REAL NOT NULL DEFAULT 0,
  PRIMARY KEY (project_id, slot_us)
) STRICT, WITHOUT ROWID;

-- The histogram: bucket 0 holds durations of 0 µs, bucket k >= 1 those in [1.02^(k-1), 1.02^k) µs
-- (1 + floor(ln(d) / ln(1.02))); max_us the largest duration ever put in (a value taken out
-- leaves it: it stays inside the bucket, which is all the answer's bound needs).
CREATE TABLE session_rollup_durations (
  project_id TEXT NOT NULL,
  slot_us    INTEGER NOT NULL,
  bucket     INTEGER NOT NULL,
  n          INTEGER NOT NULL DEFAULT 0,
  max_us     INTEGER NOT NULL DEFAULT 0,
  PRIMARY KEY (project_id, slot_us, bucket)
) STRICT, WITHOUT ROWID;

INSERT INTO session_rollups (project_id, slot_us, sessions, failures, events, error_events, prompt_tokens,
  completion_tokens, cost)
SELECT project_id, init_us - ((init_us % 900000000) + 900000000) % 900000000, count(*),
  count(*) FILTER (WHERE end_state = 'Fail'), sum(event_count), sum(error_count), sum(prompt_tokens),
  sum(completion_tokens), total(cost)
FROM sessions GROUP BY 1, 2;

INSERT INTO session_rollup_durations (project_id, slot_us, bucket, n, max_us)
SELECT project_id, init_us - ((init_us % 900000000) + 900000000) % 900000000,
  CASE WHEN duration_us < 1 THEN 0 ELSE 1 + CAST(floor(ln(duration_us) / ln(1.02)) AS INTEGER) END,
  count(*), max(duration_us)
FROM sessions GROUP BY 1, 2, 3;

-- Every change is an upsert of signed amounts (a row taken out adds -1 and minus its sums), so
-- that the order these triggers and migration 007's duration triggers fire in does not matter.

-- A session's row in: its slot's sums and its duration's bucket.
CREATE TRIGGER sessions_rollup_insert AFTER INSERT ON sessions
BEGIN
  INSERT INTO session_rollups (project_id, slot_us, sessions, failures, events, error_events, prompt_tokens,
    completion_tokens, cost)
  VALUES (NEW.project_id, NEW.init_us - ((NEW.init_us % 900000000) + 900000000) % 900000000, 1,
    (NEW.end_state IS 'Fail'), NEW.event_count, NEW.error_count, NEW.prompt_tokens,
    NEW.completion_tokens, NEW.cost)
  ON CONFLICT (project_id, slot_us) DO UPDATE SET sessions = sessions + excluded.sessions,
    failures = failures + excluded.failures, events = events + excluded.events,
    error_events = error_events + excluded.error_events, prompt_tokens = prompt_tokens + excluded.prompt_tokens,
    completion_tokens = completion_tokens + excluded.completion_tokens, cost = cost + excluded.cost;
  INSERT INTO session_rollup_durations (project_id, slot_us, bucket, n, max_us)
  VALUES (NEW.project_id, NEW.init_us - ((NEW.init_us % 900000000) + 900000000) % 900000000,
    CASE WHEN NEW.duration_us < 1 THEN 0 ELSE 1 + CAST(floor(ln(NEW.duration_us) / ln(1.02)) AS INTEGER) END, 1, NEW.duration_us)
  ON CONFLICT (project_id, slot_us, bucket) DO UPDATE SET n = n + excluded.n, max_us = max(max_us, excluded.max_us);
END;

-- A session's row out.
CREATE TRIGGER sessions_rollup_delete AFTER DELETE ON sessions
BEGIN
  INSERT INTO session_rollups (project_id, slot_us, sessions, failures, events, error_events, prompt_tokens,
    completion_tokens, cost)
  VALUES (OLD.project_id, OLD.init_us - ((OLD.init_us % 900000000) + 900000000) % 900000000, -1,
    -(OLD.end_state IS 'Fail'), -OLD.event_count, -OLD.error_count, -OLD.prompt_tokens,
    -OLD.completion_tokens, -OLD.cost)
  ON CONFLICT (project_id, slot_us) DO UPDATE SET sessions = sessions + excluded.sessions,
    failures = failures + excluded.failures, events = events + excluded.events,
    error_events = error_events + excluded.error_events, prompt_tokens = prompt_tokens + excluded.prompt_tokens,
    completion_tokens = completion_tokens + excluded.completion_tokens, cost = cost + excluded.cost;
  INSERT INTO session_rollup_durations (project_id, slot_us, bucket, n, max_us)
  VALUES (OLD.project_id, OLD.init_us - ((OLD.init_us % 900000000) + 900000000) % 900000000,
    CASE WHEN OLD.duration_us < 1 THEN 0 ELSE 1 + CAST(floor(ln(OLD.duration_us) / ln(1.02)) AS INTEGER) END, -1, 0)
  ON CONFLICT (project_id, slot_us, bucket) DO UPDATE SET n = n + excluded.n, max_us = max(max_us, excluded.max_us);
END;

-- A change of the sums in the same slot (every write of events): one upsert of the differences.
CREATE TRIGGER sessions_rollup_update AFTER UPDATE OF project_id, init_us, end_state, event_count, error_count,
  prompt_tokens, completion_tokens, cost ON sessions
  WHEN OLD.project_id = NEW.project_id AND OLD.init_us - ((OLD.init_us % 900000000) + 900000000) % 900000000 = NEW.init_us - ((NEW.init_us % 900000000) + 900000000) % 900000000
BEGIN
  INSERT INTO session_rollups (project_id, slot_us, sessions, failures, events, error_events, prompt_tokens,
    completion_tokens, cost)
  VALUES (NEW.project_id, NEW.init_us - ((NEW.init_us % 900000000) + 900000000) % 900000000, 0,
    (NEW.end_state IS 'Fail') - (OLD.end_state IS 'Fail'), NEW.event_count - OLD.event_count,
    NEW.error_count - OLD.error_count, NEW.prompt_tokens - OLD.prompt_tokens,
    NEW.completion_tokens - OLD.completion_tokens, NEW.cost - OLD.cost)
  ON CONFLICT (project_id, slot_us) DO UPDATE SET failures = failures + excluded.failures,
    events = events + excluded.events, error_events = error_events + excluded.error_events,
    prompt_tokens = prompt_tokens + excluded.prompt_tokens,
    completion_tokens = completion_tokens + excluded.completion_tokens, cost = cost + excluded.cost;
END;

-- A session moved to another slot (update_session changed its start): out of the old, into the new.
CREATE TRIGGER sessions_rollup_move AFTER UPDATE OF project_id, init_us ON sessions
  WHEN OLD.project_id <> NEW.project_id OR OLD.init_us - ((OLD.init_us % 900000000) + 900000000) % 900000000 <> NEW.init_us - ((NEW.init_us % 900000000) + 900000000) % 900000000
BEGIN
  INSERT INTO session_rollups (project_id, slot_us, sessions, failures, events, error_events, prompt_tokens,
    completion_tokens, cost)
  VALUES (OLD.project_id, OLD.init_us - ((OLD.init_us % 900000000) + 900000000) % 900000000, -1,
    -(OLD.end_state IS 'Fail'), -OLD.event_count, -OLD.error_count, -OLD.prompt_tokens,
    -OLD.completion_tokens, -OLD.cost)
  ON CONFLICT (project_id, slot_us) DO UPDATE SET sessions = sessions + excluded.sessions,
    failures = failures + excluded.failures, events = events + excluded.events,
    error_events = error_events + excluded.error_events, prompt_tokens = prompt_tokens + excluded.prompt_tokens,
    completion_tokens = completion_tokens + excluded.completion_tokens, cost = cost + excluded.cost;
  INSERT INTO session_rollups (project_id, slot_us, sessions, failures, events, error_events, prompt_tokens,
    completion_tokens, cost)
  VALUES (NEW.project_id, NEW.init_us - ((NEW.init_us % 900000000) + 900000000) % 900000000, 1,
    (NEW.end_state IS 'Fail'), NEW.event_count, NEW.error_count, NEW.prompt_tokens,
    NEW.completion_tokens, NEW.cost)
  ON CONFLICT (project_id, slot_us) DO UPDATE SET sessions = sessions + excluded.sessions,
    failures = failures + excluded.failures, events = events + excluded.events,
    error_events = error_events + excluded.error_events, prompt_tokens = prompt_tokens + excluded.prompt_tokens,
    completion_tokens = completion_tokens + excluded.completion_tokens, cost = cost + excluded.cost;
END;

-- A session's duration moved it to another bucket (or it moved slot): out of the old bucket, into
-- the new one.
CREATE TRIGGER sessions_rollup_duration AFTER UPDATE OF project_id, init_us, duration_us ON sessions
  WHEN OLD.project_id <> NEW.project_id OR OLD.init_us - ((OLD.init_us % 900000000) + 900000000) % 900000000 <> NEW.init_us - ((NEW.init_us % 900000000) + 900000000) % 900000000
    OR CASE WHEN OLD.duration_us < 1 THEN 0 ELSE 1 + CAST(floor(ln(OLD.duration_us) / ln(1.02)) AS INTEGER) END <> CASE WHEN NEW.duration_us < 1 THEN 0 ELSE 1 + CAST(floor(ln(NEW.duration_us) / ln(1.02)) AS INTEGER) END
BEGIN
  INSERT INTO session_rollup_durations (project_id, slot_us, bucket, n, max_us)
  VALUES (OLD.project_id, OLD.init_us - ((OLD.init_us % 900000000) + 900000000) % 900000000,
    CASE WHEN OLD.duration_us < 1 THEN 0 ELSE 1 + CAST(floor(ln(OLD.duration_us) / ln(1.02)) AS INTEGER) END, -1, 0)
  ON CONFLICT (project_id, slot_us, bucket) DO UPDATE SET n = n + excluded.n, max_us = max(max_us, excluded.max_us);
  INSERT INTO session_rollup_durations (project_id, slot_us, bucket, n, max_us)
  VALUES (NEW.project_id, NEW.init_us - ((NEW.init_us % 900000000) + 900000000) % 900000000,
    CASE WHEN NEW.duration_us < 1 THEN 0 ELSE 1 + CAST(floor(ln(NEW.duration_us) / ln(1.02)) AS INTEGER) END, 1, NEW.duration_us)
  ON CONFLICT (project_id, slot_us, bucket) DO UPDATE SET n = n + excluded.n, max_us = max(max_us, excluded.max_us);
END;

-- A duration that grew within its bucket (a running session's, on most writes of events): only the
-- bucket's max, and only when it is passed.
CREATE TRIGGER sessions_rollup_duration_max AFTER UPDATE OF duration_us ON sessions
  WHEN NEW.duration_us > OLD.duration_us AND OLD.project_id = NEW.project_id AND OLD.init_us - ((OLD.init_us % 900000000) + 900000000) % 900000000 = NEW.init_us - ((NEW.init_us % 900000000) + 900000000) % 900000000
    AND CASE WHEN OLD.duration_us < 1 THEN 0 ELSE 1 + CAST(floor(ln(OLD.duration_us) / ln(1.02)) AS INTEGER) END = CASE WHEN NEW.duration_us < 1 THEN 0 ELSE 1 + CAST(floor(ln(NEW.duration_us) / ln(1.02)) AS INTEGER) END
BEGIN
  UPDATE session_rollup_durations SET max_us = NEW.duration_us
  WHERE project_id = NEW.project_id AND slot_us = NEW.init_us - ((NEW.init_us % 900000000) + 900000000) % 900000000 AND bucket = CASE WHEN NEW.duration_us < 1 THEN 0 ELSE 1 + CAST(floor(ln(NEW.duration_us) / ln(1.02)) AS INTEGER) END
    AND max_us < NEW.duration_us;
END;
