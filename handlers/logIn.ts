import { ApiError } from "../domain/errors.ts";
import { personView } from "../domain/people.ts";
import { logIn as check, openBrowserSession } from "../services/people.ts";
import type { Deps, Handler } from "./types.ts";

const ssoOnly = () =>
  new ApiError(401, {
    error: "Invalid credentials",
    message: "This server signs people in through their identity provider only (AGENTMON_SSO_ONLY)",
  });

/** Signs a person in: a new browser session (never one the request brought: no fixation), its cookie and CSRF token. */
export const logIn =
  (deps: Deps): Handler<"logIn"> =>
  async (req, reply) => {
    if (deps.people.ssoOnly) throw ssoOnly();
    const user = await check(deps, deps.people.limits, req.body, req.ip);
    const id = await openBrowserSession(deps, user, req.ip, deps.people.sessionHours);
    const csrf = deps.people.startSession(req, reply, id);
    return personView(user, await deps.store.membershipsOf(user.id), csrf);
  };
