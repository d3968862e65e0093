import { exportDocument } from "../domain/views.ts";
import { exportOtlp } from "../services/otlp.ts";
import { readSession } from "../services/reads.ts";
import { sessionScores } from "../services/scores.ts";
import { type Deps, type Handler, projectIdOf } from "./types.ts";

/** The whole session in one document, read in one transaction so that stats and events agree; then its scores. */
export const exportSession =
  (deps: Deps): Handler<"exportSession"> =>
  async (req) => {
    const id = req.params.session_id;
    if (req.query.format === "otlp") return exportOtlp(deps, projectIdOf(req), id);
    const found = await readSession(deps.store, projectIdOf(req), id, { agents: true, events: true });
    const scores = await sessionScores(deps.store, projectIdOf(req), id);
    return { status: "success" as const, ...exportDocument(found), scores };
  };
