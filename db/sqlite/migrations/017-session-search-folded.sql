-- agentmon schema: the sessions' index receives its words folded as JavaScript folds them
-- (docs/decisions/040-search-walk-bounded-by-events.md). It received the raw text, which unicode61
-- folds otherwise than the queries are folded for some letters (it keeps the Greek tonos), so a
-- session's own field such as "Σίσυφος" was not found by `q=ΣΊΣΥΦ` once the index answered (the
-- events' index gets folded words already). agentmon_folded_text keeps the words' order: phrases
-- are read from this index's positions. The index is made again (as migration 008 made it) and
-- filled from the sessions.
DROP VIEW session_search_text;
CREATE VIEW session_search_text (pk, text) AS
SELECT s.pk, agentmon_folded_text(substr(concat_ws(' ', s.end_state_reason,
  (SELECT group_concat(t.value, ' ') FROM json_each(s.tags) t WHERE t.type = 'text')), 1, 200000))
FROM sessions s;

DROP TABLE session_search;
CREATE VIRTUAL TABLE session_search USING fts5 (
  text, content = '', contentless_delete = 1, tokenize = 'unicode61 remove_diacritics 2'
);
INSERT INTO session_search (session_search, rank) VALUES ('automerge', 8);
INSERT INTO session_search (rowid, text) SELECT pk, text FROM session_search_text WHERE text <> '';
