/**
 * Single sign-on (issue 26, decision 035) against a real OpenID Connect provider started here
 * (oidc-provider, its development login): authorization code with PKCE through openid-client, a
 * group mapped to a role; an answer with a bad state, nonce, issuer or a code of another client
 * is refused, and so is a flow started in another browser or a code used twice.
 */
import type { LightMyRequestResponse } from "fastify";
import t, { type Test } from "tap";
import { loadConfig } from "../cli/config.ts";
import { build, isError } from "./helper.ts";
import { identityProvider } from "./oidc.helpers.ts";
import { asBrowser, browserOf, PASSWORD, person, setCookies } from "./people.helpers.ts";

const PUBLIC = "http://agentmon.test";

/** The browser's part at the provider: its login form (any name), until it sends us back. */
async function atTheProvider(issuer: string, authorizeUrl: string, login: string): Promise<URL> {
  const jar = new Map<string, string>();
  const go = async (url: string, init: RequestInit = {}) => {
    const headers = {
      ...(init.headers as Record<string, string>),
      cookie: [...jar].map(([k, v]) => `${k}=${v}`).join("; "),
    };
    const res = await fetch(new URL(url, issuer), { ...init, headers, redirect: "manual" });
    for (const line of res.headers.getSetCookie()) {
      const [pair = ""] = line.split(";");
      jar.set(pair.slice(0, pair.indexOf("=")), pair.slice(pair.indexOf("=") + 1));
    }
    return res;
  };
  let res = await go(authorizeUrl);
  for (let step = 0; step < 10; step++) {
    const location = res.headers.get("location");
    if (location?.startsWith(PUBLIC)) return new URL(location);
    if (location) {
      res = await go(location);
      continue;
    }
    const html = await res.text();
    const action = /action="([^"]+)"/.exec(html)?.[1];
    if (!action) throw new Error(`the provider answered ${res.status} without a form`);
    const body = html.includes('name="login"') ? `prompt=login&login=${login}&password=x` : "prompt=consent";
    res = await go(action, { method: "POST", headers: { "content-type": "application/x-www-form-urlencoded" }, body });
  }
  throw new Error("the provider never sent the browser back");
}

async function setUp(t: Test, options: { ssoOnly?: boolean } = {}) {
  const { issuer, providers } = await identityProvider(t, { publicUrl: PUBLIC });
  const api = await build(t, { publicUrl: PUBLIC, oidcProviders: providers, ...options });
  /** Starts a sign-in at provider `id`: the provider's URL and the flow's cookie. */
  const start = async (id = "corp") => {
    const res = await api.inject({ method: "GET", url: `/v2/auth/oidc/${id}/start` });
    if (res.statusCode !== 302) throw new Error(`start answered ${res.statusCode}: ${res.body}`);
    const cookie = setCookies(res).get("agentmon_oidc");
    return {
      location: String(res.headers.location),
      cookie: `agentmon_oidc=${cookie?.value}`,
      attributes: cookie?.attributes ?? [],
    };
  };
  const callback = (url: URL, cookie?: string): Promise<LightMyRequestResponse> =>
    api.inject({ method: "GET", url: `${url.pathname}${url.search}`, headers: cookie ? { cookie } : {} });
  return { api, issuer, start, callback };
}

t.test("SSO: code + PKCE with the real provider; the group eng becomes editor of default", async (t) => {
  const { api, issuer, start, callback } = await setUp(t);
  const flow = await start();
  t.match(flow.location, new RegExp(`^${issuer}/auth\\?`), "to the provider");
  const sent = new URL(flow.location);
  t.equal(sent.searchParams.get("code_challenge_method"), "S256", "PKCE");
  t.ok(sent.searchParams.get("state") && sent.searchParams.get("nonce"), "a state and a nonce");
  t.same(
    flow.attributes.sort(),
    ["HttpOnly", "Max-Age=600", "Path=/v2/auth/oidc/", "SameSite=Lax"],
    "the flow's cookie",
  );
  const back = await atTheProvider(issuer, flow.location, "sam");
  const res = await callback(back, flow.cookie);
  t.equal(res.statusCode, 302, res.body);
  t.equal(res.headers.location, "/");
  const browser = { ...browserOf({ ...res, json: () => ({ csrf_token: "" }) } as unknown as LightMyRequestResponse) };
  const me = await asBrowser(api, browser, "GET", "/v2/auth/me");
  t.equal(me.statusCode, 200, me.body);
  t.equal(me.json().user.email, "sam@corp.example", "the person, made from the provider's email");
  t.same(me.json().memberships, [{ project: "default", role: "editor" }], "the group's role");
  const trail = await api.store.listAudit({ limit: 10 });
  t.same(trail.map((r) => [r.action, r.actor]).reverse(), [
    ["user.created", me.json().user.id],
    ["member.added", "oidc:corp"],
  ]);
  const replay = await callback(back, flow.cookie);
  isError(t, replay, 400, "Sign-in refused"); // the same code and flow again
});

