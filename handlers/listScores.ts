import { listScores as page } from "../services/scores.ts";
import { type Deps, type Handler, projectIdOf } from "./types.ts";

/** The project's scores that match the filters, newest first, paged. */
export const listScores =
  (deps: Deps): Handler<"listScores"> =>
  async (req) => ({ status: "success" as const, ...(await page(deps.store, projectIdOf(req), req.query)) });
