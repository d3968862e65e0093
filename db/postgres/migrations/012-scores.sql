-- agentmon's PostgreSQL schema: scores (issue 25, as SQLite's 014-scores.sql; decision 037). Raw
-- rows only: what is derived from them is a projection (decision 033).

CREATE TABLE scores (
  pk              bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  project_id      text NOT NULL REFERENCES projects (id),
  id              text COLLATE "C" NOT NULL,
  session_pk      bigint REFERENCES sessions (pk) ON DELETE CASCADE,
  event_id        text,
  conversation_id text,
  name            text COLLATE "C" NOT NULL,
  data_type       text NOT NULL CHECK (data_type IN ('numeric', 'categorical', 'boolean')),
  num             double precision,
  label           text,
  source          text NOT NULL CHECK (source IN ('api', 'annotation', 'eval')),
  comment         text,
  author          text NOT NULL,
  metadata        text NOT NULL, -- JSON object, as written
  timestamp       text NOT NULL,
  time_us         bigint NOT NULL,
  created_at      text NOT NULL,
  updated_at      text
);

CREATE UNIQUE INDEX scores_by_id ON scores (project_id, id);
CREATE INDEX scores_by_time ON scores (project_id, time_us DESC, id DESC);
CREATE INDEX scores_by_session ON scores (session_pk, time_us) WHERE session_pk IS NOT NULL;
CREATE INDEX scores_by_conversation ON scores (project_id, conversation_id) WHERE conversation_id IS NOT NULL;

CREATE TABLE score_configs (
  project_id  text NOT NULL REFERENCES projects (id),
  name        text COLLATE "C" NOT NULL,
  data_type   text NOT NULL CHECK (data_type IN ('numeric', 'categorical', 'boolean')),
  min         double precision,
  max         double precision,
  categories  text, -- JSON array of labels
  description text,
  created_at  text NOT NULL,
  updated_at  text NOT NULL,
  PRIMARY KEY (project_id, name)
);
