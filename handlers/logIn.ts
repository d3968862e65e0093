import { personView } from "../domain/people.ts";
import { logIn as check, openBrowserSession } from "../services/people.ts";
import type { Deps, Handler } from "./types.ts";

/** Signs a person in: a new browser session (never one the request brought: no fixation), its cookie and CSRF token. */
export const logIn =
  (deps: Deps): Handler<"logIn"> =>
  async (req, reply) => {
    const user = await check(deps, deps.people.limits, req.body, req.ip);
    const id = await openBrowserSession(deps, user, req.ip, deps.people.sessionHours);
    const csrf = deps.people.startSession(req, reply, id);
    return personView(user, await deps.store.membershipsOf(user.id), csrf);
  };
