/**
 * Browser sessions (issue 26, decision 035): sign-in, the cookie's attributes, logout, logout
 * everywhere, disabling, and the attacks: forged and replayed cookies, CSRF from another origin,
 * session fixation, password brute force.
 */
import t from "tap";
import { hashToken } from "../domain/people.ts";
import { ownerLinkIfNoOne } from "../services/people.ts";
import { build, isError } from "./helper.ts";
import { asBrowser, browserOf, PASSWORD, person, setCookies, signIn } from "./people.helpers.ts";

t.test("the first start's owner link makes the owner, once; the answer signs them in", async (t) => {
  const api = await build(t);
  const context = { store: api.store, now: Date.now, publicUrl: () => "http://agentmon.test" };
  const made = await ownerLinkIfNoOne(context);
  t.ok(made, "nobody has an account yet: a link");
  if (!made) return;
  t.match(
    made.link,
    /^http:\/\/agentmon\.test\/ui\/signup\.html#owner_[A-Za-z0-9_-]{43}$/,
    "the token in the fragment",
  );
  const body = { token: made.token, email: " Owner@Example.COM ", name: "Owner", password: PASSWORD };
  const res = await api.post("/v2/auth/signup", body);
  t.equal(res.statusCode, 200, res.body);
  const answer = res.json();
  t.equal(answer.user.email, "owner@example.com", "emails are kept lower-cased");
  t.equal(answer.user.owner, true);
  const cookie = setCookies(res).get("agentmon_session");
  t.ok(cookie, "a session cookie");
  t.same(
    cookie?.attributes.map((a) => a.toLowerCase()).sort(),
    ["httponly", "path=/", "samesite=strict"],
    "HttpOnly, SameSite=Strict, and not Secure over plain HTTP",
  );
  const me = await asBrowser(api, browserOf(res), "GET", "/v2/auth/me");
  t.equal(me.statusCode, 200, me.body);
  t.equal(me.json().user.email, "owner@example.com");

  const again = await api.post("/v2/auth/signup", { ...body, email: "second@example.com" });
  isError(t, again, 400, "Invalid link");
  t.equal(await ownerLinkIfNoOne(context), undefined, "no owner link once someone has an account");
});

t.test("the cookie is Secure when the request came over TLS (a trusted proxy says so)", async (t) => {
  const api = await build(t, { trustProxy: true });
  await person(api.store, "ann@example.com");
  const res = await api.post(
    "/v2/auth/login",
    { email: "ann@example.com", password: PASSWORD },
    {
      "x-forwarded-proto": "https",
    },
  );
  t.equal(res.statusCode, 200, res.body);
  t.ok(setCookies(res).get("agentmon_session")?.attributes.includes("Secure"));
});

t.test(
  "sign-in: a wrong password and an unknown email get the same 401; a disabled person cannot sign in",
  async (t) => {
    const api = await build(t);
    const ann = await person(api.store, "ann@example.com");
    const wrong = await api.post("/v2/auth/login", { email: "ann@example.com", password: "not the password" });
    const unknown = await api.post("/v2/auth/login", { email: "nobody@example.com", password: PASSWORD });
    t.strictSame(isError(t, wrong, 401, "Invalid credentials"), unknown.json(), "the same answer");
    t.equal(unknown.statusCode, 401);
    t.notOk(wrong.headers["set-cookie"], "no cookie");
    await api.store.setUserDisabled(ann.id, new Date().toISOString());
    isError(t, await api.post("/v2/auth/login", { email: "ann@example.com", password: PASSWORD }), 401);
    isError(t, await api.post("/v2/auth/login", { email: "ann@example.com" }), 400);
  },
);

t.test("attack: forged, tampered and replayed cookies are refused", async (t) => {
  const api = await build(t);
  await person(api.store, "ann@example.com");
  const browser = await signIn(api, "ann@example.com");
  const me = (cookie: string) => api.inject({ method: "GET", url: "/v2/auth/me", headers: { cookie } });
  t.equal((await me(browser.cookie)).statusCode, 200);
  const [id = "", signature = ""] = decodeURIComponent(browser.session).split(/\.(?=[^.]*$)/);
  isError(t, await me(`agentmon_session=${id}`), 401, "Not signed in");
  const flipped = `${id.slice(0, -1)}${id.endsWith("A") ? "B" : "A"}.${signature}`;
  isError(t, await me(`agentmon_session=${encodeURIComponent(flipped)}`), 401, "Not signed in");
  isError(t, await me("agentmon_session=made-up.signature"), 401, "Not signed in");
  isError(t, await api.inject({ method: "GET", url: "/v2/auth/me" }), 401, "Not signed in");
  t.ok(await api.store.browserSession(hashToken(id), new Date().toISOString()), "the store keeps only the id's hash");

  const out = await asBrowser(api, browser, "POST", "/v2/auth/logout");
  t.equal(out.statusCode, 200, out.body);
  t.ok(
    setCookies(out)
      .get("agentmon_session")
      ?.attributes.some((a) => /^Expires=Thu, 01 Jan 1970/.test(a)),
    "cleared",
  );
  isError(t, await me(browser.cookie), 401, "Not signed in");
});

