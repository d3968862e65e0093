-- agentmon's PostgreSQL schema, version 10: everything derived is a projection (issue 24, as
-- SQLite's 012; docs/decisions/033-projections.md). A write stores its raw rows and rows of
-- projection_queue in its own transaction; the projector (db/postgres/projector.ts), one node at a
-- time, keeps the per-session totals, session_models and the series' and breakdowns' rollups from
-- the queue, in batches, after the write is answered. No trigger keeps derived data any more.

-- Migration 005's totals and duration, 008's session rollups, 009's event rollups and session_keys.
DROP TRIGGER sessions_duration ON sessions;
DROP TRIGGER events_added ON events;
DROP TRIGGER events_changed ON events;
DROP TRIGGER sessions_rollup_added ON sessions;
DROP TRIGGER sessions_rollup_removed ON sessions;
DROP TRIGGER sessions_rollup_changed ON sessions;
DROP TRIGGER events_rollups_added ON events;
DROP TRIGGER events_rollups_changed ON events;
DROP TRIGGER events_rollups_removed ON events;
DROP TRIGGER sessions_event_rollups_changed ON sessions;
-- A session's groups are in its share now (session_shares); its triggers go with it.
DROP TABLE session_keys;
DROP FUNCTION agentmon_session_duration(), agentmon_recount_sessions(bigint[]), agentmon_events_added(),
  agentmon_events_changed(), agentmon_sessions_rollup_added(), agentmon_sessions_rollup_removed(),
  agentmon_sessions_rollup_changed(), agentmon_session_keys_recount(bigint[]), agentmon_event_rollups_added(),
  agentmon_event_rollups_changed(), agentmon_event_rollups_removed(), agentmon_event_rollups_sessions_changed(),
  agentmon_session_keys_in(), agentmon_session_keys_out(), agentmon_session_keys_changed();
-- The histogram's bucket is computed in JavaScript (domain/analytics.ts histogramBucket) now.
DROP FUNCTION agentmon_duration_bucket(bigint);

-- session_models is the projector's alone: a deleted session's rows go when its delete is
-- projected, not by a cascade in the deleting transaction (which would change them under a batch).
ALTER TABLE session_models DROP CONSTRAINT session_models_session_pk_fkey;

-- What changed, by session, not projected yet: kind 0 its row (created, updated, moved), 1 the
-- events `ids` added (ids, not a range of a sequence: concurrent writers' values interleave and
-- commit in any order), 2 anything (events changed or gone: count it again from its rows). seq
-- orders the queue; at_ms (the database's clock, the same for every node): when queued, for the
-- lag GET /metrics shows.
CREATE TABLE projection_queue (
  seq        bigserial PRIMARY KEY,
  session_pk bigint NOT NULL,
  kind       smallint NOT NULL,
  ids        text[],
  at_ms      bigint NOT NULL DEFAULT (extract(epoch FROM clock_timestamp()) * 1000)::int8
);
CREATE INDEX projection_queue_by_session ON projection_queue (session_pk);

-- Each session's share as projected (db/projections/share.ts, JSON): what a change is compared
-- with. No foreign key: a deleted session's share stays until its delete is projected.
CREATE TABLE session_shares (
  session_pk bigint PRIMARY KEY,
  share      text NOT NULL
);

-- Every projection made again from the raw rows by the projector, from the first batch on (the
-- totals on the sessions' rows are overwritten by it; until then they are the triggers' last).
DELETE FROM session_models;
DELETE FROM session_rollups;
DELETE FROM session_rollup_durations;
DELETE FROM event_rollups;
DELETE FROM event_rollup_durations;
INSERT INTO projection_queue (session_pk, kind) SELECT pk, 2 FROM sessions ORDER BY pk;
