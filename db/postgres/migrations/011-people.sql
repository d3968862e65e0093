-- agentmon's PostgreSQL schema: people (issue 26, as SQLite's 013-people.sql; decision 035).
-- Every node reads the same browser_sessions table, so a logout, a "logout everywhere" or a
-- disabled person ends the sessions on every node at once.

CREATE TABLE users (
  id            text PRIMARY KEY,
  email         text NOT NULL UNIQUE,
  name          text NOT NULL,
  password_hash text,
  owner         boolean NOT NULL DEFAULT false,
  created_at    text NOT NULL,
  disabled_at   text
);

CREATE TABLE user_tokens (
  token_hash text PRIMARY KEY,
  kind       text NOT NULL CHECK (kind IN ('owner', 'invite', 'reset')),
  user_id    text REFERENCES users (id),
  email      text,
  project_id text REFERENCES projects (id),
  role       text CHECK (role IS NULL OR role IN ('viewer', 'annotator', 'editor', 'admin')),
  created_by text,
  created_at text NOT NULL,
  expires_at text NOT NULL,
  used_at    text
);

CREATE TABLE members (
  project_id text NOT NULL REFERENCES projects (id),
  user_id    text NOT NULL REFERENCES users (id),
  role       text NOT NULL CHECK (role IN ('viewer', 'annotator', 'editor', 'admin')),
  created_at text NOT NULL,
  PRIMARY KEY (project_id, user_id)
);
CREATE INDEX members_user ON members (user_id);

CREATE TABLE browser_sessions (
  id_hash    text PRIMARY KEY,
  user_id    text NOT NULL REFERENCES users (id),
  created_at text NOT NULL,
  expires_at text NOT NULL,
  address    text NOT NULL
);
CREATE INDEX browser_sessions_user ON browser_sessions (user_id);

CREATE TABLE audit (
  seq        bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  at         text NOT NULL,
  actor      text NOT NULL,
  actor_name text NOT NULL,
  address    text NOT NULL,
  action     text NOT NULL,
  project_id text,
  target     text,
  details    text NOT NULL DEFAULT '{}'
);
CREATE INDEX audit_project ON audit (project_id, seq);
CREATE FUNCTION audit_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  RAISE EXCEPTION 'the audit trail is append-only';
END $$;
CREATE TRIGGER audit_append_only BEFORE UPDATE OR DELETE ON audit
  FOR EACH STATEMENT EXECUTE FUNCTION audit_append_only();
