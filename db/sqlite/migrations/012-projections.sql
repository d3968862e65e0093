-- agentmon schema, version 12: everything derived is a projection (issue 24,
-- docs/decisions/033-projections.md). A write stores its raw rows and one row of projection_queue;
-- the projector (db/sqlite/projector.ts) keeps the totals, session_models, the series' and the
-- breakdowns' rollups and the search index from the queue, in batches, after the write is answered.
-- No trigger keeps a rollup or a total any more.

DROP TRIGGER sessions_duration_created;
DROP TRIGGER sessions_duration_changed;
DROP TRIGGER sessions_rollup_insert;
DROP TRIGGER sessions_rollup_delete;
DROP TRIGGER sessions_rollup_update;
DROP TRIGGER sessions_rollup_move;
DROP TRIGGER sessions_rollup_duration;
DROP TRIGGER sessions_rollup_duration_max;
DROP TRIGGER session_keys_in;
DROP TRIGGER session_keys_out;
DROP TRIGGER session_keys_changed;
DROP TRIGGER sessions_event_rollups_moved;
DROP TRIGGER sessions_event_rollups_failed;
-- A session's groups are in its share now (session_shares).
DROP TABLE session_keys;

-- What changed, by session, not projected yet: kind 0 its row (created, updated), 1 its events
-- with pks lo..hi added, 2 anything (events changed or gone: count it again from its rows), 3 the
-- events lo..hi to index again (their body changed). at_ms: when queued, for the lag GET /metrics
-- shows. The rows a kind 1 announces are handed to the projector in memory as well (their facts
-- and search words: db/sqlite/projector.ts); after a restart it reads them from events.
CREATE TABLE projection_queue (
  seq        INTEGER PRIMARY KEY,
  session_pk INTEGER NOT NULL,
  kind       INTEGER NOT NULL,
  lo         INTEGER,
  hi         INTEGER,
  at_ms      INTEGER NOT NULL
) STRICT;
CREATE INDEX projection_queue_by_session ON projection_queue (session_pk);

-- Each session's share as projected (db/projections/share.ts, JSON): what a change is compared
-- with, so that no projection needs rows that have changed or gone.
CREATE TABLE session_shares (
  session_pk INTEGER PRIMARY KEY,
  share      TEXT NOT NULL
) STRICT;

-- An event whose body changes is indexed again by the projector; the index forgets it now (a
-- contentless index can only forget a row by its rowid, while it is known).
DROP TRIGGER event_search_update;
CREATE TRIGGER event_search_update AFTER UPDATE OF body ON events WHEN old.body IS NOT new.body BEGIN
  DELETE FROM event_search WHERE rowid = old.pk;
  INSERT INTO projection_queue (session_pk, kind, lo, hi, at_ms) VALUES (new.session_pk, 3, new.pk, new.pk,
    CAST(unixepoch('subsec') * 1000 AS INTEGER));
END;
DROP TABLE event_search_pending;

-- Every projection made again from the raw rows by the projector, from the first batch on.
DELETE FROM session_models;
DELETE FROM session_rollups;
DELETE FROM session_rollup_durations;
DELETE FROM event_rollups;
DELETE FROM event_rollup_durations;
INSERT INTO projection_queue (session_pk, kind, at_ms) SELECT pk, 2, CAST(unixepoch('subsec') * 1000 AS INTEGER) FROM sessions;
