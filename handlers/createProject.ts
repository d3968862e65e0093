import { personActor } from "../services/people.ts";
import { createProject as make, projectView } from "../services/projects.ts";
import { type Deps, type Handler, personOfRequest } from "./types.ts";

/** The owner makes a project. */
export const createProject =
  (deps: Deps): Handler<"createProject"> =>
  async (req) => {
    const project = await make(deps, personActor(personOfRequest(req).user, req.ip), req.body.name);
    return { status: "success" as const, project: projectView(project, null) };
  };
