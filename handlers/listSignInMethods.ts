import type { Deps, Handler } from "./types.ts";

/** The identity providers, and whether passwords are taken (AGENTMON_SSO_ONLY). */
export const listSignInMethods =
  (deps: Deps): Handler<"listSignInMethods"> =>
  async () => ({ status: "success" as const, providers: deps.people.oidc.names, passwords: !deps.people.ssoOnly });
