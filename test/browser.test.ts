/**
 * End to end in a real browser: Debian's Chromium, driven by playwright-core, against the real
 * app listening on a real port. The data is created through the write API over HTTP, as agents
 * create it; then the test uses the UI as a person would: enters the key, filters by tag, pages,
 * opens a session, reads its timeline and clicks its events; it checks that stored strings stay
 * text (an <img onerror> in a prompt runs nothing), that another project's session is "not
 * found", that the AgentOps SDK fixture sessions show their four events, that a running session
 * refreshes by itself, and that a 10 000-event session keeps only the visible rows in the page.
 * It writes the README's screenshots to docs/screenshots/. Every wait is for a selector or a
 * condition, never a fixed time; no assertion is about speed.
 */
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { type Browser, chromium, type Page } from "playwright-core";
import t, { type Test } from "tap";
import { API_KEY, build, OTHER_PROJECT_KEY, UNKNOWN_KEY } from "./helper.ts";

const CHROMIUM = "/usr/bin/chromium";
const missing = existsSync(CHROMIUM)
  ? false
  : `Chromium is not installed at ${CHROMIUM}, so the browser test is skipped: install Debian's package with \`apt-get install -y chromium\` (.ci/run does) to run it`;

const FIXTURES = new URL("./fixtures/agentops-sdk-0.3/", import.meta.url);
const SCREENSHOTS = new URL("../docs/screenshots/", import.meta.url);

/** Fixed instants, so that the pages (and the screenshots) are the same on every run. */
const T0 = Date.parse("2026-11-22T09:00:00Z");
const at = (ms: number) => new Date(T0 + ms).toISOString();
const MIN = 60_000;

/** The default project's sessions, newest first. */
const ALL_SESSIONS = [
  "checkout-1",
  "running-1",
  "checkout-2",
  "search-1",
  "big-10k",
  "79f6fc6b-8463-4bc7-8a68-c3f84a2c9423", // the AgentOps SDK 0.3.18 fixture session (05:09:43)
  "6fbb6581-44b2-42ad-9cf4-13a41f4ceeb7", // the AgentOps SDK 0.3.26 fixture session (05:09:41)
];

/** The prompt of the XSS probe: if it were ever parsed as HTML, the image's onerror would run. */
const XSS = `Is the cart ready? <img src=x onerror="window.__xss=1;document.title='pwned'"> <script>window.__xss=2</script>`;

interface Client {
  /** POSTs JSON to the running server; answers the body of a 200, throws on anything else. */
  post(path: string, body: unknown, headers: Record<string, string>): Promise<Record<string, any>>;
  /** Creates a session with the API key (or another key) and answers its JWT. */
  session(id: string, fields: Record<string, unknown>, key?: string): Promise<string>;
}

function client(base: () => string): Client {
  const post = async (path: string, body: unknown, headers: Record<string, string>) => {
    // Header names are case-insensitive: the fixtures' Content-Type replaces the default one.
    const lower = Object.fromEntries(Object.entries(headers).map(([name, value]) => [name.toLowerCase(), value]));
    const res = await fetch(`${base()}${path}`, {
      method: "POST",
      headers: { "content-type": "application/json", ...lower },
      body: JSON.stringify(body),
    });
    const answer = (await res.json()) as Record<string, any>;
    if (res.status !== 200) throw new Error(`${path} answered ${res.status}: ${JSON.stringify(answer)}`);
    return answer;
  };
  const session = async (id: string, fields: Record<string, unknown>, key = API_KEY) =>
    (await post("/v2/create_session", { session: { id, ...fields } }, { "x-agentmon-api-key": key })).jwt as string;
  return { post, session };
}

const bearer = (jwt: string) => ({ authorization: `Bearer ${jwt}` });

