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

/** The session list's condition: the session's own fields match, or one of its events does. */
export const SEARCH_CONDITION = `(s.pk IN (SELECT rowid FROM session_search WHERE session_search MATCH @q)
  OR s.pk IN (SELECT e.session_pk FROM events e
    WHERE e.pk IN (SELECT rowid FROM event_search WHERE event_search MATCH @q)))`;

/** Finds where each listed session matched. */
export function searchMatches(db: Db) {
  const q = {
    session: db.prepare<{ pk: number; q: string }, { end_state_reason: string | null; tags: string | null }>(
      `SELECT end_state_reason, tags FROM sessions
       WHERE pk = @pk AND EXISTS (SELECT 1 FROM session_search WHERE session_search MATCH @q
         AND rowid BETWEEN @pk AND @pk)`, // not rowid = @pk: FTS5 (3.53) drops that beside MATCH
    ),
    // Its first matching event in time order; the index is read only over the session's row keys.
    event: db.prepare<{ pk: number; q: string }, { id: string; body: string }>(
      `SELECT e.id, e.body FROM events e
       WHERE e.session_pk = @pk AND e.pk IN (SELECT rowid FROM event_search WHERE event_search MATCH @q
         AND rowid >= (SELECT min(pk) FROM events WHERE session_pk = @pk)
         AND rowid <= (SELECT max(pk) FROM events WHERE session_pk = @pk))
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
