/**
 * The session page of OpenTelemetry traces in a real browser (see test/browser.test.ts for the
 * set-up): spans nest by parent_id as a collapsible tree (otlp.md T14), with the error event of
 * an ERROR span under it (T16); the detail panel shows the span kept with each event (T15); a
 * trace whose root has not arrived runs, and its orphans and a made-up parent cycle sit at the top
 * level; a large tree keeps only the visible rows in the page. The traces are written through the
 * Store (test/browser/otlp.ts). Writes docs/screenshots/otlp-trace.png.
 */
import type { Page } from "playwright-core";
import t from "tap";
import { hashApiKey } from "../domain/keys.ts";
import {
  BIG_TREE,
  BIG_TREE_EVENTS,
  createBigTree,
  createTraces,
  EXCEPTION,
  RUNNING,
  SPAN,
  TRACE,
  XSS_ATTRIBUTE,
} from "./browser/otlp.ts";
import { chromiumMissing, openBrowser, saveScreenshot } from "./browser/page.ts";
import { API_KEY, build } from "./helper.ts";

/** The rows in the page, top to bottom: [event id, depth]. */
const tree = (page: Page) =>
  page.$$eval(".tl-row", (rows: any[]) => rows.map((row) => [row.dataset.eventId, Number(row.dataset.depth)]));

/** The left edge of each row's kind label, top to bottom: it moves right one step per level. */
const kindLefts = (page: Page) =>
  page.$$eval(".tl-row .tl-kind", (kinds: any[]) => kinds.map((kind) => Math.round(kind.getBoundingClientRect().left)));

/** The attributes table under this selector, as [key, value] pairs. */
const attributes = (page: Page, selector: string) =>
  page.$$eval(`${selector} tr`, (rows: any[]) =>
    rows.map((row) => [row.querySelector("th").textContent, row.querySelector("td").textContent]),
  );

/** The detail panel's fact by its name. */
const fact = (page: Page, name: string) =>
  page.$$eval(
    "#detail .facts dt",
    (dts: any[], wanted) => dts.find((dt) => dt.textContent === wanted)?.nextElementSibling.textContent ?? null,
    name,
  );

const toggleOf = (id: string) => `.tl-row[data-event-id="${id}"] .tl-toggle`;

