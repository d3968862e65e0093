-- agentmon's PostgreSQL schema, version 1: what SQLite's migrations 001-004 build, for one or
-- more agentmon nodes on one database (docs/decisions/016-postgresql.md). Forward-only.
--
-- The same columns as on SQLite, so that db/rows.ts turns a row of either into the same record:
-- JSON is kept as `text`, exactly as it was written (jsonb would reorder keys and drop
-- duplicates), timestamps as their ISO text plus microseconds since the epoch in a bigint (no
-- rounding, no time zone), ids with the "C" collation so that keyset pages and cursors order
-- them byte by byte, as SQLite does.

CREATE TABLE meta (
  key   text PRIMARY KEY,
  value text NOT NULL
);

CREATE TABLE projects (
  id         text PRIMARY KEY,
  name       text NOT NULL UNIQUE,
  created_at text NOT NULL
);

-- API keys are kept only as SHA-256 hashes; prefix is the first 8 characters, for humans.
CREATE TABLE api_keys (
  id         text PRIMARY KEY,
  project_id text NOT NULL REFERENCES projects (id),
  key_hash   text NOT NULL UNIQUE,
  prefix     text NOT NULL,
  created_at text NOT NULL,
  revoked_at text
);

-- Session ids are chosen by clients and unique across the service; pk keeps event rows small.
-- tags is an array (order and repeats kept) so that the tags filter (`tags @> $1`) uses the GIN
-- index below.
CREATE TABLE sessions (
  pk               bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  id               text COLLATE "C" NOT NULL UNIQUE,
  project_id       text NOT NULL REFERENCES projects (id),
  init_timestamp   text NOT NULL,
  init_us          bigint NOT NULL,
  end_timestamp    text,
  end_state        text,
  end_state_reason text,
  tags             text[],
  host_env         text,
  extra            text NOT NULL,
  root_rank        text COLLATE "C",
  conversation_id  text
);

CREATE INDEX sessions_by_project_time ON sessions (project_id, init_us DESC, id DESC);
CREATE INDEX sessions_by_project_state ON sessions (project_id, end_state, init_us DESC, id DESC);
CREATE INDEX sessions_by_conversation ON sessions (project_id, conversation_id, init_us DESC, id DESC)
  WHERE conversation_id IS NOT NULL;
CREATE INDEX sessions_by_tags ON sessions USING gin (tags);

-- Event ids are scoped to their session. Columns hold what is queried; body holds the other named
-- fields, aliases the alias names the client used, extra the unknown fields (all JSON text).
CREATE TABLE events (
  session_pk            bigint NOT NULL REFERENCES sessions (pk) ON DELETE CASCADE,
  id                    text COLLATE "C" NOT NULL,
  type                  text NOT NULL,
  init_timestamp        text NOT NULL,
  init_us               bigint NOT NULL,
  end_timestamp         text,
  end_us                bigint,
  agent_id              text,
  model                 text,
  prompt_tokens         bigint,
  completion_tokens     bigint,
  cost                  double precision,
  cost_source           text NOT NULL DEFAULT 'unknown' CHECK (cost_source IN ('client', 'table', 'unknown')),
  body                  text NOT NULL,
  aliases               text,
  extra                 text NOT NULL,
  parent_id             text COLLATE "C",
  own_agent_id          text,
  cache_read_tokens     bigint,
  cache_creation_tokens bigint,
  reasoning_tokens      bigint,
  PRIMARY KEY (session_pk, id)
);

CREATE INDEX events_by_session_time ON events (session_pk, init_us, id);
CREATE INDEX events_by_agent ON events (agent_id, session_pk) WHERE agent_id IS NOT NULL;
CREATE INDEX events_by_parent ON events (session_pk, parent_id) WHERE parent_id IS NOT NULL;

CREATE TABLE agents (
  session_pk bigint NOT NULL REFERENCES sessions (pk) ON DELETE CASCADE,
  id         text COLLATE "C" NOT NULL,
  name       text,
  extra      text NOT NULL,
  PRIMARY KEY (session_pk, id)
);

-- T6: text appended to a session by POST /v4/logs/upload/, in arrival order.
CREATE TABLE session_logs (
  session_pk  bigint NOT NULL REFERENCES sessions (pk) ON DELETE CASCADE,
  seq         integer NOT NULL,
  received_at text NOT NULL,
  body        text NOT NULL,
  PRIMARY KEY (session_pk, seq)
);

-- T3: GenAI log records of a span, kept until and after its span arrives.
CREATE TABLE span_records (
  session_pk bigint NOT NULL REFERENCES sessions (pk) ON DELETE CASCADE,
  span_id    text COLLATE "C" NOT NULL,
  digest     text COLLATE "C" NOT NULL,
  time_us    bigint NOT NULL,
  record     text NOT NULL,
  PRIMARY KEY (session_pk, span_id, digest)
);

-- Price tables imported with `agentmon prices import FILE` (docs/decisions/015-prices.md).
CREATE TABLE price_imports (
  seq         bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  imported_at text NOT NULL,
  source      text NOT NULL,
  body        text NOT NULL
);
