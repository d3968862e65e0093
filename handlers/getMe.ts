import { personView } from "../domain/people.ts";
import { type Deps, type Handler, personOfRequest } from "./types.ts";

/** The signed-in person, their projects and roles, and a CSRF token for this session. */
export const getMe =
  (deps: Deps): Handler<"getMe"> =>
  async (req, reply) => {
    const { user } = personOfRequest(req);
    return personView(user, await deps.store.membershipsOf(user.id), deps.people.csrfToken(req, reply));
  };
