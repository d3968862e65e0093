/**
 * End to end in a real browser: Debian's Chromium, driven by playwright-core, against the real
 * app listening on a real port. The data is created through the write API over HTTP, as agents
 * create it; then the test uses the UI as a person would: enters the key, filters by tag, pages,
 * opens a session, reads its timeline and clicks its events; it checks that stored strings stay
 * text (an <img onerror> in a prompt runs nothing), that another project's session is "not
 * found", that the AgentOps SDK fixture sessions show their four events, that a running session
 * refreshes by itself, and that a 10 000-event session keeps only the visible rows in the page.
 * It writes the README's screenshots to docs/screenshots/. Every wait is for a selector or a
 * condition, never a fixed time; no assertion is about speed. The data is made in
 * test/browser/data.ts; what the test reads from the page is in test/browser/page.ts.
 */
import { readdirSync } from "node:fs";
import t from "tap";
import { hashApiKey, keyPrefix } from "../domain/keys.ts";
import { ALL_SESSIONS, at, bearer, client, createData, FIXTURES, MIN, replayFixtures, XSS } from "./browser/data.ts";
import { chromiumMissing, expectRows, keptKey, openBrowser, saveScreenshot, timelineKinds } from "./browser/page.ts";
import { build, UNKNOWN_KEY } from "./helper.ts";

/** The UI asks for a read key (4.7): one with the scope read alone, and one that cannot read. */
const READ_KEY = "5ead0000-0000-4000-8000-000000000000";
const INGEST_KEY = "1e570000-0000-4000-8000-000000000000";

