import { bulkDelete } from "../services/reads.ts";
import { type Deps, type Handler, projectIdOf } from "./types.ts";

/** Bulk delete: the project's sessions matching the list's filters, removed in batches, or counted (dry_run). */
export const deleteSessions =
  (deps: Deps): Handler<"deleteSessions"> =>
  async (req) => {
    const { sessions, events, dryRun } = await bulkDelete(deps.store, projectIdOf(req), req.body);
    return { status: "success" as const, sessions, events, dry_run: dryRun };
  };
