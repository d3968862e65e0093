import { sessionDocument } from "../domain/views.ts";
import { sessionUrl } from "../services/context.ts";
import { readSession } from "../services/reads.ts";
import { SESSION_SCORES, sessionScores } from "../services/scores.ts";
import { type Deps, type Handler, projectIdOf } from "./types.ts";

/** One session of the key's project with its stats, agents and scores; another project's is a 404 like an unknown one. */
export const getSession =
  (deps: Deps): Handler<"getSession"> =>
  async (req) => {
    const id = req.params.session_id;
    const projectId = projectIdOf(req);
    const found = await readSession(deps.store, projectId, id, { agents: true, events: false });
    const scores = await sessionScores(deps.store, projectId, id, SESSION_SCORES);
    return { status: "success" as const, ...sessionDocument(found), scores, session_url: sessionUrl(deps, id) };
  };
