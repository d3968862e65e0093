-- agentmon's PostgreSQL schema, version 6: full-text search, `q=` (issue 15 part 3, as SQLite's
-- 008; docs/decisions/023-search.md).
--
-- Events: a column, search_words, that the code writing an event fills with its distinct folded
-- words (domain/search.ts eventWords, computed in JavaScript: the words SQLite's index gets), and a
-- GIN index over its tsvector, kept in the transaction of every write. Computing the words in SQL
-- from the body (the functions below) cost 2 ms an event, 20 times B1's whole insert; they remain
-- for the rows stored before this migration and to check a phrase in the candidate events (the
-- words keep no order). Sessions: an expression GIN index over their own text (written once or
-- twice per session). The text searched is SQLite's: an event's searched fields (the string and
-- number values of prompt, completion, input, output, error_type, code, details; keys and `role`
-- members left out), a session's end_state_reason and tags, at most 200 000 characters of each.
-- To read words as SQLite's unicode61 tokenizer does, the text is folded (decomposed, combining
-- marks removed, lower-cased: what domain/search.ts fold does; no unaccent extension, which a
-- managed server may lack) and every run of characters other than letters and digits becomes a
-- space, before the `simple` parser reads it (which would otherwise keep e-mail addresses, URLs
-- and hyphenated words as single words).

CREATE FUNCTION agentmon_search_fold(text) RETURNS text
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
RETURN lower(regexp_replace(normalize($1, NFD),
  '[\u0300-\u036f\u1ab0-\u1aff\u1dc0-\u1dff\u20d0-\u20ff\ufe20-\ufe2f]+', '', 'g'));

-- A document's tsvector: folded, punctuation as spaces, the `simple` parser (no stemming, no stop words).
CREATE FUNCTION agentmon_search_vector(text) RETURNS tsvector
LANGUAGE sql IMMUTABLE PARALLEL SAFE
RETURN to_tsvector('simple',
  regexp_replace(agentmon_search_fold(left(coalesce($1, ''), 200000)), '[^[:alnum:]]+', ' ', 'g'));

-- The string and number values of a JSON value, keys and `role` members left out.
CREATE FUNCTION agentmon_json_text(doc jsonb) RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$
  WITH RECURSIVE t (key, value) AS (
    SELECT NULL::text, doc
    UNION ALL
    SELECT c.key, c.value FROM t CROSS JOIN LATERAL (
      SELECT o.key, o.value FROM jsonb_each(CASE WHEN jsonb_typeof(t.value) = 'object' THEN t.value END) o
      UNION ALL
      SELECT NULL, a.value FROM jsonb_array_elements(CASE WHEN jsonb_typeof(t.value) = 'array' THEN t.value END) a
    ) c
  )
  SELECT string_agg(value #>> '{}', ' ') FROM t
  WHERE jsonb_typeof(value) IN ('string', 'number') AND key IS DISTINCT FROM 'role'
$$;

-- An event's searched text (its `body`, the JSON of its fields).
CREATE FUNCTION agentmon_event_text(body text) RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$
  SELECT string_agg(agentmon_json_text(b -> f), ' ' ORDER BY n)
  FROM (SELECT body::jsonb AS b) x,
    unnest(ARRAY['prompt', 'completion', 'input', 'output', 'error_type', 'code', 'details']) WITH ORDINALITY AS u (f, n)
  WHERE b ? f
$$;

-- A session's searched text.
CREATE FUNCTION agentmon_session_text(reason text, tags text[]) RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$ SELECT concat_ws(' ', reason, array_to_string(tags, ' ')) $$;

ALTER TABLE events ADD COLUMN search_words text;
-- The events stored before: their words from their bodies (not deduplicated; to_tsvector does).
UPDATE events SET search_words = regexp_replace(
  agentmon_search_fold(left(coalesce(agentmon_event_text(body), ''), 200000)), '[^[:alnum:]]+', ' ', 'g');
CREATE INDEX events_search ON events USING gin (to_tsvector('simple', search_words));
CREATE INDEX sessions_search ON sessions USING gin (agentmon_search_vector(agentmon_session_text(end_state_reason, tags)));
