import { updateScore as update } from "../services/scores.ts";
import { type Deps, type Handler, projectIdOf } from "./types.ts";

/** Changes a score's value, data type, comment, metadata or timestamp, checked as a new one. */
export const updateScore =
  (deps: Deps): Handler<"updateScore"> =>
  async (req) => ({
    status: "success" as const,
    score: await update(deps, projectIdOf(req), req.params.score_id, req.body),
  });
