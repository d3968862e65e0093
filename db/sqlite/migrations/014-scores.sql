-- agentmon schema: scores (issue 25, docs/decisions/037-scores.md), raw rows only (what is derived
-- from them is a projection, decision 033). PostgreSQL's 012-scores.sql has the same tables.

-- A score judges a session (session_pk), an event or span of it (session_pk and event_id, not a
-- reference: a span may be scored before it arrives), or a conversation (conversation_id, no
-- session). The value: num for numeric and boolean (1/0), label for categorical. author:
-- `api_key:<id>` or `person:<id>`. Ids are the client's, unique within a project.
CREATE TABLE scores (
  pk              INTEGER PRIMARY KEY,
  project_id      TEXT NOT NULL REFERENCES projects (id),
  id              TEXT NOT NULL,
  session_pk      INTEGER REFERENCES sessions (pk) ON DELETE CASCADE,
  event_id        TEXT,
  conversation_id TEXT,
  name            TEXT NOT NULL,
  data_type       TEXT NOT NULL CHECK (data_type IN ('numeric', 'categorical', 'boolean')),
  num             REAL,
  label           TEXT,
  source          TEXT NOT NULL CHECK (source IN ('api', 'annotation', 'eval')),
  comment         TEXT,
  author          TEXT NOT NULL,
  metadata        TEXT NOT NULL, -- JSON object
  timestamp       TEXT NOT NULL,
  time_us         INTEGER NOT NULL,
  created_at      TEXT NOT NULL,
  updated_at      TEXT
) STRICT;

CREATE UNIQUE INDEX scores_by_id ON scores (project_id, id);
CREATE INDEX scores_by_time ON scores (project_id, time_us DESC, id DESC);
CREATE INDEX scores_by_session ON scores (session_pk, time_us) WHERE session_pk IS NOT NULL;
CREATE INDEX scores_by_conversation ON scores (project_id, conversation_id) WHERE conversation_id IS NOT NULL;

-- The rules scores of a name follow in a project (SC5).
CREATE TABLE score_configs (
  project_id  TEXT NOT NULL REFERENCES projects (id),
  name        TEXT NOT NULL,
  data_type   TEXT NOT NULL CHECK (data_type IN ('numeric', 'categorical', 'boolean')),
  min         REAL,
  max         REAL,
  categories  TEXT, -- JSON array of labels
  description TEXT,
  created_at  TEXT NOT NULL,
  updated_at  TEXT NOT NULL,
  PRIMARY KEY (project_id, name)
) STRICT, WITHOUT ROWID;
