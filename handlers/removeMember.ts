import { setMember } from "../services/projects.ts";
import { actorOf, type Deps, type Handler, projectIdOf } from "./types.ts";

/** Removes a person from the project (their account stays). */
export const removeMember =
  (deps: Deps): Handler<"removeMember"> =>
  async (req) => {
    await setMember(deps, actorOf(req), projectIdOf(req), req.params.user_id, null);
    return { status: "success" as const };
  };
