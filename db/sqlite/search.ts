/**
 * Full-text search on SQLite (migration 008, docs/decisions/023-search.md): `q` as an FTS5 query,
 * and the match of each listed session, its snippet computed from the stored row.
 */

import type Database from "better-sqlite3";
import {
  distinctWords,
  eventFields,
  eventWords,
  fold,
  hasPhrases,
  INDEXED_CHARACTERS,
  indexedFields,
  matchesWords,
  type SearchMatch,
  type SearchQuery,
  sessionFields,
  snippetOf,
  WordCache,
} from "../../domain/search.ts";
import { parse } from "../rows.ts";

/** A connection (open.ts's Db; not imported from it, since open.ts registers searchFunctions). */
type Db = Database.Database;

const quoted = (words: string[], prefix: boolean) => `"${words.map(fold).join(" ")}"${prefix ? "*" : ""}`;

/**
 * The FTS5 query of the terms over the sessions' index: each word or phrase as an FTS5 string (so
 * that no character of it is FTS5 syntax: the words hold letters and digits only), `*` after a
 * prefix; juxtaposed, ANDed. Words are folded as domain/search.ts folds what is indexed.
 */
export const ftsQuery = (query: SearchQuery) => query.terms.map((term) => quoted(term.words, term.prefix)).join(" ");

/**
 * The same over the events' index, which keeps no positions (detail=none) and so takes no phrase:
 * a phrase's words each, ANDed (its last one the prefix when the phrase is); agentmon_has_phrases
 * then checks the candidates' text.
 */
export const ftsEventQuery = (query: SearchQuery) =>
  query.terms
    .flatMap((term) => term.words.map((word, i) => quoted([word], term.prefix && i === term.words.length - 1)))
    .join(" ");

/** The list's parameters for a query: @q, @q_events, and @q_phrases when it holds a phrase. */
export function searchParams(query: SearchQuery): { q: string; q_events: string; q_phrases?: string } {
  const phrases = query.terms.some((term) => term.words.length > 1);
  return {
    q: ftsQuery(query),
    q_events: ftsEventQuery(query),
    ...(phrases ? { q_phrases: JSON.stringify(query) } : {}),
  };
}

const eventCondition = (phrases: boolean) =>
  `e.pk IN (SELECT rowid FROM event_search WHERE event_search MATCH @q_events)${
    phrases ? " AND agentmon_has_phrases(e.body, @q_phrases)" : ""
  }`;

/**
 * The session's own fields: the index holds them as one text (end_state_reason, then the tags), so
 * a phrase found there is checked again within one field (decision 030: a phrase never crosses
 * fields).
 */
const sessionCondition = (phrases: boolean) =>
  `s.pk IN (SELECT rowid FROM session_search WHERE session_search MATCH @q)${
    phrases ? " AND agentmon_session_has_phrases(s.end_state_reason, s.tags, @q_phrases)" : ""
  }`;

/** The session list's condition: the session's own fields match, or one of its events does. */
export const searchCondition = (phrases: boolean) => `(${sessionCondition(phrases)}
  OR s.pk IN (SELECT e.session_pk FROM events e WHERE ${eventCondition(phrases)}))`;

/**
 * The SQL functions the index and the phrase check need, on every connection (openDb before its
 * migrations, openReader): agentmon_event_words(body), the distinct folded words of an event's
 * searched text (migration 008's event_search_text); agentmon_has_phrases(body, query), whether
 * each of the query's phrases is in one field of the event (hasPhrases: never across two), and
 * agentmon_session_has_phrases(end_state_reason, tags, query) the same of a session's own fields.
 */
export function searchFunctions(db: Db) {
  const fieldsOf = (body: unknown): Record<string, unknown> =>
    typeof body === "string" ? ((parse(body) as Record<string, unknown> | null) ?? {}) : {};
  const cache = new WordCache();
  db.function("agentmon_event_words", { deterministic: true }, (body) => eventWords(fieldsOf(body), cache));
  db.function("agentmon_has_phrases", { deterministic: true }, (body, query) =>
    hasPhrases(indexedFields(eventFields(fieldsOf(body))), JSON.parse(String(query)) as SearchQuery) ? 1 : 0,
  );
  const ownFields = (reason: unknown, tags: unknown) =>
    indexedFields(
      sessionFields(typeof reason === "string" ? reason : null, typeof tags === "string" ? parse(tags) : null),
    );
  db.function("agentmon_session_has_phrases", { deterministic: true }, (reason, tags, query) =>
    hasPhrases(ownFields(reason, tags), JSON.parse(String(query)) as SearchQuery) ? 1 : 0,
  );
  // The page-first search's checks (searchWalk): an event's, a session's own fields.
  const words = (text: string) => new Set(distinctWords(text).split(" "));
  db.function("agentmon_event_matches", { deterministic: true }, (body, query) => {
    const fields = fieldsOf(body);
    const found = new Set(eventWords(fields, cache).split(" "));
    const parsed = JSON.parse(String(query)) as SearchQuery;
    return matchesWords(found, () => indexedFields(eventFields(fields)), parsed) ? 1 : 0;
  });
  db.function("agentmon_session_matches", { deterministic: true }, (reason, tags, query) => {
    const fields = ownFields(reason, tags);
    const text = fields
      .map(([, value]) => value)
      .join(" ")
      .slice(0, INDEXED_CHARACTERS);
    return matchesWords(words(text), () => fields, JSON.parse(String(query)) as SearchQuery) ? 1 : 0;
  });
}

