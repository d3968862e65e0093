import { deleteSession as remove } from "../services/reads.ts";
import { type Deps, type Handler, projectIdOf } from "./types.ts";

/** Removes the session with its events and agents; a second delete, or another project's session, is a 404. */
export const deleteSession =
  (deps: Deps): Handler<"deleteSession"> =>
  async (req) => {
    await remove(deps.store, projectIdOf(req), req.params.session_id);
    return { status: "success" as const };
  };
