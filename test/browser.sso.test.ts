/**
 * Single sign-on in a real browser (issue 26, decision 035), as a new team would: agentmon with
 * AGENTMON_OIDC naming a real OpenID Connect provider (oidc-provider, started by the test on
 * another loopback address, so another site for the browser, as a company's provider is). In
 * headless Chromium the sign-in form offers "Sign in with corp"; the person follows it, signs
 * in and consents on the provider's own pages and comes back signed in, their group eng made
 * editor of project default: they see default's sessions, may delete one, and cannot reach
 * project other. A callback whose state was tampered with is refused with a clear error and
 * leaves no session. Screenshots go to docs/screenshots/. Every wait is for a selector or a
 * condition.
 */
import type { Page } from "playwright-core";
import t from "tap";
import { chromiumMissing, expectRows, openBrowser, saveScreenshot } from "./browser/page.ts";
import { API_KEY, build, OTHER_PROJECT_KEY } from "./helper.ts";
import { identityProvider } from "./oidc.helpers.ts";

/** At the provider's development pages: any login and password, then the consent. */
async function atTheProvider(page: Page, issuer: string, login: string) {
  await page.waitForURL((url) => url.href.startsWith(`${issuer}/interaction/`));
  await page.fill("input[name=login]", login);
  await page.fill("input[name=password]", "any password: the development login takes any");
  await page.click("button[type=submit]");
  await page.waitForSelector("input[name=prompt][value=consent]", { state: "attached" });
  await page.click("button[type=submit]");
}