/** A query whose words are in at least this many events is searched page-first (searchWalk). */
export const COMMON_MATCHES = 5_000;
/** Sessions a page-first search reads at most before it reads the index instead. */
export const WALKED_SESSIONS = 1_000;

/**
 * For a query matching many events, the list is walked in its own order, a chunk of sessions at a
 * time, and each chunk is kept to the sessions whose events (or own fields) match, read from the
 * stored rows with the words the index was given (an exact answer, the condition's own): reading
 * every match of a word in half of the events and then each one's session took 20 s on 1 M
 * sessions, and FTS5 reads a word's whole list for each probe of a session's range, while a page
 * of a common word fills from the first sessions walked. After WALKED_SESSIONS without a full page
 * the rest of the page comes from the index, after the last session walked.
 */
export function searchWalk(db: Db) {
  const q = {
    common: db
      .prepare<[string]>(
        `SELECT count(*) FROM (SELECT 1 FROM event_search WHERE event_search MATCH ? LIMIT ${COMMON_MATCHES})`,
      )
      .pluck(),
    events: db
      .prepare<[string, string]>(
        `SELECT DISTINCT session_pk FROM events
         WHERE session_pk IN (SELECT value FROM json_each(?)) AND agentmon_event_matches(body, ?)`,
      )
      .pluck(),
    sessions: db
      .prepare<[string, string]>(
        `SELECT pk FROM sessions
         WHERE pk IN (SELECT value FROM json_each(?)) AND agentmon_session_matches(end_state_reason, tags, ?)`,
      )
      .pluck(),
  };
  return {
    /**
     * Whether the query's words, whole (a prefix read as the word itself: a prefix costs FTS5 a
     * merge of every word it starts, 300 ms for a common one), are in COMMON_MATCHES events or more.
     */
    isCommon: (query: SearchQuery) =>
      q.common.get(ftsEventQuery({ terms: query.terms.map((term) => ({ ...term, prefix: false })) })) ===
      COMMON_MATCHES,
    /** Whether one of the query's words, whole, is in COMMON_MATCHES events or more (FTS5 reads its whole list to probe one session). */
    hasCommon: (query: SearchQuery) =>
      query.terms.some(
        (term) => q.common.get(ftsEventQuery({ terms: [{ ...term, prefix: false }] })) === COMMON_MATCHES,
      ),
    /** The pks of these sessions that match the query. */
    matching(pks: number[], query: SearchQuery): Set<number> {
      const list = JSON.stringify(pks);
      const text = JSON.stringify(query);
      return new Set([...q.sessions.all(list, text), ...q.events.all(list, text)] as number[]);
    },
  };
}

/** Finds where each listed session matched. */
export function searchMatches(db: Db) {
  const q = {
    session: db.prepare<{ pk: number; q: string }, { end_state_reason: string | null; tags: string | null }>(
      `SELECT end_state_reason, tags FROM sessions
       WHERE pk = @pk AND EXISTS (SELECT 1 FROM session_search WHERE session_search MATCH @q
         AND rowid BETWEEN @pk AND @pk)`, // not rowid = @pk: FTS5 (3.53) drops that beside MATCH
    ),
    // Its first matching event in time order; the index is read only over the session's row keys.
    event: [false, true].map((phrases) =>
      db.prepare<{ pk: number; q_events: string; q_phrases?: string }, { id: string; body: string }>(
        `SELECT e.id, e.body FROM events e
         WHERE e.session_pk = @pk AND e.pk IN (SELECT rowid FROM event_search WHERE event_search MATCH @q_events
           AND rowid >= (SELECT min(pk) FROM events WHERE session_pk = @pk)
           AND rowid <= (SELECT max(pk) FROM events WHERE session_pk = @pk))
           ${phrases ? "AND agentmon_has_phrases(e.body, @q_phrases)" : ""}
         ORDER BY e.init_us, e.id LIMIT 1`,
      ),
    ),
    // For a common query (searchWalk), the session's events in order, checked one by one: FTS5
    // would read the word's whole list of events to find the few of one session.
    walked: db.prepare<{ pk: number; query: string }, { id: string; body: string }>(
      `SELECT id, body FROM events WHERE session_pk = @pk AND agentmon_event_matches(body, @query)
       ORDER BY init_us, id LIMIT 1`,
    ),
  };
  /** The session's own fields when they match, else its first matching event. */
  return (pk: number, query: SearchQuery, common: boolean): SearchMatch | undefined => {
    const { q: match, ...events } = searchParams(query);
    const session = q.session.get({ pk, q: match });
    const own = session && sessionFields(session.end_state_reason, parse(session.tags));
    // The index holds the session's fields as one text: a phrase is checked within one field.
    if (own && (events.q_phrases === undefined || hasPhrases(indexedFields(own), query))) {
      return snippetOf(own, query, null);
    }
    const event = common
      ? q.walked.get({ pk, query: JSON.stringify(query) })
      : q.event[events.q_phrases === undefined ? 0 : 1]?.get({ pk, ...events });
    if (event) return snippetOf(eventFields(parse(event.body) ?? {}), query, event.id);
    return undefined;
  };
}
