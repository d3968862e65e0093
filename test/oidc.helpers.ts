/**
 * The identity provider of the single sign-on tests (issue 26, decision 035): a real OpenID
 * Connect provider (oidc-provider, its development login: any login name, any password) on a
 * port of its own, closed when the test ends. Shared by test/people.oidc.test.ts (the browser's
 * part driven over HTTP) and test/browser.sso.test.ts (driven in Chromium).
 */
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import Provider from "oidc-provider";
import type { Test } from "tap";
import type { OidcProvider } from "../services/oidc.ts";

export const CLIENT_SECRET = "a-client-secret-of-at-least-32-characters";

export interface IdentityProvider {
  /** The provider's issuer URL (http://<host>:<port>). */
  issuer: string;
  /** agentmon's AGENTMON_OIDC for it: `corp` (group eng → editor of default) and `corp-other`, another client. */
  providers: OidcProvider[];
}

/**
 * Starts the provider: two clients (agentmon's, `corp`, and another app's, `corp-other`), whose
 * redirect URIs are agentmon's callbacks under `publicUrl`; every person is `<login>@corp.example`,
 * of the groups `groups` gives (default: eng). `publicUrl` may be a function, read at the first
 * request, for an agentmon that listens on port 0 after this has started. `host` is the address
 * it listens on (default 127.0.0.1; another loopback address makes it another site for a browser).
 */
export async function identityProvider(
  t: Test,
  options: { publicUrl: string | (() => string); host?: string; groups?: (login: string) => string[] },
): Promise<IdentityProvider> {
  const host = options.host ?? "127.0.0.1";
  const groups = options.groups ?? (() => ["eng"]);
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, host, resolve));
  t.teardown(() => new Promise((resolve) => server.close(resolve)));
  const issuer = `http://${host}:${(server.address() as { port: number }).port}`;

  let handle: ((req: IncomingMessage, res: ServerResponse) => void) | undefined;
  const make = () => {
    const publicUrl = typeof options.publicUrl === "string" ? options.publicUrl : options.publicUrl();
    const redirect = (id: string) => `${publicUrl}/v2/auth/oidc/${id}/callback`;
    const provider = new Provider(issuer, {
      clients: [
        { client_id: "agentmon", client_secret: CLIENT_SECRET, redirect_uris: [redirect("corp")] },
        { client_id: "other-app", client_secret: CLIENT_SECRET, redirect_uris: [redirect("corp-other")] },
      ],
      async findAccount(_ctx: unknown, sub: string) {
        return {
          accountId: sub,
          claims: async () => ({ sub, email: `${sub}@corp.example`, name: sub, groups: groups(sub) }),
        };
      },
      claims: { openid: ["sub"], email: ["email"], profile: ["name", "groups"] },
      features: { devInteractions: { enabled: true } },
    });
    return provider.callback();
  };
  server.on("request", (req, res) => {
    handle ??= make();
    handle(req, res);
  });

  const providers: OidcProvider[] = [
    {
      id: "corp",
      issuer,
      client_id: "agentmon",
      client_secret: CLIENT_SECRET,
      insecure: true,
      roles: [{ group: "eng", project: "default", role: "editor" }],
    },
    { id: "corp-other", issuer, client_id: "other-app", client_secret: CLIENT_SECRET, insecure: true },
  ];
  return { issuer, providers };
}
