-- agentmon schema, version 1. Forward-only; every table STRICT.

CREATE TABLE meta (
  key   TEXT PRIMARY KEY,
  value TEXT NOT NULL
) STRICT;

CREATE TABLE projects (
  id         TEXT PRIMARY KEY,
  name       TEXT NOT NULL UNIQUE,
  created_at TEXT NOT NULL
) STRICT;

-- API keys are kept only as SHA-256 hashes; prefix is the first 8 characters, for humans.
CREATE TABLE api_keys (
  id         TEXT PRIMARY KEY,
  project_id TEXT NOT NULL REFERENCES projects (id),
  key_hash   TEXT NOT NULL UNIQUE,
  prefix     TEXT NOT NULL,
  created_at TEXT NOT NULL,
  revoked_at TEXT
) STRICT;

-- Session ids are chosen by clients and unique across the service; pk keeps event rows small.
CREATE TABLE sessions (
  pk               INTEGER PRIMARY KEY,
  id               TEXT NOT NULL UNIQUE,
  project_id       TEXT NOT NULL REFERENCES projects (id),
  init_timestamp   TEXT NOT NULL,
  init_us          INTEGER NOT NULL,
  end_timestamp    TEXT,
  end_state        TEXT,
  end_state_reason TEXT,
  tags             TEXT,            -- JSON array
  host_env         TEXT,            -- JSON object
  extra            TEXT NOT NULL    -- JSON object: fields the contract does not name
) STRICT;

CREATE INDEX sessions_by_project_time ON sessions (project_id, init_us DESC);

-- Event ids are scoped to their session. Columns hold what is queried; body holds the other
-- named fields, aliases the alias names the client used, extra the unknown fields.
CREATE TABLE events (
  pk                INTEGER PRIMARY KEY,
  session_pk        INTEGER NOT NULL REFERENCES sessions (pk) ON DELETE CASCADE,
  id                TEXT NOT NULL,
  type              TEXT NOT NULL,
  init_timestamp    TEXT NOT NULL,
  init_us           INTEGER NOT NULL,
  end_timestamp     TEXT,
  agent_id          TEXT,
  model             TEXT,
  prompt_tokens     INTEGER,
  completion_tokens INTEGER,
  cost              REAL,
  body              TEXT NOT NULL,  -- JSON object
  aliases           TEXT,           -- JSON array, NULL when none
  extra             TEXT NOT NULL   -- JSON object
) STRICT;

CREATE UNIQUE INDEX events_by_session_id ON events (session_pk, id);
CREATE INDEX events_by_session_time ON events (session_pk, init_us, id);

CREATE TABLE agents (
  session_pk INTEGER NOT NULL REFERENCES sessions (pk) ON DELETE CASCADE,
  id         TEXT NOT NULL,
  name       TEXT,
  extra      TEXT NOT NULL,
  PRIMARY KEY (session_pk, id)
) STRICT, WITHOUT ROWID;
