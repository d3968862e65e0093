/**
 * What the browser tests (test/browser*.test.ts) share: Chromium's launch, what they read from
 * the page, and the README screenshots they write.
 */
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { type Browser, chromium, type Page } from "playwright-core";
import type { Test } from "tap";

export const SCREENSHOTS = new URL("../../docs/screenshots/", import.meta.url);

const CHROMIUM = "/usr/bin/chromium";

/** Why a browser test is skipped (no Chromium), or false. */
export const chromiumMissing = existsSync(CHROMIUM)
  ? false
  : `Chromium is not installed at ${CHROMIUM}, so the browser test is skipped: install Debian's package with \`apt-get install -y chromium\` (.ci/run does) to run it`;

/**
 * Headless Chromium with one 1280 × 800 page, closed when the test ends; `problems` collects
 * every page error and Content-Security-Policy violation, for the test to assert there is none.
 */
export async function openBrowser(t: Test, options: { timezoneId?: string } = {}) {
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
      // No name is resolved: a page that asks another host (oidc-provider's development pages
      // link a web font) fails at once, and no DNS query leaves the machine.
      "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.*",
    ],
  });
  t.teardown(() => browser.close());
  const context = await browser.newContext({
    viewport: { width: 1280, height: 800 },
    deviceScaleFactor: 1,
    ...options,
  });
  const page = await context.newPage();
  page.setDefaultTimeout(20_000);
  const problems: string[] = [];
  page.on("pageerror", (error) => problems.push(`page error: ${error.message}`));
  page.on("console", (message) => {
    if (/Content Security Policy|Refused to/i.test(message.text())) problems.push(`CSP: ${message.text()}`);
  });
  mkdirSync(SCREENSHOTS, { recursive: true });
  return { browser, page, problems };
}

/** The session ids the sessions table shows, in order. */
const listed = (page: Page) =>
  page.$$eval("#sessions tbody tr[data-session-id]", (rows: any[]) =>
    rows.map((row) => row.dataset.sessionId as string),
  );

/** Waits until the table shows these sessions (a new page replaces the old one), then asserts it. */
export async function expectRows(t: Test, page: Page, ids: string[], message: string) {
  // A function, not a string: the page's CSP forbids evaluating strings, and Playwright would.
  const shows = (want: string) => {
    const rows = (globalThis as any).document.querySelectorAll("#sessions tbody tr[data-session-id]");
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
export async function saveScreenshot(page: Page, name: string) {
  const file = new URL(name, SCREENSHOTS);
  const png = await page.screenshot();
  const browser = page.context().browser();
  if (browser && existsSync(file) && (await differentPixels(browser, readFileSync(file), png)) <= 500) return;
  writeFileSync(file, png);
}

/** The kinds of the timeline rows in the page, top to bottom. */
export const timelineKinds = (page: Page) =>
  page.$$eval(".tl-row", (rows: any[]) => rows.map((row) => row.dataset.kind));

/** The API key the page keeps, or null. */
export const keptKey = (page: Page) =>
  page.evaluate(() => (globalThis as any).sessionStorage.getItem("agentmon.apiKey"));
