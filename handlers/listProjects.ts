import { projectView } from "../services/projects.ts";
import { type Deps, type Handler, personOfRequest } from "./types.ts";

/** The projects the person may open: every one for the owner, else their memberships. */
export const listProjects =
  (deps: Deps): Handler<"listProjects"> =>
  async (req) => {
    const { user } = personOfRequest(req);
    const roles = new Map((await deps.store.membershipsOf(user.id)).map((m) => [m.project_id, m.role]));
    const projects = (await deps.store.listProjects()).filter((p) => user.owner || roles.has(p.id));
    return { status: "success" as const, projects: projects.map((p) => projectView(p, roles.get(p.id) ?? null)) };
  };