t.test(
  "a team in headless Chromium: sign in with the company's identity provider, group eng → editor",
  { skip: chromiumMissing },
  async (t) => {
    let base = "";
    const idp = await identityProvider(t, { publicUrl: () => base, host: "127.0.0.2" });
    const env = await build(t, { publicUrl: () => base, oidcProviders: idp.providers });
    base = await env.app.listen({ port: 0, host: "127.0.0.1" });
    for (const [id, key] of [
      ["team-a-1", API_KEY],
      ["team-a-2", API_KEY],
      ["team-b-1", OTHER_PROJECT_KEY],
    ] as const) {
      await env.session(
        id,
        {
          tags: ["sso"],
          init_timestamp: `2026-11-20T09:00:0${id.at(-1)}Z`,
          end_state: "Success",
          end_timestamp: "2026-11-20T09:00:30Z",
        },
        key,
      );
    }
    const { browser, page, problems } = await openBrowser(t);

    await t.test("the sign-in form offers the provider; through its pages and back, signed in", async (t) => {
      await page.goto(`${base}/sessions`);
      const link = await page.waitForSelector('#sign-in-form a.sso-link >> text="Sign in with corp"');
      t.equal(await link.getAttribute("href"), "/v2/auth/oidc/corp/start");
      t.same(
        await page.$$eval("#sign-in-form a.sso-link", (links) => links.map((a) => a.textContent)),
        ["Sign in with corp", "Sign in with corp-other"],
        "a link per provider of AGENTMON_OIDC, in its order",
      );
      await saveScreenshot(page, "people-sso-signin.png");
      await link.click();
      await page.waitForURL((url) => url.href.startsWith(`${idp.issuer}/interaction/`));
      t.match(
        (await page.context().cookies()).find((c) => c.name === "agentmon_oidc"),
        { httpOnly: true, sameSite: "Lax", path: "/v2/auth/oidc/" },
        "at the provider's login page; the flow kept in agentmon's cookie",
      );
      await atTheProvider(page, idp.issuer, "sam");
      await page.waitForSelector("#forget-key >> text=/Sign out \\(sam@corp\\.example\\)/");
      t.equal(page.url(), `${base}/`, "back at agentmon's overview");
      t.ok(await page.isHidden("#key-panel"), "no key and no password asked");
      // The provider is another site (127.0.0.2): the flow's cookie (SameSite=Lax) came back with
      // its top-level redirect, and the session cookie (Strict), set on that cross-site answer,
      // is sent by the page's own requests.
      t.not(new URL(idp.issuer).hostname, new URL(base).hostname, "the provider is another site");
      const cookies = await page.context().cookies();
      const session = cookies.find((c) => c.name === "agentmon_session");
      t.match(session, { httpOnly: true, sameSite: "Strict", path: "/" }, "the session cookie");
      t.notOk(
        cookies.some((c) => c.name === "agentmon_oidc"),
        "the flow's cookie is gone",
      );
      const trail = await env.store.listAudit({ limit: 10 });
      t.same(
        trail.map((r) => [r.action, r.actor, r.target]).reverse(),
        [
          ["user.created", (await env.store.userByEmail("sam@corp.example"))?.id, "sam@corp.example"],
          ["member.added", "oidc:corp", "sam@corp.example"],
        ],
        "the person made from the provider's email, and the group's role, both audited",
      );
    });

    await t.test("as editor of default: its sessions, a delete; project other is not there", async (t) => {
      await page.goto(`${base}/sessions`);
      await expectRows(t, page, ["team-a-2", "team-a-1"], "project default's sessions, not other's");
      t.same(await page.$$eval("#project option", (options) => options.map((o) => o.textContent)), ["default"]);
      await saveScreenshot(page, "people-sso.png");
      const answers = await page.evaluate(async () => {
        const me = (await (await fetch("/v2/auth/me")).json()) as {
          csrf_token: string;
          memberships: { project: string; role: string }[];
        };
        const other = await fetch("/v2/sessions", { headers: { "X-Agentmon-Project": "other" } });
        const otherDelete = await fetch("/v2/sessions/team-b-1", {
          method: "DELETE",
          headers: { "X-CSRF-Token": me.csrf_token, "X-Agentmon-Project": "other" },
        });
        const forged = await fetch("/v2/sessions/team-a-1", {
          method: "DELETE",
          headers: { "X-Agentmon-Project": "default" },
        });
        const del = await fetch("/v2/sessions/team-a-1", {
          method: "DELETE",
          headers: { "X-CSRF-Token": me.csrf_token, "X-Agentmon-Project": "default" },
        });
        return {
          memberships: me.memberships,
          other: other.status,
          otherDelete: otherDelete.status,
          forged: forged.status,
          del: del.status,
        };
      });
      t.same(answers.memberships, [{ project: "default", role: "editor" }], "the group's role");
      t.equal(answers.other, 404, "project other does not exist for them");
      t.equal(answers.otherDelete, 404, "nor does a session of it");
      t.equal(answers.forged, 403, "a delete without the CSRF token: refused");
      t.equal(answers.del, 200, "an editor may delete a session");
      await page.reload();
      await expectRows(t, page, ["team-a-2"], "the deleted session is gone from the list");
      const kept = await env.inject({
        method: "GET",
        url: "/v2/sessions/team-b-1",
        headers: { "x-agentmon-api-key": OTHER_PROJECT_KEY },
      });
      t.equal(kept.statusCode, 200, "project other's session is untouched");
    });

    await t.test("a callback with a tampered state: refused, said plainly, no session", async (t) => {
      const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
      t.teardown(() => context.close());
      const mallory = await context.newPage();
      mallory.setDefaultTimeout(20_000);
      // The provider's answer is stopped on its way to agentmon (it is a hop of a redirect, which
      // Playwright's route() does not see: Chromium's own Fetch interception does), then opened
      // with another state.
      const cdp = await context.newCDPSession(mallory);
      const answer = new Promise<string>((resolve) => {
        cdp.on("Fetch.requestPaused", (paused) => {
          resolve(paused.request.url);
          void cdp.send("Fetch.failRequest", { requestId: paused.requestId, errorReason: "Aborted" });
        });
      });
      await cdp.send("Fetch.enable", { patterns: [{ urlPattern: `${base}/v2/auth/oidc/corp/callback?*` }] });
      await mallory.goto(`${base}/`);
      await mallory.click('#sign-in-form a.sso-link >> text="Sign in with corp"');
      await atTheProvider(mallory, idp.issuer, "mallory");
      const caught = await answer;
      await cdp.send("Fetch.disable");
      const tampered = new URL(caught);
      t.ok(tampered.searchParams.get("code"), "the provider's answer carried a code");
      tampered.searchParams.set("state", "not-the-state");
      const res = await mallory.goto(tampered.href);
      t.equal(res?.status(), 400);
      const said = await mallory.textContent("body");
      t.match(said, /Sign-in refused/, "the page says the sign-in was refused");
      t.match(said, /unexpected \\"state\\" response parameter value/, "and why");
      const cookies = await context.cookies();
      t.notOk(
        cookies.some((c) => c.name === "agentmon_session"),
        "no session cookie",
      );
      t.notOk(
        cookies.some((c) => c.name === "agentmon_oidc"),
        "the flow's cookie is gone: the flow was used",
      );
      t.equal(await env.store.userByEmail("mallory@corp.example"), undefined, "nobody was made");
      // The flow was used up by the refused answer: the untouched one cannot finish it now.
      const again = await mallory.goto(caught);
      t.equal(again?.status(), 400, "the genuine answer after it: refused too (the flow is used once)");
      t.notOk(
        (await context.cookies(base)).some((c) => c.name === "agentmon_session"),
        "still no session",
      );
    });

    t.same(problems, [], "no page error and no CSP violation");
  },
);