/** The data the pages show; answers the JWT of the running session and the fixture sessions' ids. */
async function createData(api: Client) {
  const checkout = await api.session("checkout-1", { init_timestamp: at(0), tags: ["e2e", "checkout"] });
  await api.post("/v2/create_agent", { id: "planner", name: "Planner" }, bearer(checkout));
  await api.post(
    "/v2/create_events",
    {
      events: [
        {
          type: "llm",
          id: "llm-1",
          init_timestamp: at(200),
          end_timestamp: at(1600),
          agent_id: "planner",
          model: "gpt-4o-mini",
          prompt: [
            { role: "system", content: "You are a careful shopping assistant." },
            { role: "user", content: XSS },
          ],
          completion: { role: "assistant", content: "Yes: 3 items, total $42.10." },
          prompt_tokens: 412,
          completion_tokens: 37,
          cost: 0.000089,
        },
        {
          type: "tool",
          id: "tool-1",
          init_timestamp: at(1700),
          end_timestamp: at(2300),
          agent_id: "planner",
          name: "inventory.lookup",
          input: { sku: "A-12", quantity: 3 },
          output: { in_stock: true },
        },
        {
          type: "action",
          id: "action-1",
          init_timestamp: at(2400),
          end_timestamp: at(2500),
          action_type: "decide",
          name: "checkout",
          params: { method: "card" },
          returns: "pay",
        },
        {
          type: "error",
          id: "error-1",
          init_timestamp: at(2600),
          error_type: "PaymentDeclined",
          code: "card_declined",
          details: "insufficient funds",
          logs: 'Traceback (most recent call last):\n  File "pay.py", line 12, in charge\nPaymentDeclined: card_declined',
          trigger_event_id: "tool-1",
          trigger_event_type: "tool",
        },
      ],
    },
    bearer(checkout),
  );
  await api.post(
    "/v2/update_session",
    { session: { end_state: "Success", end_timestamp: at(3000), end_state_reason: "order placed" } },
    bearer(checkout),
  );

  const failed = await api.session("checkout-2", { init_timestamp: at(-60 * MIN), tags: ["e2e", "checkout"] });
  await api.post(
    "/v2/create_events",
    {
      events: [
        {
          type: "llm",
          id: "c2-llm",
          init_timestamp: at(-60 * MIN + 100),
          end_timestamp: at(-60 * MIN + 2100),
          model: "gpt-4o",
          prompt: "Pay the order",
          completion: "Calling the payment provider",
          prompt_tokens: 1200,
          completion_tokens: 80,
          cost: 0.0038,
        },
      ],
    },
    bearer(failed),
  );
  await api.post(
    "/v2/update_session",
    {
      session: {
        end_state: "Fail",
        end_timestamp: at(-60 * MIN + 32_000),
        end_state_reason: "payment provider timeout",
      },
    },
    bearer(failed),
  );

  const search = await api.session("search-1", { init_timestamp: at(-120 * MIN), tags: ["e2e", "search"] });
  await api.post(
    "/v2/create_events",
    {
      events: [{ type: "tool", id: "s-tool", init_timestamp: at(-120 * MIN + 50), name: "web.search", input: "shoes" }],
    },
    bearer(search),
  );
  await api.post(
    "/v2/update_session",
    { session: { end_state: "unknown", end_timestamp: at(-120 * MIN + 900) } },
    bearer(search),
  );

  const running = await api.session("running-1", { init_timestamp: at(-30 * MIN), tags: ["e2e", "live"] });
  await api.post(
    "/v2/create_events",
    {
      events: [
        {
          type: "llm",
          id: "r-1",
          init_timestamp: at(-30 * MIN + 100),
          end_timestamp: at(-30 * MIN + 700),
          model: "gpt-4o-mini",
          prompt: "Plan the trip",
          prompt_tokens: 90,
          completion_tokens: 12,
          cost: 0.00002,
        },
      ],
    },
    bearer(running),
  );

  await api.session("secret-1", { init_timestamp: at(0), tags: ["e2e", "checkout"] }, OTHER_PROJECT_KEY);

  // 10 000 events, in the largest batches create_events takes; short overlapping spans of all kinds.
  const big = await api.session("big-10k", { init_timestamp: at(-180 * MIN), tags: ["load"] });
  const kinds = ["llm", "tool", "action", "error"] as const;
  for (let batch = 0; batch < 10; batch++) {
    const events = Array.from({ length: 1000 }, (_, i) => {
      const n = batch * 1000 + i;
      const type = kinds[n % 4] as (typeof kinds)[number];
      const start = -180 * MIN + n * 30;
      return {
        type,
        id: `big-${String(n).padStart(4, "0")}`,
        init_timestamp: at(start),
        end_timestamp: at(start + 20 + (n % 17) * 10),
        ...(type === "llm" ? { model: "gpt-4o-mini", prompt: `step ${n}`, completion: `done ${n}` } : {}),
        ...(type === "tool" ? { name: `tool-${n % 5}`, input: { n } } : {}),
      };
    });
    await api.post("/v2/create_events", { events }, bearer(big));
  }
  await api.post(
    "/v2/update_session",
    { session: { end_state: "Success", end_timestamp: at(-170 * MIN) } },
    bearer(big),
  );

  return { running };
}

/** Replays one AgentOps SDK version's recorded requests over HTTP; answers its session_url. */
async function replayFixtures(api: Client, version: string): Promise<string> {
  const dir = new URL(`${version}/`, FIXTURES);
  let jwt = "";
  let sessionUrl = "";
  for (const name of readdirSync(dir).sort()) {
    const fixture = JSON.parse(readFileSync(new URL(name, dir), "utf8"));
    const headers: Record<string, string> = { ...fixture.headers };
    if (headers.Authorization) headers.Authorization = `Bearer ${jwt}`;
    const answer = await api.post(fixture.path, fixture.body, headers);
    if (answer.jwt) jwt = answer.jwt;
    if (answer.session_url) sessionUrl = answer.session_url;
  }
  return sessionUrl;
}

/** The session ids the sessions table shows, in order. */
const listed = (page: Page) =>
  page.$$eval("#sessions tbody tr", (rows: any[]) => rows.map((row) => row.dataset.sessionId as string));

