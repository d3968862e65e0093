import type { Deps, Handler } from "./types.ts";

/** To the identity provider, the flow's secrets kept in this browser's signed cookie. */
export const startOidc =
  (deps: Deps): Handler<"startOidc"> =>
  async (req, reply) => {
    const provider = (req.params as { provider: string }).provider;
    const redirect = `${deps.publicUrl()}/v2/auth/oidc/${encodeURIComponent(provider)}/callback`;
    const { url, flow } = await deps.people.oidc.start(provider, redirect);
    deps.people.setOidcFlow(reply, flow);
    return reply.redirect(url, 302);
  };
