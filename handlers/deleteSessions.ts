import { audit, keyActor, personActor } from "../services/people.ts";
import { bulkDelete } from "../services/reads.ts";
import { type Deps, type Handler, projectIdOf } from "./types.ts";

/**
 * Bulk delete: the project's sessions matching the list's filters, removed in batches, or counted
 * (dry_run). A delete that removed anything goes into the audit trail (decision 035).
 */
export const deleteSessions =
  (deps: Deps): Handler<"deleteSessions"> =>
  async (req) => {
    const projectId = projectIdOf(req);
    const { sessions, events, dryRun } = await bulkDelete(deps.store, projectId, req.body);
    if (!dryRun && sessions > 0) {
      const by = req.person ? personActor(req.person.user, req.ip) : keyActor(req.apiKey ?? { prefix: "?" }, req.ip);
      await audit(deps, by, "sessions.deleted", { projectId, details: { sessions, events, filter: req.body } });
    }
    return { status: "success" as const, sessions, events, dry_run: dryRun };
  };