t.test("the web UI in headless Chromium", { skip: chromiumMissing }, async (t) => {
  let base = "";
  const env = await build(t, { publicUrl: () => base });
  const now = new Date().toISOString();
  await env.store.createApiKey(hashApiKey(READ_KEY), keyPrefix(READ_KEY), "default", now, ["read"]);
  await env.store.createApiKey(hashApiKey(INGEST_KEY), keyPrefix(INGEST_KEY), "default", now, ["ingest"]);
  base = await env.app.listen({ port: 0, host: "127.0.0.1" });
  const api = client(() => base);
  const { running } = await createData(api);
  const fixtureUrls = new Map<string, string>();
  for (const version of readdirSync(FIXTURES).sort()) fixtureUrls.set(version, await replayFixtures(api, version));

  const { browser, page, problems } = await openBrowser(t);

  await t.test("the sessions page asks for a key, asks again when it is refused, then lists", async (t) => {
    await page.goto(`${base}/sessions`);
    await page.waitForSelector("#key-form");
    t.ok(await page.isHidden("#app"), "nothing but the key form before a key is given");
    await page.fill("#api-key", UNKNOWN_KEY);
    await page.press("#api-key", "Enter");
    await page.waitForSelector("#key-form .warning");
    t.match(await page.textContent("#key-form .warning"), /refused \(401\)/, "a wrong key: the API's 401, asked again");
    t.equal(await keptKey(page), null, "the refused key is not kept");
    t.match(await page.textContent("#key-form h1"), /read key/i, "it asks for a read key");

    await page.fill("#api-key", INGEST_KEY);
    await page.press("#api-key", "Enter");
    await page.waitForSelector("#key-form .warning >> text=/cannot read/");
    t.match(
      await page.textContent("#key-form .warning"),
      /cannot read \(403\): This API key has scope ingest; this operation needs read\. Enter a read key\./,
      "a key without the scope read: the API's 403, asked again for a read key",
    );
    t.equal(await keptKey(page), null, "the ingest key is not kept");

    await page.fill("#api-key", READ_KEY);
    await page.press("#api-key", "Enter");
    await expectRows(
      t,
      page,
      ALL_SESSIONS,
      "every session of the key's project, newest first; none of the other project",
    );
    t.equal(await keptKey(page), READ_KEY, "the read key is kept");
    const state = (id: string) => page.getAttribute(`tr[data-session-id="${id}"] .badge`, "data-state");
    t.equal(await state("checkout-1"), "Success");
    t.equal(await state("checkout-2"), "Fail");
    t.equal(await state("search-1"), "Indeterminate", "the S5 alias unknown, stored canonical");
    t.equal(await state("running-1"), "Running", "no end_state: running");
    const cells = await page.$$eval('tr[data-session-id="checkout-1"] td', (tds) => tds.map((td) => td.textContent));
    t.same(
      cells.slice(1, 8),
      ["2026-11-22 09:00:00", "Success", "3 s", "4 (1 err)", "449", "$0.000089", "e2echeckout"],
      "start, state, duration, events, tokens, cost and tags from the session's stats",
    );
    await saveScreenshot(page, "sessions.png");
  });

  await t.test("filters: by tag (one, or all of several), by end state; the address keeps them", async (t) => {
    await page.fill('input[name="tag"]', "checkout");
    await page.click('#filters button[type="submit"]');
    await expectRows(t, page, ["checkout-1", "checkout-2"], "tag=checkout");
    t.match(page.url(), /\/sessions\?tag=checkout$/);

    await page.fill('input[name="tag"]', "e2e, search");
    await page.click('#filters button[type="submit"]');
    await expectRows(t, page, ["search-1"], "tag=e2e and tag=search: every tag must match");

    await page.fill('input[name="tag"]', "");
    await page.selectOption('select[name="end_state"]', "Fail");
    await page.click('#filters button[type="submit"]');
    await expectRows(t, page, ["checkout-2"], "end_state=Fail");

    await page.goBack();
    await expectRows(t, page, ["search-1"], "the back button shows the previous filters again");
    t.equal(await page.inputValue('input[name="tag"]'), "e2e, search", "and puts them back in the form");

    await page.click("#clear-filters");
    await expectRows(t, page, ALL_SESSIONS, "Clear shows every session again");
    t.equal(new URL(page.url()).search, "", "and empties the address");

    await page.fill('input[name="from"]', "2026-11-22T08:00:00");
    await page.click('#filters button[type="submit"]');
    await expectRows(t, page, ["checkout-1", "running-1", "checkout-2"], "from 08:00 UTC, inclusive");
    t.match(page.url(), /from=2026-11-22T08%3A00%3A00Z/, "the form's time is sent as UTC");
    await page.fill('input[name="from"]', "");
    await page.fill('input[name="q"]', "TIMEOUT");
    await page.click('#filters button[type="submit"]');
    await expectRows(t, page, ["checkout-2"], "q: a case-insensitive substring of the reason");
    await page.fill('input[name="q"]', "");
    await page.fill('input[name="agent_id"]', "planner");
    await page.click('#filters button[type="submit"]');
    await expectRows(t, page, ["checkout-1"], "agent_id");
  });

  await t.test("pagination follows next_cursor and comes back", async (t) => {
    await page.goto(`${base}/?tag=e2e&limit=2`);
    await expectRows(t, page, ["checkout-1", "running-1"], "page 1 of 2 rows");
    t.match(page.url(), /\/sessions\?tag=e2e&limit=2$/, "the list's address from before the overview leads to it");
    t.ok(await page.isDisabled("#newer"), "no newer page on page 1");
    await page.click("#older");
    await expectRows(t, page, ["checkout-2", "search-1"], "page 2: the next two, none repeated");
    t.equal(await page.textContent("#page-label"), "Page 2");
    await page.click("#newer");
    await expectRows(t, page, ["checkout-1", "running-1"], "back to page 1");
  });

  await t.test("a session page: totals, agents, the timeline, and an llm event's prompt as chat", async (t) => {
    await page.goto(`${base}/?tag=checkout`);
    await expectRows(t, page, ["checkout-1", "checkout-2"], "filtered by tag");
    await page.click('a[href="/sessions/checkout-1"]');
    await page.waitForSelector('#timeline-list[data-count="4"]');
    t.equal(new URL(page.url()).pathname, "/sessions/checkout-1");
    t.same(await timelineKinds(page), ["llm", "tool", "action", "error"], "its four events, in time order");
    t.equal(await page.getAttribute("#timeline-list", "aria-label"), "Timeline: 4 events");
    t.equal(await page.getAttribute("#timeline-list", "role"), "listbox", "no parent ids: a flat list, as ever");
    t.equal(await page.locator(".tl-toggle, .tl-toggle-space").count(), 0, "with no disclosure buttons");
    t.equal(await page.textContent('[data-total="events"] dd'), "4");
    t.equal(await page.textContent('[data-total="cost"] dd'), "$0.000089");
    t.match(await page.textContent("#agents"), /Planner\s*planner/, "the agent, name and id");

    await page.click('.tl-row[data-kind="llm"]');
    await page.waitForSelector("#prompt .msg");
    const messages = await page.$$eval("#prompt .msg", (els: any[]) =>
      els.map((el) => ({ role: el.dataset.role, text: el.querySelector(".msg-content")?.textContent })),
    );
    t.same(
      messages,
      [
        { role: "system", text: "You are a careful shopping assistant." },
        { role: "user", text: XSS },
      ],
      "the prompt as chat messages, the markup in it shown as text",
    );
    t.equal(await page.textContent("#completion .msg-content"), "Yes: 3 items, total $42.10.", "the completion");
    t.equal(await page.locator("#detail img, #detail script").count(), 0, "no element was made from the prompt");
    t.equal(await page.evaluate(() => typeof (globalThis as any).__xss), "undefined", "nothing ran");
    t.not(await page.title(), "pwned");
    t.equal(await page.getAttribute('.tl-row[data-kind="llm"]', "aria-selected"), "true", "the row is selected");
    await saveScreenshot(page, "session.png");
  });

  await t.test("the keyboard selects events too: tool input and output, error details and logs", async (t) => {
    await page.focus("#timeline-list");
    await page.keyboard.press("ArrowDown");
    await page.waitForSelector('#detail[data-event-id="tool-1"]');
    t.match(await page.textContent("#detail"), /Input\s*\{\s*"sku": "A-12",\s*"quantity": 3\s*\}/, "the tool's input");
    t.match(await page.textContent("#detail"), /Output\s*\{\s*"in_stock": true\s*\}/, "and output");
    await page.keyboard.press("End");
    await page.waitForSelector('#detail[data-event-id="error-1"]');
    t.equal(await page.textContent("#detail pre.error-details"), "insufficient funds", "the error's details");
    t.match(await page.textContent("#detail pre.logs"), /^Traceback[\s\S]*PaymentDeclined: card_declined$/, "its logs");
    await page.click("#detail .facts button"); // the trigger event's id
    await page.waitForSelector('#detail[data-event-id="tool-1"]');
    t.pass("the error's trigger_event_id selects the tool event");
  });

  await t.test("another project's session and an unknown one are 'not found in this project'", async (t) => {
    for (const id of ["secret-1", "never-created"]) {
      await page.goto(`${base}/sessions/${id}`);
      await page.waitForSelector('#message[data-state="not-found"]');
      t.match(await page.textContent("#message"), `Session "${id}" was not found in this project`, id);
      t.ok(await page.isHidden("#app"), `${id}: nothing else is shown`);
    }
  });

  await t.test("the AgentOps SDK fixture sessions show their four events", async (t) => {
    for (const [version, url] of fixtureUrls) {
      t.equal(new URL(url).origin, base, `${version}: session_url is this server's`);
      await page.goto(url);
      await page.waitForSelector('#timeline-list[data-count="4"]');
      t.same(
        [...(await timelineKinds(page))].sort(),
        ["action", "error", "llm", "tool"],
        `${version}: the llm, action, tool and error events on the timeline`,
      );
      t.equal(await page.getAttribute("#session-state .badge", "data-state"), "Success");
    }
  });

  await t.test("a running session refreshes by itself, and stops once it has ended", async (t) => {
    await page.goto(`${base}/sessions/running-1`);
    await page.waitForSelector('#timeline-list[data-count="1"]');
    t.ok(await page.isVisible("#live"), "marked live");
    await api.post(
      "/v2/create_events",
      { events: [{ type: "tool", id: "r-2", init_timestamp: at(-30 * MIN + 800), name: "maps.route" }] },
      bearer(running),
    );
    await page.waitForSelector('#timeline-list[data-count="2"]');
    t.same(await timelineKinds(page), ["llm", "tool"], "the new event appears without a reload");
    await api.post(
      "/v2/update_session",
      { session: { end_state: "Fail", end_state_reason: "stopped" } },
      bearer(running),
    );
    await page.waitForSelector('#session-state .badge[data-state="Fail"]');
    t.ok(await page.isHidden("#live"), "no longer live once ended");
  });

  await t.test("10 000 events: all on the timeline, only the visible rows in the page", async (t) => {
    await page.goto(`${base}/sessions/big-10k`);
    await page.waitForSelector('#timeline-list[data-count="10000"]', { timeout: 60_000 });
    const rows = await page.locator(".tl-row").count();
    t.ok(rows > 0 && rows < 100, `${rows} rows in the page for 10 000 events`);
    await page.focus("#timeline-list");
    await page.keyboard.press("End");
    await page.waitForSelector('.tl-row.selected[data-event-id="big-9999"]');
    t.equal(await page.getAttribute("#detail", "data-event-id"), "big-9999", "End selects the last event");
    t.ok((await page.locator(".tl-row").count()) < 100, "still only the visible rows");
    await page.keyboard.press("Home");
    await page.waitForSelector('.tl-row.selected[data-event-id="big-0000"]');
    t.equal(await page.getAttribute("#detail", "data-event-id"), "big-0000", "Home selects the first");
    await page.uncheck('#legend input[data-kind="llm"]');
    await page.waitForSelector('#timeline-list[data-count="7500"]');
    t.pass("hiding a kind leaves the other 7 500 events");
  });

  await t.test("forget key: the key is dropped and asked for again", async (t) => {
    await page.click("#forget-key");
    await page.waitForSelector("#key-form");
    t.equal(await keptKey(page), null);
    t.ok(await page.isHidden("#app"), "the session is no longer shown");
    await page.goto(`${base}/`);
    await page.waitForSelector("#key-form");
    t.pass("the sessions page asks too");
  });

  t.same(problems, [], "no page error and no Content-Security-Policy violation during the whole run");
  await browser.close();
});
