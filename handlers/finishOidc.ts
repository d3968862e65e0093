import type { OidcFlow } from "../services/oidc.ts";
import { openBrowserSession } from "../services/people.ts";
import type { Deps, Handler } from "./types.ts";

/** The provider's answer: checked, the person found or made, their roles set, a session started. */
export const finishOidc =
  (deps: Deps): Handler<"finishOidc"> =>
  async (req, reply) => {
    const provider = (req.params as { provider: string }).provider;
    const flow = deps.people.oidcFlow(req) as OidcFlow | undefined;
    // The flow is used once, whatever the answer.
    deps.people.clearOidcFlow(reply);
    const url = new URL(req.url, `${deps.publicUrl()}/`);
    const user = await deps.people.oidc.finish(deps, provider, url, flow, req.ip);
    const id = await openBrowserSession(deps, user, req.ip, deps.people.sessionHours);
    deps.people.startSession(req, reply, id);
    return reply.redirect("/", 302);
  };
