import { sessionNotFound } from "./errors.ts";
import { apiKeyOf, type Deps, type Handler } from "./types.ts";

/** Removes the session with its events and agents; a second delete, or another project's session, is a 404. */
export const deleteSession =
  (deps: Deps): Handler<"deleteSession"> =>
  async (req) => {
    const id = req.params.session_id;
    if (!(await deps.store.deleteSession(apiKeyOf(req).project_id, id))) throw sessionNotFound(id);
    return { status: "success" as const };
  };
