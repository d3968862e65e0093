-- agentmon schema: score analytics (issue 25, docs/decisions/037-scores.md), a projection
-- (decision 033) written by the projector only: one row per score of a session and dimension
-- it is counted in. dim '' is the score itself (key NULL), once; 'model', 'agent', 'tag' and
-- 'tool' rows put it in each group it belongs to (key NULL: the null group). Replaced whole for
-- a session whenever the session is projected and has scores. PostgreSQL's 013-score-facts.sql
-- has the same table. The sessions a database already scored are queued (kind 4: its scores
-- changed) and projected after the upgrade; reads catch up first, as for every projection.
CREATE TABLE score_facts (
  session_pk INTEGER NOT NULL,
  score_pk   INTEGER NOT NULL,
  project_id TEXT NOT NULL,
  name       TEXT NOT NULL,
  dim        TEXT NOT NULL,
  key        TEXT,
  data_type  TEXT NOT NULL,
  num        REAL,
  label      TEXT,
  source     TEXT NOT NULL,
  time_us    INTEGER NOT NULL
) STRICT;

CREATE INDEX score_facts_by_name ON score_facts (project_id, name, dim, time_us);
CREATE INDEX score_facts_by_session ON score_facts (session_pk);

INSERT INTO projection_queue (session_pk, kind, at_ms)
  SELECT DISTINCT session_pk, 4, CAST(unixepoch('subsec') * 1000 AS INTEGER) FROM scores WHERE session_pk IS NOT NULL;
