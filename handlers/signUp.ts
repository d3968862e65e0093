import { personView } from "../domain/people.ts";
import { signUp as make, openBrowserSession } from "../services/people.ts";
import type { Deps, Handler } from "./types.ts";

/** Makes the account of an owner or invitation link, and signs it in. */
export const signUp =
  (deps: Deps): Handler<"signUp"> =>
  async (req, reply) => {
    const user = await make(deps, req.body, req.ip);
    const id = await openBrowserSession(deps, user, req.ip, deps.people.sessionHours);
    const csrf = deps.people.startSession(req, reply, id);
    return personView(user, await deps.store.membershipsOf(user.id), csrf);
  };
