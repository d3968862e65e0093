import { projectView, setRetention } from "../services/projects.ts";
import { actorOf, type Deps, type Handler, projectIdOf } from "./types.ts";

/** Sets the project's retention: days, 0 for ever, null for the server's default. */
export const setProjectRetention =
  (deps: Deps): Handler<"setProjectRetention"> =>
  async (req) => {
    const project = await setRetention(deps, actorOf(req), projectIdOf(req), req.body.days);
    return { status: "success" as const, project: projectView(project, req.person?.role ?? null) };
  };
