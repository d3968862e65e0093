-- agentmon schema, version 3: OpenTelemetry traces (issue 13, shared/spec/otlp.md).

-- A span's event sits under its parent span's event: the UI's tree, and the agent of the nearest
-- agent ancestor (T14), found by walking down from a span that arrives after its children.
ALTER TABLE events ADD COLUMN parent_id TEXT;
-- The agent an agent span registers; its descendants inherit it (agent_id) unless they have one.
ALTER TABLE events ADD COLUMN own_agent_id TEXT;
CREATE INDEX events_by_parent ON events (session_pk, parent_id) WHERE parent_id IS NOT NULL;

-- T13: the root span that set the session's fields, as a rank that sorts best first, so that the
-- same root wins whatever order the spans arrive in (T17). NULL: no root yet (running), or a v2
-- session.
ALTER TABLE sessions ADD COLUMN root_rank TEXT;
-- T13: the conversation a trace belongs to, a filter of GET /v2/sessions.
ALTER TABLE sessions ADD COLUMN conversation_id TEXT;
CREATE INDEX sessions_by_conversation ON sessions (project_id, conversation_id, init_us DESC, id DESC)
  WHERE conversation_id IS NOT NULL;

-- T6: text appended to a session by POST /v4/logs/upload/, in arrival order.
CREATE TABLE session_logs (
  session_pk  INTEGER NOT NULL REFERENCES sessions (pk) ON DELETE CASCADE,
  seq         INTEGER NOT NULL,
  received_at TEXT NOT NULL,
  body        TEXT NOT NULL,
  PRIMARY KEY (session_pk, seq)
) STRICT, WITHOUT ROWID;

-- T3: GenAI log records of a span, kept until and after its span arrives; `digest` makes a
-- record sent twice count once.
CREATE TABLE span_records (
  session_pk INTEGER NOT NULL REFERENCES sessions (pk) ON DELETE CASCADE,
  span_id    TEXT NOT NULL,
  digest     TEXT NOT NULL,
  time_us    INTEGER NOT NULL,
  record     TEXT NOT NULL, -- JSON: the canonical OTLP log record, with its scope
  PRIMARY KEY (session_pk, span_id, digest)
) STRICT, WITHOUT ROWID;
