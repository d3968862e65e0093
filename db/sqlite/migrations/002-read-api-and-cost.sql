-- agentmon schema, version 2: the read API (issue 5) and event cost sources.

-- Where an event's cost comes from: the client sent it, it was priced from the model price
-- table, or it is not known (no price for the model, or no tokens). Rows written by version 1
-- keep their cost as the client's when there is one; the others are not priced after the fact.
ALTER TABLE events ADD COLUMN cost_source TEXT NOT NULL DEFAULT 'unknown'
  CHECK (cost_source IN ('client', 'table', 'unknown'));
UPDATE events SET cost_source = 'client' WHERE cost IS NOT NULL;

-- end_timestamp in microseconds, as init_us: the latest event time of a session (its stats) is
-- a max over both, and ISO strings with different fraction lengths do not compare as instants.
-- Stored end_timestamps are always YYYY-MM-DDTHH:MM:SS[.f{1,6}]Z (lib/timestamps.ts).
ALTER TABLE events ADD COLUMN end_us INTEGER;
UPDATE events
SET end_us = unixepoch(substr(end_timestamp, 1, 19)) * 1000000
  + CASE WHEN length(end_timestamp) > 21
      THEN CAST(substr(substr(end_timestamp, 21, length(end_timestamp) - 21) || '000000', 1, 6) AS INTEGER)
      ELSE 0 END
WHERE end_timestamp IS NOT NULL;

-- GET /v2/sessions pages newest first by (init_us, id), with a keyset cursor: the index holds
-- both, so a page is a range read whatever the page number.
DROP INDEX sessions_by_project_time;
CREATE INDEX sessions_by_project_time ON sessions (project_id, init_us DESC, id DESC);
-- The end_state filter ("the failed sessions") reads only matching rows, already in page order.
CREATE INDEX sessions_by_project_state ON sessions (project_id, end_state, init_us DESC, id DESC);
-- The agent_id filter: does this session have an event of that agent? One index probe.
CREATE INDEX events_by_agent ON events (agent_id, session_pk) WHERE agent_id IS NOT NULL;
