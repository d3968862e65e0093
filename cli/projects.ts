/** `agentmon projects list|set-retention`: projects and their retention, on either engine. */
import type { ProjectRecord } from "../domain/types.ts";
import { audit, CLI_ACTOR } from "../services/people.ts";
import { type Config, ConfigError, type Output, readDays, USAGE } from "./config.ts";
import { auditContext } from "./keys.ts";
import { openCommandStore } from "./storage.ts";

/** How a project's retention reads, with the server default it falls back on. */
export const describeRetention = (days: number | null) =>
  days === null ? "default (AGENTMON_RETENTION_DAYS)" : days === 0 ? "forever" : `${days} days`;

const describeProject = (p: ProjectRecord) => `${p.name}  retention ${describeRetention(p.retention_days)}`;

/** `<days>`, `forever` (0) or `default` (null). */
function readRetention(value: string | undefined): number | null {
  if (value === undefined || value.trim() === "") {
    throw new ConfigError("projects set-retention needs a project and a number of days, forever or default");
  }
  if (value.trim().toLowerCase() === "default") return null;
  return readDays(value, "the retention") ?? 0;
}

export async function projects(sub: string | undefined, args: string[], config: Config, io: Output) {
  if (sub !== "list" && sub !== "set-retention") {
    io.err(USAGE);
    return 2;
  }
  const days = sub === "set-retention" ? readRetention(args[1]) : undefined;
  const store = await openCommandStore(config);
  try {
    if (sub === "list") {
      const all = await store.listProjects();
      if (all.length === 0) io.out("No projects yet: `agentmon keys create --project NAME` makes one.");
      for (const p of all) io.out(describeProject(p));
      return 0;
    }
    const name = args[0] ?? "";
    const project = await store.setRetention(name, days as number | null);
    if (project === undefined) throw new ConfigError(`no project is named "${name}" (agentmon projects list)`);
    await audit(auditContext(store), CLI_ACTOR, "retention.changed", {
      projectId: project.id,
      details: { retention_days: project.retention_days },
    });
    io.out(`Project "${project.name}": retention ${describeRetention(project.retention_days)}.`);
    return 0;
  } finally {
    await store.close();
  }
}