/** Waits until the table shows these sessions (a new page replaces the old one), then asserts it. */
async function expectRows(t: Test, page: Page, ids: string[], message: string) {
  // A function, not a string: the page's CSP forbids evaluating strings, and Playwright would.
  const shows = (want: string) => {
    const rows = (globalThis as any).document.querySelectorAll("#sessions tbody tr");
    return JSON.stringify([...rows].map((row: any) => row.dataset.sessionId)) === want;
  };
  await page.waitForFunction(shows, JSON.stringify(ids)).catch(() => undefined); // t.same below says what was shown
  t.same(await listed(page), ids, message);
}

/** How many pixels differ between two PNG images of the same size, compared in a blank page. */
async function differentPixels(browser: Browser, before: Buffer, after: Buffer): Promise<number> {
  const page = await browser.newPage();
  try {
    return await page.evaluate(
      async ([a, b]: [string, string]) => {
        const doc = (globalThis as any).document;
        const pixels = async (base64: string) => {
          const image = new (globalThis as any).Image();
          image.src = `data:image/png;base64,${base64}`;
          await image.decode();
          const canvas = doc.createElement("canvas");
          canvas.width = image.width;
          canvas.height = image.height;
          const context = canvas.getContext("2d");
          context.drawImage(image, 0, 0);
          return context.getImageData(0, 0, image.width, image.height).data as Uint8ClampedArray;
        };
        const [x, y] = await Promise.all([pixels(a), pixels(b)]);
        if (x.length !== y.length) return Number.POSITIVE_INFINITY;
        let count = 0;
        for (let i = 0; i < x.length; i += 4) {
          if (x[i] !== y[i] || x[i + 1] !== y[i + 1] || x[i + 2] !== y[i + 2]) count++;
        }
        return count;
      },
      [before.toString("base64"), after.toString("base64")] as [string, string],
    );
  } finally {
    await page.close();
  }
}

/**
 * Writes a README screenshot, unless the committed one shows the same page: Chromium shades a
 * few rounded-corner pixels differently from run to run, and that alone must not dirty the file.
 */
async function saveScreenshot(page: Page, name: string) {
  const file = new URL(name, SCREENSHOTS);
  const png = await page.screenshot();
  const browser = page.context().browser();
  if (browser && existsSync(file) && (await differentPixels(browser, readFileSync(file), png)) <= 500) return;
  writeFileSync(file, png);
}

/** The kinds of the timeline rows in the page, top to bottom. */
const timelineKinds = (page: Page) => page.$$eval(".tl-row", (rows: any[]) => rows.map((row) => row.dataset.kind));

/** The API key the page keeps, or null. */
const keptKey = (page: Page) => page.evaluate(() => (globalThis as any).sessionStorage.getItem("agentmon.apiKey"));

t.test("the web UI in headless Chromium", { skip: missing }, async (t) => {
  let base = "";
  const env = await build(t, { publicUrl: () => base });
  base = await env.app.listen({ port: 0, host: "127.0.0.1" });
  const api = client(() => base);
  const { running } = await createData(api);
  const fixtureUrls = new Map<string, string>();
  for (const version of readdirSync(FIXTURES).sort()) fixtureUrls.set(version, await replayFixtures(api, version));

  const browser = await chromium.launch({
    executablePath: CHROMIUM,
    args: [
      "--headless",
      "--no-sandbox",
      "--disable-gpu",
      "--disable-quic",
      "--no-first-run",
      "--disable-background-networking",
      "--disable-component-update",
      "--disable-sync",
    ],
  });
  t.teardown(() => browser.close());
  const context = await browser.newContext({ viewport: { width: 1280, height: 800 }, deviceScaleFactor: 1 });
  const page = await context.newPage();
  page.setDefaultTimeout(20_000);
  const problems: string[] = [];
  page.on("pageerror", (error) => problems.push(`page error: ${error.message}`));
  page.on("console", (message) => {
    if (/Content Security Policy|Refused to/i.test(message.text())) problems.push(`CSP: ${message.text()}`);
  });
  mkdirSync(SCREENSHOTS, { recursive: true });

  await t.test("the sessions page asks for a key, asks again when it is refused, then lists", async (t) => {
    await page.goto(`${base}/`);
    await page.waitForSelector("#key-form");
    t.ok(await page.isHidden("#app"), "nothing but the key form before a key is given");
    await page.fill("#api-key", UNKNOWN_KEY);
    await page.press("#api-key", "Enter");
    await page.waitForSelector("#key-form .warning");
    t.match(await page.textContent("#key-form .warning"), /refused \(401\)/, "a wrong key: the API's 401, asked again");
    t.equal(await keptKey(page), null, "the refused key is not kept");

    await page.fill("#api-key", API_KEY);
    await page.press("#api-key", "Enter");
    await expectRows(
      t,
      page,
      ALL_SESSIONS,
      "every session of the key's project, newest first; none of the other project",
    );
    t.equal(await keptKey(page), API_KEY, "the key is kept");
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
    t.match(page.url(), /\/\?tag=checkout$/);

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