t.test("attack: a bad state, nonce or issuer, a code of another client, or no flow cookie: refused", async (t) => {
  const { api, issuer, start, callback } = await setUp(t);
  const refused = async (what: string, url: URL, cookie: string | undefined, why: RegExp) => {
    const res = await callback(url, cookie);
    t.match(isError(t, res, 400, "Sign-in refused").message, why, `${what}: the reason said`);
    t.notOk(setCookies(res).has("agentmon_session"), `${what}: no session`);
  };

  let flow = await start();
  let back = await atTheProvider(issuer, flow.location, "eve");
  const badState = new URL(back);
  badState.searchParams.set("state", "not-the-state");
  await refused("state", badState, flow.cookie, /unexpected "state" response parameter value/);

  flow = await start();
  back = await atTheProvider(issuer, flow.location, "eve");
  const badIssuer = new URL(back);
  badIssuer.searchParams.set("iss", "http://evil.example");
  await refused("issuer", badIssuer, flow.cookie, /unexpected "iss" \(issuer\) response parameter value/);

  flow = await start();
  back = await atTheProvider(issuer, flow.location, "eve");
  await refused(
    "no flow cookie (started in another browser)",
    back,
    undefined,
    /no sign-in was started from this browser/,
  );

  // The nonce: the flow's cookie re-signed with the right state and verifier but another nonce
  // (only the server can sign it; this proves the ID token's nonce is checked, not just the cookie).
  flow = await start();
  back = await atTheProvider(issuer, flow.location, "eve");
  const raw = decodeURIComponent(flow.cookie.slice("agentmon_oidc=".length));
  const value = JSON.parse(api.app.unsignCookie(raw).value ?? "{}");
  const forged = api.app.signCookie(JSON.stringify({ ...value, nonce: "another-nonce" }));
  await refused("nonce", back, `agentmon_oidc=${encodeURIComponent(forged)}`, /nonce/);

  // The audience: a code the provider issued to agentmon, delivered to the callback of another
  // client (with a flow of the same secrets): that client cannot redeem it.
  flow = await start();
  back = await atTheProvider(issuer, flow.location, "eve");
  const other = new URL(back.href.replace("/corp/callback", "/corp-other/callback"));
  const flowValue = JSON.parse(api.app.unsignCookie(decodeURIComponent(flow.cookie.slice(14))).value ?? "{}");
  const otherCookie = api.app.signCookie(JSON.stringify({ ...flowValue, provider: "corp-other" }));
  await refused("audience", other, `agentmon_oidc=${encodeURIComponent(otherCookie)}`, /invalid_grant/);

  t.equal(await api.store.userByEmail("eve@corp.example"), undefined, "nobody was made");
  isError(t, await api.inject({ method: "GET", url: "/v2/auth/oidc/nope/start" }), 404, "Not found");
});

t.test("SSO only: passwords are refused; the provider still signs people in", async (t) => {
  const { api, issuer, start, callback } = await setUp(t, { ssoOnly: true });
  const methods = await api.inject({ method: "GET", url: "/v2/auth/providers" });
  t.same(methods.json(), { status: "success", providers: ["corp", "corp-other"], passwords: false });
  await person(api.store, "ann@example.com");
  isError(
    t,
    await api.post("/v2/auth/login", { email: "ann@example.com", password: PASSWORD }),
    401,
    "Invalid credentials",
  );
  const flow = await start();
  const res = await callback(await atTheProvider(issuer, flow.location, "ann"), flow.cookie);
  t.equal(res.statusCode, 302, res.body);
});

t.test("AGENTMON_OIDC and AGENTMON_SSO_ONLY are read and checked at start", async (t) => {
  const one = { id: "corp", issuer: "https://id.example", client_id: "a", client_secret: "s" };
  const config = loadConfig(
    { AGENTMON_OIDC: JSON.stringify([{ ...one, roles: [{ group: "eng", project: "default", role: "editor" }] }]) },
    {},
  );
  t.equal(config.oidcProviders?.[0]?.id, "corp");
  t.equal(config.ssoOnly, false);
  t.equal(loadConfig({}, { "sso-only": "true" }).ssoOnly, true, "a flag as well");
  for (const bad of [
    "[{}]",
    "not json",
    JSON.stringify([{ ...one, id: "a b" }]),
    JSON.stringify([{ ...one, roles: [{ group: "g", project: "p", role: "boss" }] }]),
  ]) {
    t.throws(() => loadConfig({ AGENTMON_OIDC: bad }, {}), /AGENTMON_OIDC/, bad);
  }
  t.throws(() => loadConfig({ AGENTMON_SSO_ONLY: "yes" }, {}), /AGENTMON_SSO_ONLY must be true or false/);
});
