/** `agentmon sessions delete`: the bulk delete of POST /v2/delete_sessions, from the command line. */
import { parseTimestamp } from "../domain/timestamps.ts";
import type { SessionFilter } from "../domain/types.ts";
import { audit, CLI_ACTOR } from "../services/people.ts";
import { deleteSessions } from "../services/retention.ts";
import { type Config, ConfigError, DEFAULT_PROJECT, type Output, USAGE } from "./config.ts";
import { auditContext } from "./keys.ts";
import { openCommandStore } from "./storage.ts";

export interface SessionFlags {
  project?: string | undefined;
  before?: string | undefined;
  tag?: string[] | undefined;
  "dry-run"?: boolean | undefined;
}

export async function sessions(sub: string | undefined, flags: SessionFlags, config: Config, io: Output) {
  if (sub !== "delete") {
    io.err(USAGE);
    return 2;
  }
  const before = flags.before === undefined ? undefined : parseTimestamp(flags.before);
  if (before === undefined) {
    throw new ConfigError("sessions delete needs --before, a date-time such as 2026-11-01T00:00:00Z");
  }
  const filter: SessionFilter = { to_us: before.us };
  if (flags.tag !== undefined && flags.tag.length > 0) filter.tags = flags.tag;
  const dryRun = flags["dry-run"] === true;
  const name = flags.project ?? DEFAULT_PROJECT;
  const store = await openCommandStore(config);
  try {
    const project = (await store.listProjects()).find((p) => p.name === name);
    if (project === undefined) throw new ConfigError(`no project is named "${name}" (agentmon projects list)`);
    const removed = await deleteSessions(store, project.id, filter, dryRun);
    if (!dryRun && removed.sessions > 0) {
      await audit(auditContext(store), CLI_ACTOR, "sessions.deleted", {
        projectId: project.id,
        details: { ...removed, before: before.iso, tags: flags.tag ?? [] },
      });
    }
    io.out(
      `${dryRun ? "Would delete" : "Deleted"} ${removed.sessions} sessions and ${removed.events} events of project "${name}" started before ${before.iso}.`,
    );
    return 0;
  } finally {
    await store.close();
  }
}
