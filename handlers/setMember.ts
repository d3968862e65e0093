import { setMember as set } from "../services/projects.ts";
import { actorOf, type Deps, type Handler, projectIdOf } from "./types.ts";

/** Adds a person to the project, or changes their role. */
export const setMember =
  (deps: Deps): Handler<"setMember"> =>
  async (req) => {
    await set(deps, actorOf(req), projectIdOf(req), req.params.user_id, req.body.role);
    return { status: "success" as const };
  };
