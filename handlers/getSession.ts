import { sessionDocument } from "../domain/views.ts";
import { sessionUrl } from "../services/context.ts";
import { readSession } from "../services/reads.ts";
import { type Deps, type Handler, projectIdOf } from "./types.ts";

/** One session of the key's project with its stats and agents; another project's is a 404 like an unknown one. */
export const getSession =
  (deps: Deps): Handler<"getSession"> =>
  async (req) => {
    const id = req.params.session_id;
    const found = await readSession(deps.store, projectIdOf(req), id, { agents: true, events: false });
    return { status: "success" as const, ...sessionDocument(found), session_url: sessionUrl(deps, id) };
  };
