/**
 * The project settings and audit pages in a real browser (issue 26, decision 035): the owner
 * signs up, makes a key on the settings page (shown once), revokes it, invites a viewer, sets the
 * retention; the viewer sees the settings without a write control; the owner changes the
 * viewer's role; the audit page lists those acts, newest first. Screenshots go to
 * docs/screenshots/. Every wait is for a selector or a condition.
 */
import t from "tap";
import { ownerLinkIfNoOne } from "../services/people.ts";
import { chromiumMissing, openBrowser, saveScreenshot } from "./browser/page.ts";
import { API_KEY, build } from "./helper.ts";
import { PASSWORD } from "./people.helpers.ts";

t.test("project settings and the audit trail in headless Chromium", { skip: chromiumMissing }, async (t) => {
  let base = "";
  const env = await build(t, { publicUrl: () => base });
  base = await env.app.listen({ port: 0, host: "127.0.0.1" });
  const owner = await ownerLinkIfNoOne({ store: env.store, now: Date.now, publicUrl: () => base });
  if (!owner) throw new Error("no owner link");
  const { browser, page, problems } = await openBrowser(t);
  const status = async (key: string) =>
    (await env.app.inject({ method: "GET", url: "/v2/sessions", headers: { "x-agentmon-api-key": key } })).statusCode;

  await t.test("the owner signs up; the top bar links the settings and the audit trail", async (t) => {
    await page.goto(owner.link);
    await page.fill("#signup-email", "owner@example.com");
    await page.fill("#signup-name", "Olga Owner");
    await page.fill("#signup-password", PASSWORD);
    await page.click("#signup button[type=submit]");
    await page.waitForSelector("#forget-key >> text=/Sign out/");
    await page.goto(`${base}/sessions`);
    await page.waitForSelector("a.person-link[href='/ui/settings.html']:visible");
    t.ok(await page.isVisible("a.person-link[href='/ui/audit.html']"), "the audit link too");
    await page.click("a.person-link[href='/ui/settings.html']");
    await page.waitForSelector("#new-key-form:visible");
    t.equal(await page.textContent("#settings-title"), "Project settings: default");
    t.ok(await page.isVisible("#new-project"), "the owner may make a project");
  });

  let key = "";
  let prefix = "";
  await t.test("a key with scopes, shown once, then revoked after a confirmation", async (t) => {
    await page.check("#new-key-form input[value=read]");
    await page.click("#new-key-form button[type=submit]");
    await page.waitForSelector("#new-key:visible");
    key = (await page.textContent("#new-key-value")) ?? "";
    t.match(key, /\S{16,}/, "the key is shown");
    t.equal(await status(key), 200, "the new key reads");
    // The server's test keys are listed too: the new one is the row whose prefix begins it.
    const handle = await page.waitForFunction(
      (k) =>
        [...(globalThis as any).document.querySelectorAll("#key-list tbody tr[data-key]")]
          .map((tr: any) => tr.dataset.key as string)
          .find((p) => k.startsWith(p)),
      key,
    );
    prefix = (await handle.jsonValue()) as string;
    t.equal(await page.textContent(`#key-list tr[data-key="${prefix}"] td:nth-child(2)`), "ingest, read", "its scopes");
    await page.click("#hide-key");
    t.ok(await page.isHidden("#new-key"), "gone when done");
    await page.reload();
    await page.waitForSelector(`#key-list tr[data-key="${prefix}"]`);
    t.notOk((await page.content()).includes(key), "never shown again");

    let asked = "";
    page.once("dialog", (dialog) => {
      asked = dialog.message();
      void dialog.accept();
    });
    await page.click(`#key-list tr[data-key="${prefix}"] button.revoke`);
    await page.waitForFunction(
      (p) => !(globalThis as any).document.querySelector(`#key-list tr[data-key="${p}"] button.revoke`),
      prefix,
    );
    t.match(asked, /Revoke the key/, "asked first");
    t.not(await page.textContent(`#key-list tr[data-key="${prefix}"] td:nth-child(4)`), "—", "revoked when");
    t.equal(await status(key), 401, "the revoked key is refused");
  });

  let invitation = "";
  await t.test("a member invited as viewer by email; the retention set to 30 days", async (t) => {
    await page.fill("#member-email", "vera@example.com");
    await page.selectOption("#member-role", "viewer");
    await page.click("#member-form button[type=submit]");
    await page.waitForSelector("#invitation:visible");
    invitation = (await page.textContent("#invitation-link")) ?? "";
    t.match(invitation, /^http:\/\/127\.0\.0\.1:\d+\//, "a one-time link of this server");

    await page.check("#retention-form input[value=days]");
    await page.fill("#retention-days", "30");
    await page.click("#retention-form button[type=submit]");
    await page.waitForSelector("#retention-now >> text=/kept 30 days/");
    t.ok(await page.isChecked("#retention-form input[value=days]"), "the form shows what is stored");
  });

  const viewerContext = await browser.newContext({ viewport: { width: 1280, height: 800 } });
  const viewer = await viewerContext.newPage();
  viewer.setDefaultTimeout(20_000);
  await t.test("the viewer sees the settings page without any write control", async (t) => {
    await viewer.goto(invitation);
    await viewer.fill("#signup-email", "vera@example.com");
    await viewer.fill("#signup-name", "Vera Viewer");
    await viewer.fill("#signup-password", PASSWORD);
    await viewer.click("#signup button[type=submit]");
    await viewer.waitForSelector("#forget-key >> text=/Sign out/");
    await viewer.goto(`${base}/ui/settings.html`);
    await viewer.waitForSelector("#retention-now >> text=/kept 30 days/");
    for (const control of [
      "#new-project",
      "#new-key-form",
      "#member-form",
      "#retention-form",
      "#key-list",
      "#member-list",
    ]) {
      t.ok(await viewer.isHidden(control), `${control}: hidden`);
    }
    t.match(await viewer.textContent("#keys-note"), /viewer/, "says why");
    t.equal(await viewer.locator("button.revoke, button.remove, select.member-role").count(), 0);
  });
  await viewerContext.close();

  await t.test("the owner sees the viewer among the members and makes them annotator", async (t) => {
    await page.reload();
    const row = page.locator('#member-list tr[data-member="vera@example.com"]');
    await row.waitFor();
    t.equal(await row.locator("select.member-role").inputValue(), "viewer");
    await row.locator("select.member-role").selectOption("annotator");
    await page.waitForSelector("#message >> text=/is now annotator/");
    await saveScreenshot(page, "people-settings.png");
  });

  await t.test("the audit page lists those acts, newest first, with who and from where", async (t) => {
    await page.click("a.person-link[href='/ui/audit.html']");
    await page.waitForSelector("#audit-list tbody tr");
    const rows = await page.$$eval("#audit-list tbody tr", (trs: any[]) =>
      trs.map((tr) => ({ action: tr.dataset.action, cells: [...tr.cells].map((c: any) => c.textContent) })),
    );
    const actions = rows.map((row) => row.action);
    for (const act of ["member.role_changed", "retention.changed", "user.invited", "key.revoked", "key.created"]) {
      t.ok(actions.includes(act), `${act} is listed`);
    }
    const order = ["member.role_changed", "retention.changed", "user.invited", "key.revoked", "key.created"].map(
      (act) => actions.indexOf(act),
    );
    t.same(
      order,
      [...order].sort((a, b) => a - b),
      "newest first",
    );
    const created = rows.find((row) => row.action === "key.created");
    t.match(created?.cells[1], /Olga Owner|owner@example\.com/, "who");
    t.match(created?.cells[2], /127\.0\.0\.1/, "from");
    await saveScreenshot(page, "people-audit.png");
  });
  await t.test("the audit page is paged: Older brings the next page by its cursor", async (t) => {
    // 50 more acts (keys made with the admin key): the first page (50) no longer holds them all.
    for (let i = 0; i < 50; i++) {
      const res = await env.app.inject({
        method: "POST",
        url: "/v2/keys",
        headers: { "x-agentmon-api-key": API_KEY, "content-type": "application/json" },
        payload: { scopes: ["read"] },
      });
      t.equal(res.statusCode, 200, res.body);
    }
    await page.reload();
    await page.waitForSelector("#older:visible");
    t.equal(await page.locator("#audit-list tbody tr").count(), 50, "one page");
    await page.click("#older");
    await page.waitForSelector("#older", { state: "hidden" });
    const actions = await page.$$eval("#audit-list tbody tr", (trs: any[]) => trs.map((tr) => tr.dataset.action));
    t.ok(actions.length > 50, "the older page is appended");
    t.equal(actions.at(-1), "user.created", "down to the first act, the owner's account");
    t.match(
      await page.textContent("#audit-list tbody tr td:nth-child(2)"),
      /^API key 11111111/,
      "an API key's act names the key by its prefix",
    );
  });
  t.same(problems, [], "no page error and no CSP violation");
});
