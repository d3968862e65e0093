/**
 * Full-text search on SQLite (migration 008, docs/decisions/023-search.md): `q` as an FTS5 query,
 * and the match of each listed session, its snippet computed from the stored row.
 */
import { eventFields, type SearchMatch, type SearchQuery, sessionFields, snippetOf } from "../../domain/search.ts";
import { parse } from "../rows.ts";
import type { Db } from "./open.ts";

/**
 * The FTS5 query of the terms: each word or phrase as an FTS5 string (so that no character of it
 * is FTS5 syntax: the words hold letters and digits only), `*` after a prefix; juxtaposed, ANDed.
 */
export const ftsQuery = (query: SearchQuery) =>
  query.terms.map((term) => `"${term.words.join(" ")}"${term.prefix ? "*" : ""}`).join(" ");

/**
 * The session list's conditions: the session's own fields match, or one of its events does (an
 * event's rowid is session_pk * 2^32 + pk % 2^32, migration 008). `q` reads every matching
 * event's rowid once, then the sessions in list order: the plan for a rare word. `q_common`
 * looks in each session's rowid range, newest session first, and stops at a full page: the plan
 * for a common word, whose every match would take long to read. listQuery picks by `isCommon`.
 */
export const SEARCH_CONDITIONS = {
  q: `(s.pk IN (SELECT rowid FROM session_search WHERE session_search MATCH @q)
    OR s.pk IN (SELECT rowid >> 32 FROM event_search WHERE event_search MATCH @q))`,
  // (`rowid BETWEEN x AND x`, not `rowid = x`: FTS5 3.53 drops an equality on rowid beside MATCH.)
  q_common: `(EXISTS (SELECT 1 FROM event_search WHERE event_search MATCH @q
      AND rowid BETWEEN s.pk << 32 AND (s.pk << 32) | 4294967295)
    OR EXISTS (SELECT 1 FROM session_search WHERE session_search MATCH @q AND rowid BETWEEN s.pk AND s.pk))`,
} as const;

/** More matching events than this, and a search reads the sessions first (`q_common`). */
export const COMMON = 5000;

/** Whether the FTS5 query matches more than COMMON events. */
export function commonness(db: Db) {
  const probe = db
    .prepare<[string], number>(
      `SELECT count(*) FROM (SELECT 1 FROM event_search WHERE event_search MATCH ? LIMIT ${COMMON + 1})`,
    )
    .pluck();
  return (match: string) => (probe.get(match) as number) > COMMON;
}

/** Finds where each listed session matched. */
export function searchMatches(db: Db) {
  const q = {
    session: db.prepare<{ pk: number; q: string }, { end_state_reason: string | null; tags: string | null }>(
      `SELECT end_state_reason, tags FROM sessions
       WHERE pk = @pk AND EXISTS (SELECT 1 FROM session_search WHERE session_search MATCH @q
         AND rowid BETWEEN @pk AND @pk)`,
    ),
    // Its first matching event in time order; the index is read only over the session's rowid range.
    event: db.prepare<{ pk: number; q: string }, { id: string; body: string }>(
      `SELECT e.id, e.body FROM events e
       WHERE e.session_pk = @pk AND (e.pk & 4294967295) IN (SELECT rowid & 4294967295 FROM event_search
         WHERE event_search MATCH @q AND rowid BETWEEN @pk << 32 AND (@pk << 32) | 4294967295)
       ORDER BY e.init_us, e.id LIMIT 1`,
    ),
  };
  /** The session's own fields when they match, else its first matching event. */
  return (pk: number, query: SearchQuery, match: string): SearchMatch | undefined => {
    const params = { pk, q: match };
    const session = q.session.get(params);
    if (session) return snippetOf(sessionFields(session.end_state_reason, parse(session.tags)), query, null);
    const event = q.event.get(params);
    if (event) return snippetOf(eventFields(parse(event.body) ?? {}), query, event.id);
    return undefined;
  };
}
