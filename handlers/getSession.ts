import { sessionDocument } from "../lib/records.ts";
import { sessionNotFound } from "./errors.ts";
import { apiKeyOf, type Deps, type Handler, sessionUrl } from "./types.ts";

/** One session of the key's project with its stats and agents; another project's is a 404 like an unknown one. */
export const getSession =
  (deps: Deps): Handler<"getSession"> =>
  async (req) => {
    const id = req.params.session_id;
    const found = await deps.store.readSession(apiKeyOf(req).project_id, id, { agents: true, events: false });
    if (!found) throw sessionNotFound(id);
    return {
      status: "success" as const,
      ...sessionDocument(found),
      session_url: sessionUrl(deps, id),
    };
  };
