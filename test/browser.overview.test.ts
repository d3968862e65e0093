/**
 * The overview page and the sessions list's sorts, filters and search, end to end in Debian's
 * Chromium (playwright-core) against the real app on a real port, in Paris time. A week of
 * sessions is written through the write API (test/browser/overview-data.ts); the test then reads
 * what the page draws (the totals, the numbers the chart legends show for a hovered day, the
 * tables) and checks it against what the read API answers for the same question, and against the
 * numbers the data set was made with. Then it follows a model's link to the sessions list,
 * filters, sorts and searches there, and checks the rows against the API's. It writes
 * docs/screenshots/overview.png, overview-dark.png and sessions-search.png. Every wait is for a selector or a
 * condition, never a fixed time; no assertion is about speed.
 */

import type { Page } from "playwright-core";
import t from "tap";
import { hashApiKey, keyPrefix } from "../domain/keys.ts";
import { createOverviewData, FIRST_DAY, FROM, LAST_DAY, PER_DAY, TIMEZONE, TO } from "./browser/overview-data.ts";
import { chromiumMissing, expectRows, openBrowser, saveScreenshot } from "./browser/page.ts";
import { build } from "./helper.ts";

const READ_KEY = "5ead0000-0000-4000-8000-000000000001";

type Point = Record<string, any>;

/** The numbers uPlot's legend shows, by series label, after the mouse rests over day `index` of `days`. */
async function hover(page: Page, chart: string, index: number, days: number) {
  const over = await page.locator(`${chart} .u-over`).boundingBox();
  if (!over) throw new Error(`${chart} is not drawn`);
  // The x scale spans the days with half a day either side: day i is centred at (i + 0.5) / days.
  await page.mouse.move(over.x + (over.width * (index + 0.5)) / days, over.y + over.height / 2);
  return page.$$eval(`${chart} .u-legend .u-series`, (rows: any[]) =>
    Object.fromEntries(
      rows.map((row) => [row.querySelector(".u-label").textContent, row.querySelector(".u-value").textContent]),
    ),
  );
}

/** A formatter of the page itself (ui/common.js), so that the test writes numbers as the page does. */
const format = (page: Page, name: string, value: unknown) =>
  page.evaluate(async ([fn, v]) => ((await import("/ui/common.js" as string)) as any)[fn as string](v), [
    name,
    value,
  ] as const);

const rate = (failures: number, sessions: number) =>
  sessions > 0 ? `${((failures / sessions) * 100).toFixed(1)}%` : "—";

/**
 * Money as people expect it (issue 27), by Intl rather than by the page's own code: dollars and
 * cents, and an amount under a cent with two significant digits ($0.0042).
 */
const CENTS = new Intl.NumberFormat("en-US", { style: "currency", currency: "USD" });
const UNDER_A_CENT = new Intl.NumberFormat("en-US", {
  style: "currency",
  currency: "USD",
  maximumSignificantDigits: 2,
});
const dollars = (decimal: string) => {
  const amount = Number(decimal);
  return amount === 0 || Math.abs(amount) >= 0.01 ? CENTS.format(amount) : UNDER_A_CENT.format(amount);
};

/** The exact sum of decimal strings, as the page adds costs. */
function addDecimals(values: string[]) {
  const scale = Math.max(0, ...values.map((v) => (v.split(".")[1] ?? "").length));
  const sum = values.reduce((total, v) => {
    const [whole, fraction = ""] = v.split(".");
    return total + BigInt(`${whole}${fraction.padEnd(scale, "0")}`);
  }, 0n);
  const text = sum.toString().padStart(scale + 1, "0");
  const fraction = text.slice(text.length - scale).replace(/0+$/, "");
  return `${text.slice(0, text.length - scale)}${fraction ? `.${fraction}` : ""}`;
}

