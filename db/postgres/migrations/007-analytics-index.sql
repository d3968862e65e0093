-- agentmon's PostgreSQL schema, version 7: the covering index of the analytics time series (as
-- SQLite's 009; docs/decisions/024-analytics.md, 026-analytics-rollups.md): a range of init_us of
-- a project, with the series' columns carried (INCLUDE) so that an index-only scan answers it
-- (the visibility map permitting: VACUUM keeps it so). The totals change with every write of
-- events, so those updates cannot be HOT; they already were not (migration 005's sort indexes).
CREATE INDEX sessions_analytics ON sessions (project_id, init_us)
  INCLUDE (end_state, event_count, error_count, prompt_tokens, completion_tokens, cost, duration_us);