t.test("OpenTelemetry traces in headless Chromium", { skip: chromiumMissing }, async (t) => {
  let base = "";
  const env = await build(t, { publicUrl: () => base });
  base = await env.app.listen({ port: 0, host: "127.0.0.1" });
  const projectId = (await env.store.apiKeyByHash(hashApiKey(API_KEY)))?.project_id as string;
  await createTraces(env.store, projectId);
  await createBigTree(env.store, projectId);

  const { browser, page, problems } = await openBrowser(t);
  await page.goto(`${base}/sessions/${TRACE}`);
  await page.fill("#api-key", API_KEY);
  await page.press("#api-key", "Enter");

  await t.test("the spans nest by parent_id: children under their parent, siblings by start", async (t) => {
    await page.waitForSelector('#timeline-list[data-count="7"]');
    t.equal(await page.getAttribute("#timeline-list", "role"), "tree", "an ARIA tree");
    t.same(
      await tree(page),
      [
        [SPAN.root, 0],
        [SPAN.agent, 1],
        [SPAN.llm1, 2],
        [SPAN.search, 2],
        [EXCEPTION, 3],
        [SPAN.llm2, 2],
        [SPAN.calc, 3],
      ],
      "root, agent, its three children in start order, the ERROR span's exception and the grandchild under theirs",
    );
    const lefts = await kindLefts(page);
    const depths = [0, 1, 2, 2, 3, 2, 3];
    const step = (lefts[1] as number) - (lefts[0] as number);
    t.ok(step >= 10, `one level is indented ${step}px`);
    t.same(
      lefts.map((left) => left - (lefts[0] as number)),
      depths.map((depth) => depth * step),
      "each row indented by its depth",
    );
    const toggles = await page.$$eval(".tl-toggle", (buttons: any[]) =>
      buttons.map((button) => [button.closest(".tl-row").dataset.eventId, button.getAttribute("aria-expanded")]),
    );
    t.same(
      toggles,
      [SPAN.root, SPAN.agent, SPAN.search, SPAN.llm2].map((id) => [id, "true"]),
      "a disclosure button, expanded, on each row with children and on no other",
    );
    t.equal(await page.getAttribute(`.tl-row[data-event-id="${SPAN.calc}"]`, "aria-level"), "4");
    t.equal(await page.getAttribute("#session-state .badge", "data-state"), "Success", "the root has ended it");
  });

  await t.test("collapsing hides the subtree, expanding shows it again; by mouse and by keyboard", async (t) => {
    await page.click(toggleOf(SPAN.agent));
    await page.waitForSelector('#timeline-list[data-count="2"]');
    t.same(
      await tree(page),
      [
        [SPAN.root, 0],
        [SPAN.agent, 1],
      ],
      "the agent's five descendants are gone",
    );
    t.equal(await page.getAttribute(toggleOf(SPAN.agent), "aria-expanded"), "false");
    await page.click(toggleOf(SPAN.agent));
    await page.waitForSelector('#timeline-list[data-count="7"]');
    t.equal(await page.getAttribute(toggleOf(SPAN.agent), "aria-expanded"), "true", "and back");
    t.equal(await page.getAttribute(toggleOf(SPAN.search), "aria-expanded"), "true", "the inner state is kept");

    await page.click(`.tl-row[data-event-id="${SPAN.llm2}"] .tl-name`);
    await page.waitForSelector(`#detail[data-event-id="${SPAN.llm2}"]`);
    await page.keyboard.press("ArrowLeft");
    await page.waitForSelector('#timeline-list[data-count="6"]');
    t.pass("ArrowLeft collapses the selected row");
    await page.keyboard.press("ArrowLeft");
    await page.waitForSelector(`#detail[data-event-id="${SPAN.agent}"]`);
    t.pass("and then selects its parent");
    await page.keyboard.press("Tab");
    t.equal(
      await page.evaluate(() => (globalThis as any).document.activeElement.closest(".tl-row")?.dataset.eventId),
      SPAN.agent,
      "Tab reaches the selected row's disclosure button",
    );
    await page.keyboard.press("Enter");
    await page.waitForSelector('#timeline-list[data-count="2"]');
    t.equal(
      await page.evaluate(() => (globalThis as any).document.activeElement.getAttribute("aria-expanded")),
      "false",
      "Enter on the button collapses, and the button keeps the focus",
    );
    await page.keyboard.press("Space");
    await page.waitForSelector('#timeline-list[data-count="6"]');
    t.pass("Space expands again (the inner collapsed row stays collapsed)");
    await page.focus("#timeline-list");
    await page.keyboard.press("End");
    await page.waitForSelector(`#detail[data-event-id="${SPAN.llm2}"]`);
    await page.keyboard.press("ArrowRight");
    await page.waitForSelector('#timeline-list[data-count="7"]');
    t.pass("ArrowRight expands");

    await page.click(`.tl-row[data-event-id="${EXCEPTION}"] .tl-name`);
    await page.waitForSelector(`#detail[data-event-id="${EXCEPTION}"]`);
    await page.click(toggleOf(SPAN.search));
    await page.waitForSelector(`#detail[data-event-id="${SPAN.search}"]`);
    t.pass("collapsing the selected event's parent selects the parent");
    await page.click(toggleOf(SPAN.search));
    await page.waitForSelector('#timeline-list[data-count="7"]');
  });

  await t.test("the detail panel shows the span: kind, status, scope, attributes, span events", async (t) => {
    await page.click(`.tl-row[data-event-id="${SPAN.search}"] .tl-name`);
    await page.waitForSelector(`#detail[data-event-id="${SPAN.search}"] #span-attributes`);
    t.equal(await fact(page, "Span name"), "execute_tool web.search");
    t.equal(await fact(page, "Span kind"), "INTERNAL");
    t.equal(await fact(page, "Status"), "ERROR: rate limited by the search API");
    t.equal(await fact(page, "Scope"), "opentelemetry.instrumentation.openai 0.40.2");
    t.equal(await fact(page, "Parent"), SPAN.agent, "its parent span, as a link");
    t.same(await attributes(page, "#span-attributes"), [
      ["gen_ai.tool.name", "web.search"],
      ["retry", "true"],
    ]);
    t.match(
      await page.textContent("#span-events"),
      /exception\s*2026-11-22 09:00:02\.950000 \(\+950 ms\)/,
      "the span event's name, time and offset",
    );
    t.same(await attributes(page, "#span-events"), [
      ["exception.type", "RateLimitError"],
      ["exception.message", "429 Too Many Requests"],
    ]);
    t.notOk(await page.getAttribute("#span-resource", "open"), "the resource is collapsed");
    t.notMatch(await page.textContent("#detail"), /Other fields/, "the span is not repeated as raw JSON");
    await page.evaluate(() => (globalThis as any).scrollTo(0, 0));
    await saveScreenshot(page, "otlp-trace.png");
    await page.click("#span-resource summary");
    t.match(await page.textContent("#span-resource"), /service\.name\s*shop-agent/, "and opens");

    await page.click(`.tl-row[data-event-id="${SPAN.llm1}"] .tl-name`);
    await page.waitForSelector(`#detail[data-event-id="${SPAN.llm1}"] #span-attributes`);
    t.equal(await fact(page, "Span kind"), "CLIENT");
    t.equal(await fact(page, "Status"), "UNSET");
    const attrs = Object.fromEntries(await attributes(page, "#span-attributes"));
    t.equal(attrs["gen_ai.usage.input_tokens"], "120");
    t.equal(attrs["gen_ai.request.stop_sequences"], '["END"]', "an array as compact JSON");
    t.equal(attrs["app.note"], XSS_ATTRIBUTE, "markup in an attribute stays text");
    t.equal(await page.locator("#detail img, #detail script").count(), 0, "no element was made from it");
    t.equal(await page.evaluate(() => typeof (globalThis as any).__xss), "undefined", "nothing ran");

    await page.click("#detail .parent-link");
    await page.waitForSelector(`#detail[data-event-id="${SPAN.agent}"]`);
    t.pass("the parent link selects the parent span");
    await page.click(`.tl-row[data-event-id="${EXCEPTION}"] .tl-name`);
    await page.waitForSelector(`#detail[data-event-id="${EXCEPTION}"]`);
    t.equal(await fact(page, "Error type"), "RateLimitError");
    await page.click("#detail .trigger-link");
    await page.waitForSelector(`#detail[data-event-id="${SPAN.search}"]`);
    t.pass("the error's trigger selects its span");
  });

  await t.test("a trace without its root runs; orphans and a parent cycle are at the top level", async (t) => {
    await page.goto(`${base}/sessions/${RUNNING}`);
    await page.waitForSelector('#timeline-list[data-count="4"]');
    t.equal(await page.getAttribute("#session-state .badge", "data-state"), "Running", "no end_state: running");
    t.ok(await page.isVisible("#live"), "and live, refreshing by itself");
    t.same(
      await tree(page),
      [
        ["0000000000000001", 0],
        ["0000000000000002", 0],
        ["0000000000000004", 1],
        ["0000000000000003", 0],
      ],
      "a parent not in the session: top level; o2 ↔ o3 cycle: both top level, o4 under o2",
    );
  });

  await t.test("a large tree keeps only the visible rows in the page, expanded or collapsed", async (t) => {
    await page.goto(`${base}/sessions/${BIG_TREE}`);
    await page.waitForSelector(`#timeline-list[data-count="${BIG_TREE_EVENTS}"]`, { timeout: 60_000 });
    const rows = await page.locator(".tl-row").count();
    t.ok(rows > 0 && rows < 100, `${rows} rows in the page for ${BIG_TREE_EVENTS} events`);
    await page.focus("#timeline-list");
    await page.keyboard.press("End");
    await page.waitForSelector('.tl-row.selected[data-event-id="00000000000009f7"]');
    t.equal(await page.getAttribute(".tl-row.selected", "aria-level"), "501", "the deepest span is last, level 501");
    t.ok((await page.locator(".tl-row").count()) < 100, "still only the visible rows");
    await page.keyboard.press("Home");
    await page.waitForSelector('.tl-row.selected[data-event-id="0000000000000001"]');
    await page.keyboard.press("ArrowLeft");
    await page.waitForSelector('#timeline-list[data-count="1"]');
    t.pass("collapsing the root leaves one row");
    await page.keyboard.press("ArrowRight");
    await page.waitForSelector(`#timeline-list[data-count="${BIG_TREE_EVENTS}"]`);
    await page.uncheck('#legend input[data-kind="action"]');
    await page.waitForSelector(`#timeline-list[data-count="${BIG_TREE_EVENTS - 51}"]`);
    t.equal(
      await page.getAttribute(".tl-row", "data-depth"),
      "0",
      "hiding a kind lifts the children of its events to their level",
    );
  });

  t.same(problems, [], "no page error and no Content-Security-Policy violation during the whole run");
  await browser.close();
});
