/**
 * Scores in a real browser (issue 25, decision 037 "UI"): sessions, events, score configs and
 * scores seeded through the API; a signed-in annotator sees the session's scores, gives a thumbs
 * up on the session and a config's label on an event from the detail panel, and both read back
 * through GET /v2/scores as annotations by that person; a viewer sees no annotation control and a
 * forged fetch from their page is refused (403); the sessions page filters by score and keeps the
 * filter in the address; the overview's score panel counts the score over the range. Scores'
 * comments and labels carry an XSS probe: it stays text. Every wait is for a selector or a
 * condition. Screenshots go to docs/screenshots/scores-*.png.
 */
import t from "tap";
import { chromiumMissing, expectRows, openBrowser, saveScreenshot } from "./browser/page.ts";
import { API_KEY, build } from "./helper.ts";
import { PASSWORD, person } from "./people.helpers.ts";

const XSS = `<img src=x onerror="window.__xss=1"><script>window.__xss=2</script>`;

t.test(
  "scores on the session, sessions and overview pages in headless Chromium",
  { skip: chromiumMissing },
  async (t) => {
    let base = "";
    const env = await build(t, { publicUrl: () => base });
    base = await env.app.listen({ port: 0, host: "127.0.0.1" });
    const key = { "x-agentmon-api-key": API_KEY };
    const call = async (method: "POST" | "PUT" | "GET", url: string, body?: unknown) => {
      const res = await env.app.inject({
        method,
        url,
        headers: body === undefined ? key : { ...key, "content-type": "application/json" },
        ...(body === undefined ? {} : { payload: JSON.stringify(body) }),
      });
      if (res.statusCode !== 200) throw new Error(`${method} ${url} answered ${res.statusCode}: ${res.body}`);
      return res.json() as Record<string, any>;
    };

    // Three sessions (ended, so that the page does not poll), two events in the first.
    const now = Date.now();
    const at = (ms: number) => new Date(now - 3_600_000 + ms).toISOString();
    const jwt = await env.session("scored-1", { init_timestamp: at(0), end_timestamp: at(5000), end_state: "Success" });
    await env.withJwt(
      "/v2/create_events",
      {
        events: [
          { type: "llm", id: "llm-1", init_timestamp: at(100), end_timestamp: at(900), model: "gpt-4o", prompt: "Hi" },
          { type: "tool", id: "tool-1", init_timestamp: at(1000), end_timestamp: at(1500), name: "search" },
        ],
      },
      jwt,
    );
    await env.session("scored-2", { init_timestamp: at(10_000), end_timestamp: at(11_000), end_state: "Fail" });
    await env.session("unscored-3", { init_timestamp: at(20_000), end_timestamp: at(21_000), end_state: "Success" });
    await call("PUT", "/v2/score-configs/quality", { data_type: "categorical", categories: ["good", "bad", XSS] });
    await call("PUT", "/v2/score-configs/helpfulness", { data_type: "numeric", min: 0, max: 1 });
    await call("POST", "/v2/scores", {
      scores: [
        { id: "s-help-1", name: "helpfulness", value: 0.9, session_id: "scored-1", source: "eval", comment: XSS },
        { id: "s-quality-1", name: "quality", value: "good", session_id: "scored-1", event_id: "llm-1" },
        { id: "s-help-2", name: "helpfulness", value: 0.2, session_id: "scored-2", source: "eval" },
      ],
    });
    const anna = await person(env.store, "anna@example.com", { roles: [["default", "annotator"]] });
    await person(env.store, "vic@example.com", { roles: [["default", "viewer"]] });

    const { browser, page, problems } = await openBrowser(t);
    const signIn = async (p: typeof page, email: string) => {
      await p.waitForSelector("#sign-in-form");
      await p.fill("#sign-in-email", email);
      await p.fill("#sign-in-password", PASSWORD);
      await p.click("#sign-in-form button[type=submit]");
      await p.waitForSelector("#forget-key >> text=/Sign out/");
    };

    await t.test("the annotator sees the session's scores, as text", async (t) => {
      await page.goto(`${base}/sessions/scored-1`);
      await signIn(page, "anna@example.com");
      await page.waitForSelector('#scores tr[data-score-id="s-help-1"]');
      t.equal(await page.getAttribute("#scores", "data-count"), "2");
      t.equal(
        await page.textContent('#scores tr[data-score-id="s-help-1"] .score-comment'),
        XSS,
        "the comment as text",
      );
      t.equal(await page.textContent('#scores tr[data-score-id="s-help-1"] .score-value'), "0.9");
      t.equal(await page.textContent('#scores tr[data-score-id="s-quality-1"] .score-target'), "event llm-1");
      t.equal(await page.locator("#scores img").count(), 0, "no element made from the comment");
      t.ok(await page.isVisible("#session-annotate .thumbs-up"), "the annotation form is shown");
      await saveScreenshot(page, "scores-session.png");
    });

    await t.test("a thumbs up on the session with a comment", async (t) => {
      await page.fill("#session-score-comment", "Solved it <b>fast</b>");
      await page.click("#session-annotate .thumbs-up");
      await page.waitForSelector('#scores tr[data-name="thumbs"]');
      t.equal(await page.textContent('#scores tr[data-name="thumbs"] .score-value'), "up");
      t.equal(await page.textContent('#scores tr[data-name="thumbs"] .score-comment'), "Solved it <b>fast</b>");
      t.equal(await page.textContent('#scores tr[data-name="thumbs"] .score-source'), "annotation");
    });

    await t.test("a label on an event from the detail panel", async (t) => {
      await page.click('.tl-row[data-event-id="llm-1"]');
      await page.waitForSelector('#event-score-list tr[data-score-id="s-quality-1"]');
      await page.click('.tl-row[data-event-id="tool-1"]');
      await page.waitForSelector("#event-score-list >> text=/No scores of this event/");
      await page.selectOption("#event-score-config", "quality");
      t.ok(await page.isVisible(`#event-scores button.score-label[data-label="bad"]`), "the config's labels");
      t.equal(await page.locator("#event-scores button.score-label").count(), 3);
      await page.fill("#event-score-comment", "wrong tool");
      await page.click('#event-scores button.score-label[data-label="bad"]');
      await page.waitForSelector('#event-score-list tr[data-name="quality"]');
      t.equal(await page.textContent('#event-score-list tr[data-name="quality"] .score-value'), "bad");
      await page.waitForSelector('#scores tr[data-name="quality"][data-source="annotation"]');
      await page.locator("#detail").scrollIntoViewIfNeeded();
      await saveScreenshot(page, "scores-annotate.png");

      const stored = await call("GET", "/v2/scores?session_id=scored-1&source=annotation");
      const byName = Object.fromEntries(stored.scores.map((s: any) => [s.name, s]));
      t.same(Object.keys(byName).sort(), ["quality", "thumbs"]);
      t.match(byName.thumbs, {
        value: true,
        data_type: "boolean",
        event_id: null,
        source: "annotation",
        comment: "Solved it <b>fast</b>",
        author: { type: "person", id: anna.id },
      });
      t.match(byName.quality, {
        value: "bad",
        event_id: "tool-1",
        source: "annotation",
        comment: "wrong tool",
        author: { type: "person", id: anna.id },
      });
    });

    await t.test("a number out of the config's range is not sent", async (t) => {
      await page.selectOption("#event-score-config", "helpfulness");
      await page.fill("#event-scores .score-number", "7");
      await page.click("#event-scores .score-save");
      await page.waitForSelector('#event-scores .annotate-status[data-state="error"]');
      const stored = await call("GET", "/v2/scores?session_id=scored-1&name=helpfulness");
      t.equal(stored.scores.length, 1, "nothing stored");
      await page.fill("#event-scores .score-number", "0.75");
      await page.click("#event-scores .score-save");
      await page.waitForSelector('#event-score-list tr[data-name="helpfulness"]');
      t.equal(await page.textContent('#event-score-list tr[data-name="helpfulness"] .score-value'), "0.75");
    });

    const viewerContext = await browser.newContext({ viewport: { width: 1280, height: 800 } });
    t.teardown(() => viewerContext.close());
    const viewer = await viewerContext.newPage();
    viewer.setDefaultTimeout(20_000);
    await t.test("a viewer sees the scores without any annotation control; a forged POST is a 403", async (t) => {
      await viewer.goto(`${base}/sessions/scored-1`);
      await signIn(viewer, "vic@example.com");
      await viewer.waitForSelector('#scores tr[data-name="thumbs"]');
      await viewer.click('.tl-row[data-event-id="tool-1"]');
      await viewer.waitForSelector('#event-score-list tr[data-name="quality"]');
      t.equal(await viewer.locator(".annotate, .thumbs-up, .score-label").count(), 0, "no control");
      const status = await viewer.evaluate(async () => {
        const me = (await (await fetch("/v2/auth/me")).json()) as { csrf_token: string };
        const res = await fetch("/v2/scores", {
          method: "POST",
          headers: {
            "content-type": "application/json",
            "x-csrf-token": me.csrf_token,
            "x-agentmon-project": "default",
          },
          body: JSON.stringify({
            scores: [{ name: "thumbs", value: false, session_id: "scored-1", source: "annotation" }],
          }),
        });
        return res.status;
      });
      t.equal(status, 403, "refused");
      const stored = await call("GET", "/v2/scores?session_id=scored-1&name=thumbs");
      t.equal(stored.scores.length, 1, "only the annotator's thumbs");
    });

    await t.test("the sessions page filters by a score, and a reload keeps the filter", async (t) => {
      await page.goto(`${base}/sessions`);
      await expectRows(t, page, ["unscored-3", "scored-2", "scored-1"], "every session first");
      await page.fill("#filters input[name=score_name]", "helpfulness");
      await page.fill("#filters input[name=score_value]", "0.5..1");
      await page.click('#filters button[type="submit"]');
      await expectRows(t, page, ["scored-1"], "helpfulness in 0.5..1");
      t.match(page.url(), /score\.helpfulness=0\.5\.\.1/, "in the address");
      await page.reload();
      await expectRows(t, page, ["scored-1"], "after a reload");
      t.equal(await page.inputValue("#filters input[name=score_name]"), "helpfulness");
      t.equal(await page.inputValue("#filters input[name=score_value]"), "0.5..1");
      await page.fill("#filters input[name=score_value]", "-");
      await page.click('#filters button[type="submit"]');
      await expectRows(t, page, ["unscored-3"], "without the score");
      await page.fill("#filters input[name=score_name]", "thumbs");
      await page.fill("#filters input[name=score_value]", "true");
      await page.click('#filters button[type="submit"]');
      await expectRows(t, page, ["scored-1"], "thumbs up");
      t.equal(await page.locator("#other-filters .other-filter").count(), 0, "not a chip as well");
    });

    await t.test("the overview's score panel: count and mean per day of a chosen score", async (t) => {
      await page.goto(`${base}/`);
      await page.waitForSelector("#score-name option[value=helpfulness]", { state: "attached" });
      await page.selectOption("#score-name", "helpfulness");
      await page.waitForSelector('#score-panel[data-loaded="true"][data-name="helpfulness"]');
      t.match(page.url(), /score=helpfulness/, "the choice is in the address");
      t.equal(await page.getAttribute("#score-panel", "data-count"), "3");
      t.match(await page.textContent("#score-summary"), /3 scores.*mean 0\.617/);
      t.ok(await page.isVisible("#chart-score canvas"), "a chart");
      await page.locator("#score-panel").scrollIntoViewIfNeeded();
      await saveScreenshot(page, "scores-overview.png");
      await page.reload();
      await page.waitForSelector('#score-panel[data-loaded="true"][data-name="helpfulness"]');
      t.equal(await page.inputValue("#score-name"), "helpfulness", "kept by a reload");
    });

    t.same(await page.evaluate(() => (globalThis as any).__xss), undefined, "no injected script ran");
    t.same(problems, [], "no page error, no CSP violation");
  },
);
