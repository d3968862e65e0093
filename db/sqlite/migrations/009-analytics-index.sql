-- agentmon schema, version 9: the covering index of the analytics time series (issue 15;
-- docs/decisions/024-analytics.md, 026-analytics-rollups.md). The series reads, for every
-- session of the project started in a bucket, its end state, counts, tokens, cost and duration:
-- with these columns in the index it reads the index only, not one wide sessions row (tags,
-- extra, host_env) per session. Every write of events already rewrites the session's row and its
-- sort index entries (migration 007): this is one more entry to move.
CREATE INDEX sessions_analytics ON sessions (
  project_id, init_us, end_state, event_count, error_count, prompt_tokens, completion_tokens, cost, duration_us
);