t.test("logout everywhere and disabling a person end every session of theirs at once", async (t) => {
  const api = await build(t);
  const ann = await person(api.store, "ann@example.com");
  await person(api.store, "bob@example.com");
  const laptop = await signIn(api, "ann@example.com");
  const phone = await signIn(api, "ann@example.com");
  const bob = await signIn(api, "bob@example.com");
  t.equal((await asBrowser(api, laptop, "POST", "/v2/auth/logout_everywhere")).statusCode, 200);
  isError(t, await asBrowser(api, phone, "GET", "/v2/auth/me"), 401, "Not signed in");
  t.equal((await asBrowser(api, bob, "GET", "/v2/auth/me")).statusCode, 200, "another person's session stays");

  const again = await signIn(api, "ann@example.com");
  await api.store.setUserDisabled(ann.id, new Date().toISOString());
  isError(t, await asBrowser(api, again, "GET", "/v2/auth/me"), 401, "Not signed in"); // disabled: refused at the next request
});

t.test("attack: CSRF — a change without the session's token, or from another origin, is refused", async (t) => {
  const api = await build(t);
  await person(api.store, "ann@example.com");
  await person(api.store, "eve@example.com");
  const ann = await signIn(api, "ann@example.com");
  const eve = await signIn(api, "eve@example.com");
  isError(t, await asBrowser(api, ann, "POST", "/v2/auth/logout", { csrf: null }), 403, "Forbidden");
  isError(t, await asBrowser(api, ann, "POST", "/v2/auth/logout", { csrf: "forged" }), 403, "Forbidden");
  isError(t, await asBrowser(api, ann, "POST", "/v2/auth/logout", { csrf: eve.csrf }), 403, "Forbidden"); // another session's token
  const withEveSecret = { ...ann, cookie: ann.cookie.replace(/agentmon_csrf=[^;]*/, eve.cookie.split("; ")[1] ?? "") };
  isError(t, await asBrowser(api, withEveSecret, "POST", "/v2/auth/logout", { csrf: eve.csrf }), 403, "Forbidden"); // another's secret and token
  const fromElsewhere = { headers: { origin: "https://evil.example" } };
  isError(t, await asBrowser(api, ann, "POST", "/v2/auth/logout", fromElsewhere), 403, "Forbidden"); // another origin, even with the token
  t.equal((await asBrowser(api, ann, "GET", "/v2/auth/me")).statusCode, 200, "still signed in: nothing happened");
  const own = { headers: { origin: "http://localhost:80" } };
  const ok = await asBrowser(api, ann, "POST", "/v2/auth/logout", own);
  t.equal(ok.statusCode, 200, `the token, from this origin: ${ok.body}`);
});

t.test("attack: session fixation — sign-in never keeps a session id the browser brought", async (t) => {
  const api = await build(t);
  await person(api.store, "eve@example.com");
  await person(api.store, "ann@example.com");
  const eve = await signIn(api, "eve@example.com");
  // Eve plants her own valid cookie in Ann's browser, then Ann signs in.
  const res = await api.post(
    "/v2/auth/login",
    { email: "ann@example.com", password: PASSWORD },
    { cookie: eve.cookie },
  );
  t.equal(res.statusCode, 200);
  const ann = browserOf(res);
  t.not(ann.session, eve.session, "a new session id");
  t.equal(
    (await asBrowser(api, eve, "GET", "/v2/auth/me")).json().user.email,
    "eve@example.com",
    "Eve's cookie is still only Eve's",
  );
  t.equal((await asBrowser(api, ann, "GET", "/v2/auth/me")).json().user.email, "ann@example.com");
});

t.test(
  "attack: brute force — failed sign-ins are throttled per account and per address, 429 with Retry-After, audited once",
  async (t) => {
    const api = await build(t, { loginFailLimit: 3, loginFailWindowMs: 60_000 });
    await person(api.store, "ann@example.com");
    await person(api.store, "bob@example.com");
    const attempt = (email: string, password: string, address: string) =>
      api.post("/v2/auth/login", { email, password }, {}, address);
    // Per account: three addresses, one failure each.
    for (const address of ["10.0.0.1", "10.0.0.2", "10.0.0.3"]) {
      isError(t, await attempt("ann@example.com", "wrong password!", address), 401);
    }
    const limited = await attempt("ann@example.com", PASSWORD, "10.0.0.4");
    isError(t, limited, 429, "Too many requests");
    t.ok(Number(limited.headers["retry-after"]) >= 1, "Retry-After");
    t.equal((await attempt("bob@example.com", PASSWORD, "10.0.0.4")).statusCode, 200, "another account is not held");
    // Per address: three accounts, one address.
    for (const email of ["x@example.com", "y@example.com", "z@example.com"]) {
      isError(t, await attempt(email, "wrong password!", "10.9.9.9"), 401);
    }
    isError(t, await attempt("bob@example.com", PASSWORD, "10.9.9.9"), 429, "Too many requests");
    const audit = await api.store.listAudit({ limit: 10 });
    t.same(
      audit.map((r) => [r.action, r.target, r.address]),
      [
        ["login.throttled", "z@example.com", "10.9.9.9"],
        ["login.throttled", "ann@example.com", "10.0.0.3"],
      ],
      "the failure that reached a limit is audited, once",
    );
  },
);
