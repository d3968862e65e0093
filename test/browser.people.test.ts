/**
 * People in a real browser (issue 26, decision 035), as a new team would: the owner signs up from
 * the first-start link, invites a viewer from the page, the viewer signs up from the invitation,
 * sees project default's sessions and not project other's, cannot delete; the owner disables the
 * viewer, whose open tab's next request is refused and who is asked to sign in again. Screenshots
 * go to docs/screenshots/. Every wait is for a selector or a condition.
 */
import t from "tap";
import { ownerLinkIfNoOne } from "../services/people.ts";
import { chromiumMissing, expectRows, openBrowser, saveScreenshot } from "./browser/page.ts";
import { API_KEY, build, OTHER_PROJECT_KEY } from "./helper.ts";
import { PASSWORD } from "./people.helpers.ts";

t.test(
  "a team in headless Chromium: sign-up link, invitation, viewer, revocation",
  { skip: chromiumMissing },
  async (t) => {
    let base = "";
    const env = await build(t, { publicUrl: () => base });
    base = await env.app.listen({ port: 0, host: "127.0.0.1" });
    for (const [id, key] of [
      ["team-a-1", API_KEY],
      ["team-a-2", API_KEY],
      ["team-b-1", OTHER_PROJECT_KEY],
    ] as const) {
      await env.session(
        id,
        {
          tags: ["people"],
          init_timestamp: `2026-11-20T09:00:0${id.at(-1)}Z`,
          end_state: "Success",
          end_timestamp: "2026-11-20T09:00:30Z",
        },
        key,
      );
    }
    const owner = await ownerLinkIfNoOne({ store: env.store, now: Date.now, publicUrl: () => base });
    if (!owner) throw new Error("no owner link");
    const { browser, page, problems } = await openBrowser(t);

    await t.test("the owner signs up from the first-start link and lands signed in", async (t) => {
      await page.goto(owner.link);
      await page.waitForSelector("#signup");
      t.notMatch(page.url(), /#/, "the token left the address bar");
      await page.fill("#signup-email", "owner@example.com");
      await page.fill("#signup-name", "Olga Owner");
      await page.fill("#signup-password", PASSWORD);
      await saveScreenshot(page, "people-signup.png");
      await page.click("#signup button[type=submit]");
      await page.waitForSelector("#forget-key >> text=/Sign out \\(owner@example.com\\)/");
      t.ok(await page.isHidden("#key-panel"), "no key asked of a signed-in person");
    });

    let invitation = "";
    await t.test("the owner invites a viewer from the page (CSRF token and project sent by the page)", async (t) => {
      const answer = await page.evaluate(async () => {
        const me = (await (await fetch("/v2/auth/me")).json()) as { csrf_token: string };
        const res = await fetch("/v2/people/invitations", {
          method: "POST",
          headers: {
            "Content-Type": "application/json",
            "X-CSRF-Token": me.csrf_token,
            "X-Agentmon-Project": "default",
          },
          body: JSON.stringify({ email: "vera@example.com", role: "viewer" }),
        });
        return { status: res.status, body: (await res.json()) as { link: string } };
      });
      t.equal(answer.status, 200, JSON.stringify(answer.body));
      invitation = answer.body.link;
      const forged = await page.evaluate(async () => {
        const res = await fetch("/v2/people/invitations", {
          method: "POST",
          headers: { "Content-Type": "application/json", "X-Agentmon-Project": "default" },
          body: JSON.stringify({ email: "eve@example.com", role: "admin" }),
        });
        return res.status;
      });
      t.equal(forged, 403, "without the CSRF token: refused");
    });

    const viewerContext = await browser.newContext({ viewport: { width: 1280, height: 800 } });
    const viewer = await viewerContext.newPage();
    viewer.setDefaultTimeout(20_000);
    await t.test("the viewer signs up, sees project default and not other, cannot delete", async (t) => {
      await viewer.goto(invitation);
      await viewer.fill("#signup-email", "vera@example.com");
      await viewer.fill("#signup-name", "Vera Viewer");
      await viewer.fill("#signup-password", PASSWORD);
      await viewer.click("#signup button[type=submit]");
      await viewer.waitForSelector("#forget-key >> text=/Sign out/");
      await viewer.goto(`${base}/sessions`);
      await expectRows(t, viewer, ["team-a-2", "team-a-1"], "project default's sessions, not other's");
      t.same(await viewer.$$eval("#project option", (options) => options.map((o) => o.textContent)), ["default"]);
      await saveScreenshot(viewer, "people-viewer.png");
      const attempt = await viewer.evaluate(async () => {
        const me = (await (await fetch("/v2/auth/me")).json()) as { csrf_token: string };
        const other = await fetch("/v2/sessions", { headers: { "X-Agentmon-Project": "other" } });
        const del = await fetch("/v2/sessions/team-a-1", {
          method: "DELETE",
          headers: { "X-CSRF-Token": me.csrf_token, "X-Agentmon-Project": "default" },
        });
        return { other: other.status, del: del.status, message: ((await del.json()) as { message: string }).message };
      });
      t.equal(attempt.other, 404, "project other does not exist for the viewer");
      t.equal(attempt.del, 403, attempt.message);
    });

    await t.test("the owner disables the viewer: the viewer's open tab is refused at its next request", async (t) => {
      const vera = await env.store.userByEmail("vera@example.com");
      const status = await page.evaluate(async (id) => {
        const me = (await (await fetch("/v2/auth/me")).json()) as { csrf_token: string };
        const res = await fetch(`/v2/people/${id}/disabled`, {
          method: "POST",
          headers: { "Content-Type": "application/json", "X-CSRF-Token": me.csrf_token },
          body: JSON.stringify({ disabled: true }),
        });
        return res.status;
      }, vera?.id);
      t.equal(status, 200);
      const next = await viewer.evaluate(
        async () => (await fetch("/v2/sessions", { headers: { "X-Agentmon-Project": "default" } })).status,
      );
      t.equal(next, 401, "the open tab's next request");
      await viewer.reload();
      await viewer.waitForSelector("#sign-in-form");
      t.ok(await viewer.isHidden("#app"), "nothing shown; asked to sign in");
    });
    await viewerContext.close();
    t.same(problems, [], "no page error and no CSP violation");
  },
);
