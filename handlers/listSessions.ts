import { sessionView, statsView } from "../domain/views.ts";
import { listSessions as list } from "../services/reads.ts";
import { type Deps, type Handler, projectIdOf } from "./types.ts";

/** The read API's session list: the key's project only, newest first, filtered, keyset pages. */
export const listSessions =
  (deps: Deps): Handler<"listSessions"> =>
  async (req) => {
    const page = await list(deps.store, projectIdOf(req), req.query);
    return {
      status: "success" as const,
      sessions: page.items.map(({ session, totals, match }) => ({
        session: sessionView(session),
        stats: statsView(session, totals),
        ...(match ? { match } : {}),
      })),
      next_cursor: page.next_cursor,
    };
  };
