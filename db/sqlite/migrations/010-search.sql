-- agentmon schema, version 8: full-text search, `q=` (issue 15 part 3, docs/decisions/023-search.md).
--
-- Two FTS5 indexes, contentless (the text is not stored twice: a snippet is computed from the
-- stored event or session, domain/search.ts): event_search, rowid = events.pk, over an event's
-- searched fields; session_search, rowid = sessions.pk, over its end_state_reason and tags. Both
-- fold case and accents (unicode61 remove_diacritics 2). Triggers keep them in the transaction of
-- every write, whoever makes it (the v2 API, OTLP, update_events, import, bulk delete, retention).

-- The searched text of an event: the string and number values of these fields (keys and `role`
-- members left out), at most 200 000 characters (domain/search.ts SEARCHED_FIELDS, textOf,
-- INDEXED_CHARACTERS), in the order of the body.
CREATE VIEW event_search_text (pk, text) AS
SELECT e.pk, (
  SELECT substr(group_concat(j.value, ' '), 1, 200000)
  FROM json_each(e.body) f, json_tree(e.body, f.fullkey) j
  WHERE f.key IN ('prompt', 'completion', 'input', 'output', 'error_type', 'code', 'details')
    AND j.type IN ('text', 'integer', 'real') AND j.key IS NOT 'role')
FROM events e;

CREATE VIEW session_search_text (pk, text) AS
SELECT s.pk, substr(concat_ws(' ', s.end_state_reason,
  (SELECT group_concat(t.value, ' ') FROM json_each(s.tags) t WHERE t.type = 'text')), 1, 200000)
FROM sessions s;

CREATE VIRTUAL TABLE event_search USING fts5 (
  text, content = '', contentless_delete = 1, tokenize = 'unicode61 remove_diacritics 2'
);
CREATE VIRTUAL TABLE session_search USING fts5 (
  text, content = '', contentless_delete = 1, tokenize = 'unicode61 remove_diacritics 2'
);

-- Merge segments 8 at a time rather than 4: fewer merges on a write load (measured in decision 023).
INSERT INTO event_search (event_search, rank) VALUES ('automerge', 8);
INSERT INTO session_search (session_search, rank) VALUES ('automerge', 8);

INSERT INTO event_search (rowid, text) SELECT pk, text FROM event_search_text WHERE text <> '';
INSERT INTO session_search (rowid, text) SELECT pk, text FROM session_search_text WHERE text <> '';

CREATE TRIGGER event_search_insert AFTER INSERT ON events BEGIN
  INSERT INTO event_search (rowid, text) SELECT pk, text FROM event_search_text WHERE pk = new.pk AND text <> '';
END;
CREATE TRIGGER event_search_update AFTER UPDATE OF body ON events WHEN old.body IS NOT new.body BEGIN
  DELETE FROM event_search WHERE rowid = old.pk;
  INSERT INTO event_search (rowid, text) SELECT pk, text FROM event_search_text WHERE pk = new.pk AND text <> '';
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
