/**
 * The API reference (openapi.yaml L4, GET /docs) in a real browser (see test/browser.test.ts for
 * the set-up): reached from the web UI's top bar, it lists the operations of openapi.yaml, opens
 * one, and "Try it out" calls this server; every request the page makes goes to this server (no
 * CDN, no validator, no font host), and its Content-Security-Policy is never violated. Writes
 * docs/screenshots/docs.png.
 */
import type { Request } from "playwright-core";
import t from "tap";
import { chromiumMissing, openBrowser, saveScreenshot } from "./browser/page.ts";
import { build } from "./helper.ts";

t.test("the API reference in headless Chromium", { skip: chromiumMissing }, async (t) => {
  const env = await build(t);
  const base = await env.app.listen({ port: 0, host: "127.0.0.1" });
  const { page, problems } = await openBrowser(t);
  // Every request of the page, and of anything it starts (workers, frames): the context's view.
  const requests: string[] = [];
  page.context().on("request", (request: Request) => requests.push(request.url()));

  await t.test("the UI's top bar leads to it, from both pages", async (t) => {
    for (const path of ["/", "/sessions/any"]) {
      await page.goto(`${base}${path}`);
      t.equal(await page.getAttribute(".topbar a.docs-link", "href"), "/docs", `${path} links to /docs`);
    }
    await page.click(".topbar a.docs-link");
    await page.waitForURL(`${base}/docs`);
    t.pass("clicking it opens /docs");
  });

  await t.test("it lists the operations of openapi.yaml, by tag", async (t) => {
    await page.waitForSelector("#operations-sessions-createSession");
    t.equal(
      await page.textContent("#operations-sessions-createSession .opblock-summary-path"),
      "/v2/create_session",
      "createSession, at its path",
    );
    t.equal(await page.textContent(".info .title"), "agentmon — Agent Monitoring REST API 2.0.0 OAS 3.1");
    for (const id of ["events-createEvents", "agents-createAgent", "otlp-exportTraces", "agentops-createThread"]) {
      t.equal(await page.locator(`#operations-${id}`).count(), 1, `${id} is listed`);
    }
    t.equal(await page.locator(".agentmon-topbar a.brand").getAttribute("href"), "/", "its top bar leads back");
    // The operations, not the top of the page: that shows the document's address, whose port changes.
    await page.evaluate(() => (globalThis as any).document.querySelector("#operations-tag-sessions").scrollIntoView());
    await saveScreenshot(page, "docs.png");
  });

  await t.test("an operation opens with its request body, and Try it out calls this server", async (t) => {
    await page.click("#operations-sessions-createSession .opblock-summary-control");
    await page.waitForSelector("#operations-sessions-createSession .opblock-section-request-body");
    t.equal(
      await page.locator("#operations-sessions-createSession .authorization__btn").count(),
      1,
      "it says it needs a credential (the lock)",
    );
    t.match(
      await page.textContent("#operations-sessions-createSession .opblock-body"),
      /Session already exists/,
      "its error answers are shown",
    );

    await page.click("#operations-health-getHealthAlias .opblock-summary-control");
    const health = "#operations-health-getHealthAlias";
    await page.click(`${health} .try-out__btn`);
    await page.click(`${health} .execute`);
    const status = `${health} .live-responses-table tbody .response-col_status`;
    await page.waitForSelector(status);
    t.equal((await page.textContent(status))?.trim(), "200");
    t.match(await page.textContent(`${health} .live-responses-table .microlight`), /"status": "success"/);
    t.ok(
      requests.includes(`${base}/health`),
      `the call went to this server (${requests.filter((url) => url.endsWith("/health")).join(", ")})`,
    );
  });

  t.test("no request left the machine, and the CSP was never violated", async (t) => {
    t.ok(requests.length > 5, `${requests.length} requests recorded`);
    const elsewhere = requests.filter((url) => new URL(url).origin !== base && !url.startsWith("data:"));
    t.same(elsewhere, [], "every request went to this server");
    t.ok(requests.includes(`${base}/docs/static/swagger-ui-bundle.js`), "Swagger UI came from this server");
    t.ok(requests.includes(`${base}/docs/json`), "and so did the document");
    t.same(problems, [], "no page error, no Content-Security-Policy violation");
  });
});
