-- agentmon's PostgreSQL schema, version 4: retention (issue 16 part 1, as SQLite's 006;
-- docs/decisions/019-retention.md).

-- How many days a project's sessions are kept after their last activity: NULL follows the
-- server's AGENTMON_RETENTION_DAYS, 0 keeps them forever (`agentmon projects set-retention`).
ALTER TABLE projects ADD COLUMN retention_days integer CHECK (retention_days IS NULL OR retention_days >= 0);
