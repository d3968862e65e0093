/**
 * Full-text search on PostgreSQL (migration 006, docs/decisions/023-search.md): `q` as a tsquery
 * over the expression indexes, and the match of each listed session, its snippet computed from
 * the stored row as on SQLite.
 */
import type pg from "pg";
import { eventFields, type SearchMatch, type SearchQuery, sessionFields, snippetOf } from "../../domain/search.ts";
import { parse } from "../rows.ts";

type Queryable = pg.Pool | pg.ClientBase;

/**
 * The tsquery text of the terms: each word quoted (words hold letters and digits only), a
 * phrase's words joined by `<->`, `:*` after a prefix, the terms ANDed. It is folded in SQL
 * (agentmon_search_fold) as the indexed text is.
 */
export const tsQuery = (query: SearchQuery) =>
  query.terms
    .map((term) => `${term.words.map((word) => `'${word}'`).join(" <-> ")}${term.prefix ? ":*" : ""}`)
    .join(" & ");

const TSQUERY = (param: string) => `to_tsquery('simple', agentmon_search_fold(${param}))`;
const EVENT_VECTOR = "agentmon_search_vector(agentmon_event_text(body))";
const SESSION_VECTOR = "agentmon_search_vector(agentmon_session_text(end_state_reason, tags))";

/** The session list's condition, `param` the tsquery text: the session's own fields match, or one of its events does. */
export const searchCondition = (param: string) =>
  `(s.pk IN (SELECT pk FROM sessions WHERE ${SESSION_VECTOR} @@ ${TSQUERY(param)})
    OR s.pk IN (SELECT session_pk FROM events WHERE ${EVENT_VECTOR} @@ ${TSQUERY(param)}))`;

/** The session's own fields when they match, else its first matching event in time order. */
export async function searchMatch(db: Queryable, pk: number, query: SearchQuery): Promise<SearchMatch | undefined> {
  const text = tsQuery(query);
  const { rows: own } = await db.query<{ end_state_reason: string | null; tags: string[] | null }>(
    `SELECT end_state_reason, tags FROM sessions WHERE pk = $1 AND ${SESSION_VECTOR} @@ ${TSQUERY("$2")}`,
    [pk, text],
  );
  const session = own[0];
  if (session) return snippetOf(sessionFields(session.end_state_reason, session.tags), query, null);
  const { rows } = await db.query<{ id: string; body: string }>(
    `SELECT id, body FROM events WHERE session_pk = $1 AND ${EVENT_VECTOR} @@ ${TSQUERY("$2")}
     ORDER BY init_us, id LIMIT 1`,
    [pk, text],
  );
  const event = rows[0];
  return event && snippetOf(eventFields(parse(event.body) ?? {}), query, event.id);
}
