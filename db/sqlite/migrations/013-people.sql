-- agentmon schema: people (issue 26, docs/decisions/035-people.md). Accounts, one-time links,
-- project members with their roles, browser sessions and the audit trail, all in this one file
-- (and PostgreSQL's 011-people.sql, the same tables).

-- People. email is kept lower-cased (the service lowers it), so UNIQUE is case-blind.
-- password_hash is an argon2id PHC string; NULL: no password (invited and not signed up yet, or
-- single sign-on only). owner: the instance owner (every project, every act). disabled_at: the
-- person may not sign in, and their browser sessions were ended when it was set.
CREATE TABLE users (
  id            TEXT PRIMARY KEY,
  email         TEXT NOT NULL UNIQUE,
  name          TEXT NOT NULL,
  password_hash TEXT,
  owner         INTEGER NOT NULL DEFAULT 0 CHECK (owner IN (0, 1)),
  created_at    TEXT NOT NULL,
  disabled_at   TEXT
) STRICT;

-- One-time links (kept as SHA-256 hashes of the token): `owner` makes the instance owner's
-- account (the first start prints it), `invite` makes an account of `email` and gives it `role`
-- in `project_id`, `reset` sets the password of `user_id`. used_at is set once, when it is used.
CREATE TABLE user_tokens (
  token_hash TEXT PRIMARY KEY,
  kind       TEXT NOT NULL CHECK (kind IN ('owner', 'invite', 'reset')),
  user_id    TEXT REFERENCES users (id),
  email      TEXT,
  project_id TEXT REFERENCES projects (id),
  role       TEXT CHECK (role IS NULL OR role IN ('viewer', 'annotator', 'editor', 'admin')),
  created_by TEXT,
  created_at TEXT NOT NULL,
  expires_at TEXT NOT NULL,
  used_at    TEXT
) STRICT;

-- A person's role in a project.
CREATE TABLE members (
  project_id TEXT NOT NULL REFERENCES projects (id),
  user_id    TEXT NOT NULL REFERENCES users (id),
  role       TEXT NOT NULL CHECK (role IN ('viewer', 'annotator', 'editor', 'admin')),
  created_at TEXT NOT NULL,
  PRIMARY KEY (project_id, user_id)
) STRICT;
CREATE INDEX members_user ON members (user_id);

-- Browser sessions: the cookie holds a random id, this table its SHA-256 hash, so that a copy
-- of the database signs nobody in. Deleting the row ends the session on every node.
CREATE TABLE browser_sessions (
  id_hash    TEXT PRIMARY KEY,
  user_id    TEXT NOT NULL REFERENCES users (id),
  created_at TEXT NOT NULL,
  expires_at TEXT NOT NULL,
  address    TEXT NOT NULL
) STRICT;
CREATE INDEX browser_sessions_user ON browser_sessions (user_id);

-- The audit trail: append only (the triggers refuse any change or removal). actor is a user id,
-- `key:<prefix>` or `cli`; project_id NULL for an act of the instance; details a JSON object.
CREATE TABLE audit (
  seq        INTEGER PRIMARY KEY AUTOINCREMENT,
  at         TEXT NOT NULL,
  actor      TEXT NOT NULL,
  actor_name TEXT NOT NULL,
  address    TEXT NOT NULL,
  action     TEXT NOT NULL,
  project_id TEXT,
  target     TEXT,
  details    TEXT NOT NULL DEFAULT '{}'
) STRICT;
CREATE INDEX audit_project ON audit (project_id, seq);
CREATE TRIGGER audit_no_update BEFORE UPDATE ON audit BEGIN SELECT RAISE(ABORT, 'the audit trail is append-only'); END;
CREATE TRIGGER audit_no_delete BEFORE DELETE ON audit BEGIN SELECT RAISE(ABORT, 'the audit trail is append-only'); END;
