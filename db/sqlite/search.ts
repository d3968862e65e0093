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
  foldedText,
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
 * The index's words (folded) that a prefix stands for, or undefined when they are more than
 * EXPANDED_WORDS (searchWalk's `expansion`).
 */
export type Expand = (prefix: string) => string[] | undefined;

/**
 * A prefix in an FTS5 query: the words of the index it stands for, ORed, when `expand` knows them
 * (FTS5 merges the whole list of every word a prefix starts at each use, 30-90 ms for a common one,
 * where a word whole is read a page at a time); else the prefix.
 */
function prefixed(word: string, expand: Expand | undefined) {
  const words = expand?.(fold(word));
  if (words === undefined) return quoted([word], true);
  // No word of the index starts with it, so neither is it one: it matches nothing, as the prefix would.
  if (words.length === 0) return quoted([word], false);
  const each = words.map((w) => `"${w.replaceAll('"', '""')}"`);
  return each.length === 1 ? (each[0] as string) : `(${each.join(" OR ")})`;
}

/**
 * The same over the events' index, which keeps no positions (detail=none) and so takes no phrase:
 * a phrase's words each, ANDed (its last one the prefix when the phrase is); agentmon_has_phrases
 * then checks the candidates' text.
 */
export const ftsEventQuery = (query: SearchQuery, expand?: Expand) =>
  query.terms
    .flatMap((term) =>
      term.words.map((word, i) =>
        term.prefix && i === term.words.length - 1 ? prefixed(word, expand) : quoted([word], false),
      ),
    )
    .join(" AND "); // explicit: FTS5 ANDs two strings side by side, not two groups

/** The list's parameters for a query: @q, @q_events, and @q_phrases when it holds a phrase. */
export function searchParams(query: SearchQuery, expand?: Expand): { q: string; q_events: string; q_phrases?: string } {
  const phrases = query.terms.some((term) => term.words.length > 1);
  return {
    q: ftsQuery(query),
    q_events: ftsEventQuery(query, expand),
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

const fieldsOf = (body: unknown): Record<string, unknown> =>
  typeof body === "string" ? ((parse(body) as Record<string, unknown> | null) ?? {}) : {};

/** Whether a stored event body matches the query: its words as the index has them, phrases within one field. */
function eventMatcher(cache: WordCache) {
  return (body: unknown, query: SearchQuery) => {
    const fields = fieldsOf(body);
    const found = new Set(eventWords(fields, cache).split(" "));
    return matchesWords(found, () => indexedFields(eventFields(fields)), query);
  };
}

/**
 * The SQL functions the index and the phrase check need, on every connection (openDb before its
 * migrations, openReader): agentmon_event_words(body), the distinct folded words of an event's
 * searched text (migration 008's event_search_text); agentmon_folded_text(text), a session's own
 * text folded, in order (migration 017's session_search_text); agentmon_has_phrases(body, query), whether
 * each of the query's phrases is in one field of the event (hasPhrases: never across two), and
 * agentmon_session_has_phrases(end_state_reason, tags, query) the same of a session's own fields.
 */
export function searchFunctions(db: Db) {
  const cache = new WordCache();
  db.function("agentmon_event_words", { deterministic: true }, (body) => eventWords(fieldsOf(body), cache));
  db.function("agentmon_folded_text", { deterministic: true }, (text) =>
    typeof text === "string" ? foldedText(text) : null,
  );
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
  const eventMatches = eventMatcher(cache);
  db.function("agentmon_event_matches", { deterministic: true }, (body, query) =>
    eventMatches(body, JSON.parse(String(query)) as SearchQuery) ? 1 : 0,
  );
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
 * Event bodies a page-first search reads at most, all its chunks together, before it reads the
 * index instead: a session holds any number of events (20 000 each in a load of long sessions), so
 * a bound on sessions alone bounds nothing (a walk of 100 such sessions read 2 M bodies, 7-50 s).
 */
export const WALKED_EVENTS = 10_000;

const ASCII_WORD = /^[a-z0-9]+$/;

/** Words of the index a prefix may stand for in a probe of one session (searchWalk). */
export const EXPANDED_WORDS = 16;

/** Whether every prefix of the query stands for at most EXPANDED_WORDS words of the index. */
const expandable = (query: SearchQuery, expand: Expand) =>
  query.terms.every((term) => !term.prefix || expand(fold(term.words[term.words.length - 1] ?? "")) !== undefined);

/** The query with each prefix that cannot be expanded read as the word itself (a merge is slow). */
const wholeOrExpanded = (query: SearchQuery, expand: Expand): SearchQuery => ({
  terms: query.terms.map((term) =>
    term.prefix && !expandable({ terms: [term] }, expand) ? { ...term, prefix: false } : term,
  ),
});

/** Sessions a page-first search asks of the index one by one at most (searchWalk), about 70 µs each. */
export const WALKED_PROBES = 2_000;

/** One page-first search's state: the bodies and probes it may still read, and its expansion of prefixes. */
export interface Walk {
  events: number;
  probes: number;
  expand: Expand;
}

/**
 * For a query matching many events, the list is walked in its own order, a chunk of sessions at a
 * time, and each chunk is kept to the sessions whose events (or own fields) match, read from the
 * stored rows with the words the index was given (an exact answer, the condition's own): reading
 * every match of a word in half of the events and then each one's session took 20 s on 1 M
 * sessions, and FTS5 reads a word's whole list for each probe of a session's range when the word
 * is a prefix (30-90 ms a probe), while a page of a common word fills from the first sessions
 * walked. Each session's events are read until one matches; once WALKED_EVENTS bodies or
 * WALKED_SESSIONS sessions are read without a full page, the rest of the page comes from the index,
 * after the last session decided.
 */
export function searchWalk(db: Db) {
  db.exec("CREATE VIRTUAL TABLE IF NOT EXISTS temp.event_search_vocab USING fts5vocab(main, event_search, row)");
  const q = {
    common: db
      .prepare<[string]>(
        `SELECT count(*) FROM (SELECT 1 FROM event_search WHERE event_search MATCH ? LIMIT ${COMMON_MATCHES})`,
      )
      .pluck(),
    bodies: db.prepare<[number], string>("SELECT body FROM events WHERE session_pk = ?").pluck(),
    // The index's words that start with a prefix (its vocabulary, a temporary table of this
    // connection's: nothing is stored).
    vocab: db
      .prepare<{ prefix: string }, string>(
        `SELECT term FROM temp.event_search_vocab WHERE term >= @prefix AND term < @prefix || char(1114111)
         LIMIT ${EXPANDED_WORDS + 1}`,
      )
      .pluck(),
    // Whether one of the session's events is in the index for the query, read over the session's
    // row keys only (as searchMatches reads a match).
    // (The bounds in one read of the session's index entries, not one each: 1.4 ms, not 1.9, for
    // 20 000 events. They are cast: bound as parameters without it, a probe of a common word took
    // 3-20 times longer.)
    bounds: db.prepare<[number], { lo: number | null; hi: number | null }>(
      "SELECT min(pk) AS lo, max(pk) AS hi FROM events WHERE session_pk = ?",
    ),
    probe: [false, true].map((phrases) =>
      db
        .prepare<{ pk: number; lo: number; hi: number; q_events: string; q_phrases?: string }>(
          `SELECT 1 FROM events e
           WHERE e.session_pk = @pk AND e.pk IN (SELECT rowid FROM event_search WHERE event_search MATCH @q_events
             AND rowid >= CAST(@lo AS INTEGER) AND rowid <= CAST(@hi AS INTEGER))
             ${phrases ? "AND agentmon_has_phrases(e.body, @q_phrases)" : ""}
           LIMIT 1`,
        )
        .pluck(),
    ),
    sessions: db
      .prepare<[string, string]>(
        `SELECT pk FROM sessions
         WHERE pk IN (SELECT value FROM json_each(?)) AND agentmon_session_matches(end_state_reason, tags, ?)`,
      )
      .pluck(),
  };
  const eventMatches = eventMatcher(new WordCache());
  return {
    /**
     * Whether the query's words are in COMMON_MATCHES events or more: a prefix as the words it
     * starts when they are few (Expand), else read as the word itself (a prefix costs FTS5 a merge
     * of every word it starts, 300 ms for a common one).
     */
    isCommon: (query: SearchQuery, expand: Expand) =>
      q.common.get(ftsEventQuery(wholeOrExpanded(query, expand), expand)) === COMMON_MATCHES,
    /** Whether one of the query's words is in COMMON_MATCHES events or more (FTS5 reads its whole list to probe one session). */
    hasCommon: (query: SearchQuery, expand: Expand) =>
      query.terms.some(
        (term) => q.common.get(ftsEventQuery(wholeOrExpanded({ terms: [term] }, expand), expand)) === COMMON_MATCHES,
      ),
    /**
     * A search's expansion of prefixes (Expand), each looked up once: the vocabulary counts every
     * word's events as it reads it (10 ms for a word of 250 000 events), once per search, not per probe.
     */
    expansion(): Expand {
      const known = new Map<string, string[] | undefined>();
      return (prefix) => {
        // Only ASCII: unicode61 folds some letters otherwise than JavaScript does (decision 023),
        // so the vocabulary is looked up only where both spell the word alike.
        if (!ASCII_WORD.test(prefix)) return undefined;
        if (!known.has(prefix)) {
          const words = q.vocab.all({ prefix });
          known.set(prefix, words.length > EXPANDED_WORDS ? undefined : words);
        }
        return known.get(prefix);
      };
    },
    /**
     * Which of these sessions, in order, match the query, reading at most `walk.events` event
     * bodies (taken off it). `decided` is how many of them, from the first, were decided before the
     * budget ran out: the session after them, and the rest, are undecided.
     */
    matching(pks: number[], query: SearchQuery, walk: Walk) {
      const matched = new Set(q.sessions.all(JSON.stringify(pks), JSON.stringify(query)) as number[]);
      // Whether the session's events match, from the index (true/false), or undefined when it
      // cannot be asked (a prefix of too many words) or the walk's probes are spent.
      // The probe's FTS5 query, made once for the chunk (undefined: a prefix of too many words).
      const params = expandable(query, walk.expand) ? searchParams(query, walk.expand) : undefined;
      const probe = (pk: number) => {
        if (walk.probes <= 0 || params === undefined) return undefined;
        walk.probes -= 1;
        const { lo, hi } = q.bounds.get(pk) ?? { lo: null, hi: null };
        if (lo === null || hi === null) return false;
        const { q_events, q_phrases } = params;
        return (
          q.probe[q_phrases === undefined ? 0 : 1]?.get({
            pk,
            lo,
            hi,
            q_events,
            ...(q_phrases === undefined ? {} : { q_phrases }),
          }) === 1
        );
      };
      for (const [decided, pk] of pks.entries()) {
        if (matched.has(pk)) continue;
        let read = 0;
        let found: boolean | undefined;
        for (const body of q.bodies.iterate(pk)) {
          if (read === SCANNED_EVENTS || walk.events <= 0) {
            // A long session, or no bodies left to read: the index, else read on while bodies last.
            found = probe(pk);
            if (found !== undefined) break;
            if (walk.events <= 0) return { matched, decided };
          }
          walk.events -= 1;
          read += 1;
          if (eventMatches(body, query)) {
            found = true;
            break;
          }
        }
        if (found) matched.add(pk);
      }
      return { matched, decided: pks.length };
    },
  };
}

/**
 * Events of a session the walk reads before it asks the index whether the session matches, and
 * that a common query's snippet reads in order before it asks the index for the first match.
 */
export const SCANNED_EVENTS = 50;

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
    // For a common query (searchWalk), the session's first SCANNED_EVENTS events in order, checked
    // one by one: FTS5 would read a prefix's whole list of events to find the few of one session.
    // Past them (a long session whose first match is late), the index as for any query.
    walked: db.prepare<{ pk: number; query: string }, { id: string; body: string }>(
      `SELECT id, body FROM (SELECT id, body, init_us FROM events WHERE session_pk = @pk
         ORDER BY init_us, id LIMIT ${SCANNED_EVENTS})
       WHERE agentmon_event_matches(body, @query) ORDER BY init_us, id LIMIT 1`,
    ),
  };
  /** The session's own fields when they match, else its first matching event. */
  return (pk: number, query: SearchQuery, common: boolean, expand?: Expand): SearchMatch | undefined => {
    const { q: match, ...events } = searchParams(query, expand);
    const session = q.session.get({ pk, q: match });
    const own = session && sessionFields(session.end_state_reason, parse(session.tags));
    // The index holds the session's fields as one text: a phrase is checked within one field.
    if (own && (events.q_phrases === undefined || hasPhrases(indexedFields(own), query))) {
      return snippetOf(own, query, null);
    }
    const indexed = () => q.event[events.q_phrases === undefined ? 0 : 1]?.get({ pk, ...events });
    const event = common ? (q.walked.get({ pk, query: JSON.stringify(query) }) ?? indexed()) : indexed();
    if (event) return snippetOf(eventFields(parse(event.body) ?? {}), query, event.id);
    return undefined;
  };
}
