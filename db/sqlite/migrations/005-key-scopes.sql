-- agentmon schema, version 5: keys with scopes (issue 16 part 4).

-- What a key may do, as a comma list of `ingest` (the write API and OTLP), `read` (the read API and
-- the UI) and `admin` (deleting), written by domain/keys.ts scopesColumn. Keys made before version
-- 5 get all three, so they keep working exactly as they did.
ALTER TABLE api_keys ADD COLUMN scopes TEXT NOT NULL DEFAULT 'ingest,read,admin';
