/**
 * Full-text search on PostgreSQL (migration 006, docs/decisions/023-search.md): `q` as tsqueries
 * over the events' search_words and the sessions' expression index, the words each event row
 * gets, and the match of each listed session, its snippet computed from the stored row as on
 * SQLite.
 */
import type pg from "pg";
import {
  eventFields,
  fieldWords,
  fold,
  SEARCHED_FIELDS,
  type SearchMatch,
  type SearchQuery,
  sessionFields,
  snippetOf,
} from "../../domain/search.ts";
import { parse } from "../rows.ts";

type Queryable = pg.Pool | pg.ClientBase;

/**
 * The tsquery text of the terms, for the sessions' own text (an expression index that keeps word
 * positions): each word quoted (words hold letters and digits only), a phrase's words joined by
 * `<->`, `:*` after a prefix, the terms ANDed. It is folded in SQL (agentmon_search_fold) as the
 * indexed text is.
 */
export const tsQuery = (query: SearchQuery) =>
  query.terms
    .map((term) => `${term.words.map((word) => `'${word}'`).join(" <-> ")}${term.prefix ? ":*" : ""}`)
    .join(" & ");

/**
 * The same for the events' search_words, which keep no order: every word of every term, folded as
 * eventWords folds them, ANDed; a phrase's last word a prefix when the phrase is one. Phrases are
 * then checked in the candidates' fields (eventPhrases).
 */
export const wordsQuery = (query: SearchQuery) =>
  query.terms
    .flatMap((term) =>
      term.words.map((word, i) => `'${fold(word)}'${term.prefix && i === term.words.length - 1 ? ":*" : ""}`),
    )
    .join(" & ");

const TSQUERY = (param: string) => `to_tsquery('simple', agentmon_search_fold(${param}))`;
const EVENT_WORDS = "to_tsvector('simple', search_words)";
const SESSION_VECTOR = "agentmon_search_vector(agentmon_session_text(end_state_reason, tags))";

/** Each phrase of the query (a term of several words) as a tsquery text of its own. */
const phrasesOf = (query: SearchQuery) =>
  query.terms.filter((term) => term.words.length > 1).map((term) => tsQuery({ terms: [term] }));

/** The searched fields of an event, in SEARCHED_FIELDS' order. */
const FIELDS = `ARRAY[${SEARCHED_FIELDS.map((name) => `'${name}'`).join(", ")}]`;

/**
 * Each phrase within one field of the event (decision 030: a phrase never runs from one field
 * into the next, as the whole text's vector would let it): for each phrase, one of the fields'
 * own vectors holds it.
 */
const eventPhrases = (phrases: string[], p: (value: unknown) => string) =>
  phrases
    .map(
      (phrase) => ` AND EXISTS (SELECT 1 FROM (SELECT body::jsonb AS b) x, unnest(${FIELDS}) f
        WHERE x.b ? f AND agentmon_search_vector(agentmon_json_text(x.b -> f)) @@ ${TSQUERY(p(phrase))})`,
    )
    .join("");

/** The same for a session's own fields, which its index holds as one text (end_state_reason, then the tags). */
const sessionPhrases = (phrases: string[], p: (value: unknown) => string) =>
  phrases
    .map((phrase) => {
      const q = TSQUERY(p(phrase));
      return ` AND (agentmon_search_vector(end_state_reason) @@ ${q}
        OR agentmon_search_vector(array_to_string(tags, ' ')) @@ ${q})`;
    })
    .join("");

/** The events' condition: their words, then (only for the candidates) each phrase in one of their fields. */
function eventCondition(query: SearchQuery, p: (value: unknown) => string) {
  return `${EVENT_WORDS} @@ to_tsquery('simple', ${p(wordsQuery(query))})${eventPhrases(phrasesOf(query), p)}`;
}

/** The sessions' own condition: their text, then each phrase in one of their fields. */
const sessionCondition = (query: SearchQuery, p: (value: unknown) => string) =>
  `${SESSION_VECTOR} @@ ${TSQUERY(p(tsQuery(query)))}${sessionPhrases(phrasesOf(query), p)}`;

/** The session list's condition: the session's own fields match, or one of its events does. */
export const searchCondition = (query: SearchQuery, p: (value: unknown) => string) =>
  `(s.pk IN (SELECT pk FROM sessions WHERE ${sessionCondition(query, p)})
    OR s.pk IN (SELECT session_pk FROM events WHERE ${eventCondition(query, p)}))`;

/** An event row's search_words from its body, parsed again: for rows whose record is not at hand (spans, the bench). */
export const searchWords = (body: unknown) =>
  fieldWords(typeof body === "string" ? ((parse(body) as Record<string, unknown> | null) ?? {}) : {});

/** The session's own fields when they match, else its first matching event in time order. */
export async function searchMatch(db: Queryable, pk: number, query: SearchQuery): Promise<SearchMatch | undefined> {
  const own: unknown[] = [pk];
  const { rows: sessions } = await db.query<{ end_state_reason: string | null; tags: string[] | null }>(
    `SELECT end_state_reason, tags FROM sessions WHERE pk = $1 AND ${sessionCondition(query, (value) => `$${own.push(value)}`)}`,
    own,
  );
  const session = sessions[0];
  if (session) return snippetOf(sessionFields(session.end_state_reason, session.tags), query, null);
  const params: unknown[] = [pk];
  const p = (value: unknown) => `$${params.push(value)}`;
  const { rows } = await db.query<{ id: string; body: string }>(
    `SELECT id, body FROM events WHERE session_pk = $1 AND ${eventCondition(query, p)}
     ORDER BY init_us, id LIMIT 1`,
    params,
  );
  const event = rows[0];
  return event && snippetOf(eventFields(parse(event.body) ?? {}), query, event.id);
}
