-- Keys with scopes (issue 16 part 4), as SQLite's migration 005.

-- What a key may do, as a comma list of `ingest` (the write API and OTLP), `read` (the read API and
-- the UI) and `admin` (deleting), written by domain/keys.ts scopesColumn. Keys made before this
-- migration get all three, so they keep working exactly as they did.
ALTER TABLE api_keys ADD COLUMN scopes text NOT NULL DEFAULT 'ingest,read,admin';
