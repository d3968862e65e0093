import type { SessionFilter } from "../db/store.ts";
import { decodeCursor, encodeCursor } from "../lib/cursor.ts";
import { invalidParameters } from "../lib/parameters.ts";
import { canonicalEndState, END_STATE_RULE, sessionView, statsView } from "../lib/records.ts";
import { parseTimestamp } from "../lib/timestamps.ts";
import type { ErrorDetail } from "./errors.ts";
import { apiKeyOf, type Deps, type Handler } from "./types.ts";

/** The read API's session list: the key's project only, newest first, filtered, keyset pages. */
export const listSessions =
  (deps: Deps): Handler<"listSessions"> =>
  async (req) => {
    const key = apiKeyOf(req);
    const query = req.query;
    const errors: ErrorDetail[] = [];
    const filter: SessionFilter = {};
    if (query.tag !== undefined) filter.tags = query.tag;
    if (query.end_state !== undefined) {
      const state = canonicalEndState(query.end_state);
      if (state) filter.end_state = state;
      else errors.push({ path: "query.end_state", message: END_STATE_RULE });
    }
    // ajv has checked both formats (G6); parse again for the instant.
    const from = query.from === undefined ? undefined : parseTimestamp(query.from);
    const to = query.to === undefined ? undefined : parseTimestamp(query.to);
    if (from) filter.from_us = from.us;
    if (to) filter.to_us = to.us;
    if (query.agent_id !== undefined) filter.agent_id = query.agent_id;
    if (query.q) filter.q = query.q; // every reason contains "": an empty q filters nothing
    const after = query.cursor === undefined ? undefined : decodeCursor("sessions", query.cursor);
    if (query.cursor !== undefined && !after) errors.push(CURSOR_PROBLEM);
    if (errors.length > 0) throw invalidParameters(errors);

    const page = await deps.store.listSessions(key.project_id, filter, after, query.limit ?? 50);
    return {
      status: "success" as const,
      sessions: page.items.map(({ session, totals }) => ({
        session: sessionView(session),
        stats: statsView(session, totals),
      })),
      next_cursor: page.next === null ? null : encodeCursor("sessions", page.next),
    };
  };

export const CURSOR_PROBLEM: ErrorDetail = {
  path: "query.cursor",
  message: "is not a cursor this operation made; pass next_cursor back as it was given",
};
