import { deleteScore as remove } from "../services/scores.ts";
import { type Deps, type Handler, projectIdOf } from "./types.ts";

/** Removes a score for good. */
export const deleteScore =
  (deps: Deps): Handler<"deleteScore"> =>
  async (req) => {
    await remove(deps.store, projectIdOf(req), req.params.score_id);
    return { status: "success" as const };
  };
