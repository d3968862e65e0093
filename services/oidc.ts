/**
 * Single sign-on (issue 26, decision 035): OpenID Connect, authorization code with PKCE, through
 * openid-client. Providers come from configuration (AGENTMON_OIDC); a claim (`groups` by default)
 * maps to roles per project. openid-client checks the state, the nonce, the issuer (and the `iss`
 * of the answer, RFC 9207), the audience and the signature; any failure is a 400 and no session.
 */
import type * as Client from "openid-client";
import type { Store } from "../db/store.ts";
import { ApiError, notFound } from "../domain/errors.ts";
import { isEmailShape, normalEmail, type Role, type UserRecord } from "../domain/people.ts";
import { audit } from "./people.ts";

/** openid-client, loaded by the first sign-in through a provider, not at start (decision 034). */
const openidClient = () => import("openid-client");

export interface OidcProvider {
  /** The name in the URLs: /v2/auth/oidc/<id>/start. */
  id: string;
  issuer: string;
  client_id: string;
  client_secret: string;
  /** The claim (of the ID token or userinfo) that lists the person's groups; default `groups`. */
  groups_claim?: string;
  /** Each group's role in a project. */
  roles?: { group: string; project: string; role: Role }[];
  /** Allow an http:// issuer (tests, a provider on localhost). */
  insecure?: boolean;
}

/** What the start keeps for the callback (in a signed, HttpOnly cookie): never in a URL. */
export interface OidcFlow {
  provider: string;
  state: string;
  nonce: string;
  verifier: string;
}

const refused = (why: string) =>
  new ApiError(400, { error: "Sign-in refused", message: `The identity provider's answer was refused: ${why}` });

/**
 * What went wrong, in words: openid-client's message ("invalid response encountered") with the
 * check that failed (its cause's: 'unexpected "state" response parameter value'), or the
 * provider's OAuth error ("invalid_grant: grant request is invalid").
 */
function reasonOf(error: unknown): string {
  if (!(error instanceof Error)) return String(error);
  const { cause, error: code, error_description: description } = error as Error & Record<string, unknown>;
  let detail = cause instanceof Error ? cause.message : "";
  if (typeof code === "string") detail = typeof description === "string" ? `${code}: ${description}` : code;
  return detail === "" || detail === error.message ? error.message : `${error.message} (${detail})`;
}

export class Oidc {
  readonly #providers: Map<string, OidcProvider>;
  readonly #configs = new Map<string, Promise<Client.Configuration>>();

  constructor(providers: OidcProvider[]) {
    this.#providers = new Map(providers.map((p) => [p.id, p]));
  }

  get names() {
    return [...this.#providers.keys()];
  }

  #provider(id: string) {
    const provider = this.#providers.get(id);
    if (!provider) throw notFound(`No identity provider ${id}`);
    return provider;
  }

  /** The provider's discovered configuration, fetched once (again after a failure). */
  #config(provider: OidcProvider) {
    let config = this.#configs.get(provider.id);
    if (!config) {
      config = openidClient().then((client) =>
        client.discovery(
          new URL(provider.issuer),
          provider.client_id,
          provider.client_secret,
          undefined,
          provider.insecure ? { execute: [client.allowInsecureRequests] } : undefined,
        ),
      );
      config.catch(() => this.#configs.delete(provider.id));
      this.#configs.set(provider.id, config);
    }
    return config;
  }

  /** Where to send the browser, and what the callback must find in its cookie. */
  async start(id: string, redirectUri: string): Promise<{ url: string; flow: OidcFlow }> {
    const provider = this.#provider(id);
    const config = await this.#config(provider);
    const client = await openidClient();
    const flow = {
      provider: id,
      state: client.randomState(),
      nonce: client.randomNonce(),
      verifier: client.randomPKCECodeVerifier(),
    };
    const url = client.buildAuthorizationUrl(config, {
      redirect_uri: redirectUri,
      scope: "openid email profile",
      code_challenge: await client.calculatePKCECodeChallenge(flow.verifier),
      code_challenge_method: "S256",
      state: flow.state,
      nonce: flow.nonce,
    });
    return { url: url.href, flow };
  }

  /**
   * The callback: the code exchanged (state, nonce, PKCE, issuer and audience checked by
   * openid-client), the person found by email or made, their roles set from the groups claim.
   */
  async finish(
    context: { store: Store; now(): number; publicUrl(): string },
    id: string,
    callbackUrl: URL,
    flow: OidcFlow | undefined,
    address: string,
  ): Promise<UserRecord> {
    const provider = this.#provider(id);
    if (!flow || flow.provider !== id) throw refused("no sign-in was started from this browser");
    const config = await this.#config(provider);
    const client = await openidClient();
    let claims: Record<string, unknown>;
    try {
      const tokens = await client.authorizationCodeGrant(config, callbackUrl, {
        pkceCodeVerifier: flow.verifier,
        expectedState: flow.state,
        expectedNonce: flow.nonce,
        idTokenExpected: true,
      });
      const idClaims: Record<string, unknown> = tokens.claims() ?? {};
      const sub = String(idClaims.sub ?? "");
      const info = await client.fetchUserInfo(config, tokens.access_token, sub);
      claims = { ...info, ...idClaims };
    } catch (error) {
      throw refused(reasonOf(error));
    }
    const email = normalEmail(String(claims.email ?? ""));
    if (!isEmailShape(email)) throw refused("it names no email address");
    const now = new Date(context.now()).toISOString();
    let user: UserRecord | undefined = await context.store.userByEmail(email);
    if (!user) {
      user = await context.store.createUser({
        email,
        name: String(claims.name ?? email),
        password_hash: null,
        owner: false,
        created_at: now,
      });
      await audit(context, { id: user.id, name: email, address }, "user.created", {
        target: email,
        details: { through: `oidc:${id}` },
      });
    }
    if (user.disabled_at !== null) throw refused("this person is disabled");
    const groups = claims[provider.groups_claim ?? "groups"];
    const list = Array.isArray(groups) ? groups.map(String) : [];
    const projects = await context.store.listProjects();
    for (const mapping of provider.roles ?? []) {
      if (!list.includes(mapping.group)) continue;
      const project = projects.find((p) => p.name === mapping.project);
      if (!project) continue;
      const before = await context.store.setMember(project.id, user.id, mapping.role, now);
      if (before !== mapping.role) {
        await audit(
          context,
          { id: `oidc:${id}`, name: `identity provider ${id}`, address },
          before ? "member.role_changed" : "member.added",
          {
            projectId: project.id,
            target: email,
            details: { role: mapping.role, before: before ?? null, group: mapping.group },
          },
        );
      }
    }
    const { password_hash: _, ...record } = user as UserRecord & { password_hash?: unknown };
    return record;
  }
}