t.test("the overview and the sessions list in headless Chromium", { skip: chromiumMissing }, async (t) => {
  let base = "";
  const env = await build(t, { publicUrl: () => base });
  await env.store.createApiKey(hashApiKey(READ_KEY), keyPrefix(READ_KEY), "default", new Date().toISOString(), [
    "read",
  ]);
  base = await env.app.listen({ port: 0, host: "127.0.0.1" });
  const { sessions: created } = await createOverviewData(() => base);

  /** The read API, asked from here with the same key. */
  const read = async (path: string, query: Record<string, string | number | string[]>) => {
    const url = new URL(path, base);
    for (const [name, value] of Object.entries(query)) {
      for (const one of [value].flat()) url.searchParams.append(name, String(one));
    }
    const res = await fetch(url, { headers: { "x-agentmon-api-key": READ_KEY } });
    const body = (await res.json()) as Record<string, any>;
    if (res.status !== 200) throw new Error(`${url} answered ${res.status}: ${JSON.stringify(body)}`);
    return body;
  };
  const listed = async (query: Record<string, string | number | string[]>) =>
    ((await read("/v2/sessions", { limit: 200, ...query })).sessions as any[]).map((row) => row.session.id as string);

  const { browser, page, problems } = await openBrowser(t, { timezoneId: TIMEZONE });
  const range = `${FIRST_DAY}..${LAST_DAY}`;
  const series = await read("/v2/analytics/timeseries", { bucket: "day", tz: TIMEZONE, from: FROM, to: TO });
  const points = series.points as Point[];

  await t.test("the overview asks for a read key, then shows the chosen days in the browser's timezone", async (t) => {
    await page.goto(`${base}/?range=${range}`);
    await page.waitForSelector("#key-form");
    await page.fill("#api-key", READ_KEY);
    await page.press("#api-key", "Enter");
    await page.waitForSelector('#app[data-loaded="true"]');
    t.same(
      await page.evaluate(() => ({ ...(globalThis as any).document.getElementById("app").dataset })),
      { loaded: "true", from: FROM, to: TO, tz: TIMEZONE },
      "it asked for Paris midnight of the first day up to Paris midnight after the last",
    );
    t.equal(await page.textContent("#range-label"), `${FIRST_DAY} to ${LAST_DAY}: 7 days of ${TIMEZONE}`);
    t.equal(await page.inputValue('#custom-range input[name="first"]'), FIRST_DAY, "the custom range's form shows it");
    t.equal(await page.locator(".ranges a[aria-current]").count(), 0, "no preset is marked");

    t.same(
      points.map((point) => point.sessions),
      PER_DAY,
      "the API's sessions per Paris day are those the data set made",
    );
    t.same(
      points.map((point) => point.start),
      PER_DAY.map((_, day) => `2026-11-${16 + day}T00:00:00+01:00`),
      "one bucket per day, starting at Paris midnight",
    );
  });

  await t.test("the totals are the sums of the API's days", async (t) => {
    const sum = (name: string) => points.reduce((total, point) => total + point[name], 0);
    const total = async (name: string) => page.textContent(`[data-total="${name}"] dd`);
    t.equal(sum("sessions"), created, "every session made is in the week");
    t.equal(await total("sessions"), String(created));
    const cost = addDecimals(points.map((point) => point.cost));
    t.ok((cost.split(".")[1] ?? "").length > 2, `the exact sum has more than two decimals (${cost})`);
    const headline = await total("cost");
    t.equal(headline, dollars(cost), `cost, added exactly, shown in dollars and cents (${cost})`);
    t.match(headline, /^\$\d{1,3}(,\d{3})*\.\d\d$/, "two decimals");
    t.equal(await total("failures"), String(sum("failures")));
    t.ok(sum("failures") > 0, `${sum("failures")} failed sessions`);
    t.equal(await total("failure-rate"), rate(sum("failures"), sum("sessions")));
    t.equal(await total("events"), await format(page, "formatInt", sum("events")));
    t.equal(await total("tokens"), await format(page, "formatInt", sum("prompt_tokens") + sum("completion_tokens")));
  });

  await t.test("hovering a day shows its numbers in the charts' legends, the API's numbers", async (t) => {
    for (const index of [0, 3, 6]) {
      const point = points[index] as Point;
      const day = `2026-11-${16 + index}`;
      t.same(
        await hover(page, "#chart-sessions", index, points.length),
        {
          Day: day,
          Sessions: String(point.sessions),
          Failed: String(point.failures),
          "Failure rate": rate(point.failures, point.sessions),
        },
        `${day}: sessions, failed sessions and failure rate`,
      );
      t.same(
        await hover(page, "#chart-cost", index, points.length),
        { Day: day, Cost: dollars(point.cost) },
        `${day}: cost, the API's decimal string in dollars and cents`,
      );
    }
  });

  await t.test("under each chart, its numbers for every day as a table: the API's", async (t) => {
    const cells = (id: string) =>
      page.$$eval(`#${id} tbody tr`, (rows: any[]) =>
        rows.map((row) => [...row.cells].map((cell: any) => cell.textContent)),
      );
    const days = points.map((_, index) => `2026-11-${16 + index}`);
    t.same(
      await cells("numbers-sessions"),
      points.map((point, i) => [
        days[i],
        String(point.sessions),
        String(point.failures),
        rate(point.failures, point.sessions),
      ]),
      "sessions, failed sessions and failure rate per day",
    );
    t.same(
      await cells("numbers-cost"),
      points.map((point, i) => [days[i], dollars(point.cost)]),
      "cost per day",
    );
    await page.click("#numbers-cost >> xpath=.. >> summary");
    t.ok(await page.isVisible("#numbers-cost"), "a click on 'The numbers' shows the table");
    await page.click("#numbers-cost >> xpath=.. >> summary");
  });

  await t.test("top models by cost, slowest tools and latest failures are the API's", async (t) => {
    const models = await read("/v2/analytics/breakdown", { by: "model", sort: "cost", limit: 5, from: FROM, to: TO });
    const modelRows = await page.$$eval("#top-models tbody tr[data-key]", (rows: any[]) =>
      rows.map((row) => [...row.cells].map((cell: any) => cell.textContent)),
    );
    t.same(
      modelRows.map((cells) => [cells[0], cells[3]]),
      models.items.map((item: any) => [item.key, dollars(item.cost)]),
      "the models, most expensive first, with their costs",
    );
    t.same(
      modelRows.map((row) => row[0]),
      ["claude-3-5-sonnet", "gpt-4o", "gpt-4o-mini"],
      "the data set's three models, by price",
    );

    const tools = await read("/v2/analytics/breakdown", {
      by: "tool",
      sort: "duration_p95",
      limit: 5,
      from: FROM,
      to: TO,
    });
    const toolRows = await page.$$eval("#slow-tools tbody tr[data-key]", (rows: any[]) =>
      rows.map((row) => [...row.cells].map((cell: any) => cell.textContent)),
    );
    const expected = [];
    for (const item of tools.items) {
      expected.push([
        item.key,
        String(item.events),
        await format(page, "formatDuration", item.duration_ms.p50),
        await format(page, "formatDuration", item.duration_ms.p95),
        await format(page, "formatDuration", item.duration_ms.p99),
      ]);
    }
    t.same(toolRows, expected, "the tools, slowest p95 first, with their calls and percentiles");
    t.same(
      toolRows.map((row) => row[0]),
      ["code.run", "web.search", "db.query"],
      "code.run is the slowest tool of the data set, db.query the fastest",
    );

    const failed = await listed({ end_state: "Fail", from: FROM, to: TO, limit: 8 });
    t.same(
      await page.$$eval("#latest-failures tbody tr[data-session-id]", (rows: any[]) =>
        rows.map((row) => row.dataset.sessionId),
      ),
      failed,
      "the latest failed sessions, newest first",
    );
    await hover(page, "#chart-sessions", 3, points.length); // the screenshot shows a day's numbers
    await saveScreenshot(page, "overview.png");
  });

  await t.test("dark mode: the page and its charts in the dark palette", async (t) => {
    await page.emulateMedia({ colorScheme: "dark" });
    const background = () =>
      page.evaluate(
        () => (globalThis as any).getComputedStyle((globalThis as any).document.documentElement).backgroundColor,
      );
    t.equal(await background(), "rgb(17, 22, 29)", "the dark background");
    t.same(
      await hover(page, "#chart-sessions", 1, points.length),
      {
        Day: "2026-11-17",
        Sessions: String(points[1]?.sessions),
        Failed: String(points[1]?.failures),
        "Failure rate": rate(points[1]?.failures, points[1]?.sessions),
      },
      "the charts, drawn again, still answer the hover",
    );
    await saveScreenshot(page, "overview-dark.png");
    await page.emulateMedia({ colorScheme: "light" });
  });

  await t.test("a filter on the overview: what is drawn is the API's answer for it", async (t) => {
    await page.fill('#overview-filters input[name="tag"]', "day-3");
    await page.click('#overview-filters button[type="submit"]');
    await page.waitForURL(/tag=day-3/);
    await page.waitForSelector('#app[data-loaded="true"]');
    t.match(page.url(), /\/\?range=2026-11-16\.\.2026-11-22&tag=day-3$/, "the range and the filter in the address");
    const filter = { tag: "day-3", from: FROM, to: TO };
    const day3 = (await read("/v2/analytics/timeseries", { ...filter, bucket: "day", tz: TIMEZONE })).points as Point[];
    t.same(
      day3.map((point) => point.sessions),
      [0, 0, 0, PER_DAY[3], 0, 0, 0],
      "the API: the day-3 sessions only",
    );
    t.equal(await page.textContent('[data-total="sessions"] dd'), String(PER_DAY[3]), "the total");
    t.equal(await page.textContent('[data-total="cost"] dd'), dollars(addDecimals(day3.map((point) => point.cost))));
    const point = day3[3] as Point;
    t.same(
      await hover(page, "#chart-sessions", 3, day3.length),
      {
        Day: "2026-11-19",
        Sessions: String(point.sessions),
        Failed: String(point.failures),
        "Failure rate": rate(point.failures, point.sessions),
      },
      "the hovered day's numbers",
    );
    t.same(
      await hover(page, "#chart-sessions", 0, day3.length),
      { Day: "2026-11-16", Sessions: "0", Failed: "0", "Failure rate": "—" },
      "a day without sessions: zeros, and no rate",
    );
    const models = await read("/v2/analytics/breakdown", { ...filter, by: "model", sort: "cost", limit: 5 });
    t.same(
      await page.$$eval("#top-models tbody tr[data-key]", (rows: any[]) =>
        rows.map((row) => [row.dataset.key, row.cells[3].textContent]),
      ),
      models.items.map((item: any) => [item.key, dollars(item.cost)]),
      "the models of those sessions",
    );
    t.same(
      await page.$$eval("#latest-failures tbody tr[data-session-id]", (rows: any[]) =>
        rows.map((row) => row.dataset.sessionId),
      ),
      await listed({ ...filter, end_state: "Fail", limit: 8 }),
      "their failures",
    );
    t.match(await page.getAttribute("#all-failures", "href"), /^\/sessions\?tag=day-3&end_state=Fail&from=/);
    await page.click("#overview-filters #clear-filters");
    await page.waitForURL(/\/\?range=2026-11-16\.\.2026-11-22$/);
    await page.waitForSelector('#app[data-loaded="true"]');
    t.equal(await page.textContent('[data-total="sessions"] dd'), String(created), "Clear: every session again");
  });

  await t.test("a preset range ends today; the address keeps it", async (t) => {
    await page.click('.ranges a[data-range="7d"]');
    await page.waitForSelector('.ranges a[data-range="7d"][aria-current="page"]');
    await page.waitForSelector('#app[data-loaded="true"]');
    t.match(page.url(), /\/\?range=7d$/);
    const { from, to } = await page.evaluate(() => ({ ...(globalThis as any).document.getElementById("app").dataset }));
    t.equal((Date.parse(to) - Date.parse(from)) / 86_400_000, 7, "seven Paris days (none of DST in them here)");
    t.ok(Date.parse(to) > Date.now() && Date.parse(from) <= Date.now(), "today the last");
    const week = await read("/v2/analytics/timeseries", { bucket: "day", tz: TIMEZONE, from, to });
    const sessions = week.points.reduce((total: number, point: Point) => total + point.sessions, 0);
    t.equal(
      await page.textContent('[data-total="sessions"] dd'),
      String(sessions),
      "the totals are those of that week",
    );
    await page.goBack();
    await page.waitForSelector('#app[data-loaded="true"][data-from="2026-11-15T23:00:00.000Z"]');
    t.pass("back to the chosen days");
  });

  await t.test("a model's link opens the list filtered by it; filter, sort and search there", async (t) => {
    await page.click('#top-models a:text-is("gpt-4o")');
    await page.waitForURL(/\/sessions\?/);
    const address = new URL(page.url());
    t.same(
      [...address.searchParams],
      [
        ["model", "gpt-4o"],
        ["from", "2026-11-15T23:00:00Z"],
        ["to", "2026-11-22T23:00:00Z"],
      ],
      "the model and the overview's range, in the list's address",
    );
    const range = { from: FROM, to: TO };
    const withModel = await listed({ model: "gpt-4o", ...range });
    t.ok(withModel.length > 0 && withModel.length < created, `${withModel.length} of ${created} sessions used gpt-4o`);
    await expectRows(t, page, withModel, "the sessions that used gpt-4o, as the API lists them");
    t.equal(await page.inputValue('input[name="model"]'), "gpt-4o", "the form shows the filter");

    await page.selectOption('select[name="has_errors"]', "true");
    await page.click('#filters button[type="submit"]');
    const withErrors = await listed({ model: "gpt-4o", has_errors: "true", ...range });
    await expectRows(t, page, withErrors, "and had error events");
    t.match(page.url(), /has_errors=true/);

    await page.click('#sessions th[data-sort="cost"] button');
    await expectRows(
      t,
      page,
      await listed({ model: "gpt-4o", has_errors: "true", ...range, sort: "cost", order: "desc" }),
      "sorted by cost, highest first",
    );
    t.equal(await page.getAttribute('#sessions th[data-sort="cost"]', "aria-sort"), "descending");
    await page.click('#sessions th[data-sort="cost"] button');
    await expectRows(
      t,
      page,
      await listed({ model: "gpt-4o", has_errors: "true", ...range, sort: "cost", order: "asc" }),
      "the same header again: lowest first",
    );
    t.match(page.url(), /sort=cost&order=asc/, "the sort is in the address");

    // A shared link shows the same page: open the address afresh.
    const shared = page.url();
    await page.goto("about:blank");
    await page.goto(shared);
    await expectRows(
      t,
      page,
      await listed({ model: "gpt-4o", has_errors: "true", ...range, sort: "cost", order: "asc" }),
      "the address alone gives the same rows in the same order",
    );
    t.equal(await page.inputValue('select[name="sort"]'), "cost");
    t.equal(await page.inputValue('select[name="order"]'), "asc");

    // Full-text search (decision 023): the list shows what the API lists for q, and under each row
    // where it matched: the API's snippet, its highlights marked.
    await page.click("#clear-filters");
    await page.fill('input[name="q"]', "Upstream TIMEOUT");
    await page.click('#filters button[type="submit"]');
    const searched = await listed({ q: "Upstream TIMEOUT" });
    t.ok(searched.length > 0, "some failed sessions' reasons have the words");
    await expectRows(t, page, searched, "the search lists the API's sessions for q, in its order");
    t.match(page.url(), /q=Upstream\+TIMEOUT/, "the search is in the address");
    const rows = (await read("/v2/sessions", { limit: 200, q: "Upstream TIMEOUT" })).sessions as any[];
    for (const { session, match } of rows.slice(0, 5)) {
      t.ok(match, `${session.id}: the API says where it matched`);
      const shown = page.locator(`[data-match-for="${session.id}"]`);
      t.equal(await shown.locator(".snippet").textContent(), match.snippet, `${session.id}: its snippet`);
      t.strictSame(
        await shown.locator("mark").allTextContents(),
        (match.highlights as [number, number][]).map(([start, end]) => match.snippet.slice(start, end)),
        `${session.id}: the matched words marked`,
      );
    }
    await saveScreenshot(page, "sessions-search.png");
  });

  await t.test("a filter the form has no field for stays in the address, as a chip that removes it", async (t) => {
    await page.goto(`${base}/sessions?conversation_id=no-such-conversation&tag=overview`);
    await expectRows(t, page, [], "conversation_id is passed to the API");
    t.match(await page.textContent("#other-filters"), /conversation_id = no-such-conversation/);
    await page.click('#other-filters [data-name="conversation_id"] button');
    await expectRows(t, page, await listed({ tag: "overview" }), "removed: the tag alone");
    t.match(page.url(), /\/sessions\?tag=overview$/);
  });

  await t.test("a bad value in a shared address is the API's 400, said on the page", async (t) => {
    await page.goto(`${base}/sessions?min_cost=cheap`);
    const said = () => {
      const text = (globalThis as any).document.getElementById("message").textContent;
      return text !== "" && text !== "Loading…";
    };
    await page.waitForFunction(said).catch(() => undefined); // t.match below says what was shown
    t.match(await page.textContent("#message"), /min_cost/, "the message names the parameter");
  });

  t.same(problems, [], "no page error and no Content-Security-Policy violation during the whole run");
  await browser.close();
});
