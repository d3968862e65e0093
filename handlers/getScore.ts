import { getScore as read } from "../services/scores.ts";
import { type Deps, type Handler, projectIdOf } from "./types.ts";

/** One score of the project. */
export const getScore =
  (deps: Deps): Handler<"getScore"> =>
  async (req) => ({ status: "success" as const, score: await read(deps.store, projectIdOf(req), req.params.score_id) });
