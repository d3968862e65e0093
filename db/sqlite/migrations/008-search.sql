-- agentmon schema, version 8: full-text search, `q=` (issue 15 part 3, docs/decisions/023-search.md).
--
-- Two FTS5 indexes, contentless (the text is not stored twice: a snippet is computed from the
-- stored event or session, domain/search.ts): event_search, rowid = events.pk, over an event's
-- searched fields; session_search, rowid = sessions.pk, over its end_state_reason and tags. Both
-- fold case and accents (unicode61 remove_diacritics 2). They change in the transaction of every
-- write, whoever makes it (the v2 API, OTLP, update_events, import, bulk delete, retention): new
-- events through the queue below, everything else by triggers.

-- The indexed text of an event: the distinct folded words of the string and number values of
-- these fields (keys and `role` members left out), of its first 200 000 characters
-- (domain/search.ts SEARCHED_FIELDS, eventText, distinctWords), computed by a function that
-- agentmon registers on each connection (db/sqlite/search.ts searchFunctions).
CREATE VIEW event_search_text (pk, text) AS
SELECT e.pk, agentmon_event_words(e.body) FROM events e;

CREATE VIEW session_search_text (pk, text) AS
SELECT s.pk, substr(concat_ws(' ', s.end_state_reason,
  (SELECT group_concat(t.value, ' ') FROM json_each(s.tags) t WHERE t.type = 'text')), 1, 200000)
FROM sessions s;

-- Without positions (detail=none): a fraction of the work per event, and of the size; a phrase is
-- looked for as its words, then checked in the candidates' text (agentmon_has_phrases).
CREATE VIRTUAL TABLE event_search USING fts5 (
  text, content = '', contentless_delete = 1, detail = none, tokenize = 'unicode61 remove_diacritics 2'
);
CREATE VIRTUAL TABLE session_search USING fts5 (
  text, content = '', contentless_delete = 1, tokenize = 'unicode61 remove_diacritics 2'
);

-- Merge segments 8 at a time rather than 4: fewer merges on a write load (measured in decision 023).
INSERT INTO event_search (event_search, rank) VALUES ('automerge', 8);
INSERT INTO session_search (session_search, rank) VALUES ('automerge', 8);

INSERT INTO event_search (rowid, text) SELECT pk, text FROM event_search_text WHERE text <> '';
INSERT INTO session_search (rowid, text) SELECT pk, text FROM session_search_text WHERE text <> '';

-- Events written but not yet in event_search, as ranges of pks. FTS5 writes its pending terms out
-- as a new segment at every savepoint, and the group commit runs each call in one (decision 006):
-- fed row by row in the calls, the index would get a segment per call and merge them all again.
-- And any trigger on inserting an event makes SQLite keep a statement journal for each insert
-- (the events' foreign key and a trigger together), which alone doubled B1's storage time. So the
-- code that inserts events (db/sqlite/events.ts, traces.ts) queues the pk range each call added,
-- in the call's savepoint (a call undone takes its range with it), and the group commit indexes the
-- queue in one statement before COMMIT (db/sqlite/search.ts searchQueue): the same transaction as
-- the events, one segment per group. An event whose body changes is queued by a trigger (rare).
-- `words`, when the writer had them (create_events: computed from the parsed request, on the
-- request's thread), is a JSON array of each event's words, pk lo first; else the words are
-- computed from the stored bodies (agentmon_event_words).
CREATE TABLE event_search_pending (lo INTEGER NOT NULL, hi INTEGER NOT NULL, words TEXT);

-- Not in the index yet (queued), deleting its row from the index is a no-op; queued twice, it is
-- indexed once, with the words of its last queuing (searchQueue).
CREATE TRIGGER event_search_update AFTER UPDATE OF body ON events WHEN old.body IS NOT new.body BEGIN
  DELETE FROM event_search WHERE rowid = old.pk;
  INSERT INTO event_search_pending (lo, hi, words) VALUES (new.pk, new.pk, NULL);
END;
CREATE TRIGGER event_search_delete AFTER DELETE ON events BEGIN
  DELETE FROM event_search WHERE rowid = old.pk;
END;

CREATE TRIGGER session_search_insert AFTER INSERT ON sessions BEGIN
  INSERT INTO session_search (rowid, text) SELECT pk, text FROM session_search_text WHERE pk = new.pk AND text <> '';
END;
CREATE TRIGGER session_search_update AFTER UPDATE OF end_state_reason, tags ON sessions
WHEN old.end_state_reason IS NOT new.end_state_reason OR old.tags IS NOT new.tags BEGIN
  DELETE FROM session_search WHERE rowid = old.pk;
  INSERT INTO session_search (rowid, text) SELECT pk, text FROM session_search_text WHERE pk = new.pk AND text <> '';
END;
CREATE TRIGGER session_search_delete AFTER DELETE ON sessions BEGIN
  DELETE FROM session_search WHERE rowid = old.pk;
END;
