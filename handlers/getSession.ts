import { sessionDocument } from "../domain/views.ts";
import { sessionUrl } from "../services/context.ts";
import { readSession } from "../services/reads.ts";
import { apiKeyOf, type Deps, type Handler } from "./types.ts";

/** One session of the key's project with its stats and agents; another project's is a 404 like an unknown one. */
export const getSession =
  (deps: Deps): Handler<"getSession"> =>
  async (req) => {
    const id = req.params.session_id;
    const found = await readSession(deps.store, apiKeyOf(req).project_id, id, { agents: true, events: false });
    return { status: "success" as const, ...sessionDocument(found), session_url: sessionUrl(deps, id) };
  };
