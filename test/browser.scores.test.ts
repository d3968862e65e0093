/**
 * Scores in a real browser (issue 25, decision 037 "UI"): sessions, events, score configs and
 * scores seeded through the API; a signed-in annotator sees the session's scores, gives a thumbs
 * up on the session and a config's label on an event from the detail panel, and both read back
 * through GET /v2/scores as annotations by that person; a viewer sees no annotation control and a
 * forged fetch from their page is refused (403); the sessions page filters by score and keeps the
 * filter in the address; the overview's score panel shows a chosen score per day and by model,
 * agent, tag or tool (GET /v2/analytics/scores and its breakdown), checked against numbers this
 * test computes from the scores it sent (a categorical score's chart: each label's count per day,
 * read from its legend), its "The numbers" only once a score is chosen, and its chart's ticks fall
 * on days. Scores' comments and labels carry an XSS probe: it stays text. Every wait is for a
 * selector or a condition. Screenshots go to docs/screenshots/scores-*.png.
 */
import t, { type Test } from "tap";
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
      await page.waitForSelector('#score-panel[data-loaded="true"][data-name=""]', { state: "attached" });
      t.notOk(await page.isVisible("#score-panel .chart-numbers"), "no score chosen: no numbers toggle");
      t.notOk(await page.isVisible("#chart-score"), "nor a chart");
      await page.selectOption("#score-name", "helpfulness");
      await page.waitForSelector('#score-panel[data-loaded="true"][data-name="helpfulness"]');
      t.match(page.url(), /score=helpfulness/, "the choice is in the address");
      t.equal(await page.getAttribute("#score-panel", "data-count"), "3");
      t.match(await page.textContent("#score-summary"), /3 scores.*mean 0\.617/);
      t.ok(await page.isVisible("#chart-score canvas"), "a chart");
      t.ok(await page.isVisible("#score-panel .chart-numbers summary"), "the numbers toggle once a score is chosen");
      await page.reload();
      await page.waitForSelector('#score-panel[data-loaded="true"][data-name="helpfulness"]');
      t.equal(await page.inputValue("#score-name"), "helpfulness", "kept by a reload");
      t.ok(await page.isVisible("#score-panel .chart-numbers summary"), "and the toggle with it");
      await page.selectOption("#score-name", "");
      await page.waitForSelector('#score-panel[data-loaded="true"][data-name=""]', { state: "attached" });
      t.notOk(await page.isVisible("#score-panel .chart-numbers"), "no score again: no toggle");
      t.notMatch(page.url(), /score=/, "nor a score in the address");
    });

    // The panel against numbers computed here from the scores sent: four sessions with two models,
    // two agents, two tools and six tags; a numeric, a boolean and a categorical score over days.
    type Ev = { type: "llm" | "tool"; model?: string; name?: string; agent?: string };
    const SESSIONS: Record<string, { tags: string[]; events: Record<string, Ev> }> = {
      "panel-1": {
        tags: ["alpha", "beta"],
        events: {
          "p1-llm": { type: "llm", model: "gpt-4o", agent: "planner" },
          "p1-tool": { type: "tool", name: "search", agent: "planner" },
        },
      },
      "panel-2": {
        tags: ["beta", "gamma", "delta"],
        events: {
          "p2-llm-a": { type: "llm", model: "gpt-4o", agent: "writer" },
          "p2-llm-b": { type: "llm", model: "claude-3-5-sonnet", agent: "writer" },
          "p2-tool": { type: "tool", name: "fetch" },
        },
      },
      "panel-3": { tags: ["epsilon", "zeta"], events: { "p3-llm": { type: "llm", model: "claude-3-5-sonnet" } } },
      "panel-4": { tags: [], events: { "p4-tool": { type: "tool", name: "search" } } },
    };
    type Sent = { name: string; value: number | boolean | string; session: string; event?: string; daysAgo: number };
    const SENT: Sent[] = [
      { name: "accuracy", value: 0.5, session: "panel-1", daysAgo: 0 },
      { name: "accuracy", value: 1, session: "panel-1", event: "p1-llm", daysAgo: 1 },
      { name: "accuracy", value: 0.25, session: "panel-1", event: "p1-tool", daysAgo: 0 },
      { name: "accuracy", value: 0.25, session: "panel-2", event: "p2-llm-b", daysAgo: 1 },
      { name: "accuracy", value: 0.75, session: "panel-2", daysAgo: 4 },
      { name: "accuracy", value: 0, session: "panel-3", daysAgo: 4 },
      { name: "accuracy", value: 0.5, session: "panel-4", event: "p4-tool", daysAgo: 0 },
      { name: "resolved", value: true, session: "panel-1", daysAgo: 0 },
      { name: "resolved", value: false, session: "panel-2", event: "p2-llm-a", daysAgo: 0 },
      { name: "resolved", value: true, session: "panel-2", daysAgo: 1 },
      { name: "resolved", value: false, session: "panel-3", daysAgo: 4 },
      { name: "resolved", value: true, session: "panel-4", daysAgo: 4 },
      { name: "resolved", value: true, session: "panel-1", event: "p1-tool", daysAgo: 4 },
      { name: "tone", value: "polite", session: "panel-1", daysAgo: 0 },
      { name: "tone", value: "polite", session: "panel-2", daysAgo: 0 },
      { name: "tone", value: "rude", session: "panel-2", event: "p2-llm-b", daysAgo: 1 },
      { name: "tone", value: "polite", session: "panel-3", daysAgo: 1 },
      { name: "tone", value: "neutral", session: "panel-4", daysAgo: 4 },
      { name: "tone", value: "rude", session: "panel-1", event: "p1-llm", daysAgo: 4 },
    ];
    const DAY_MS = 86_400_000;
    const sentAt = (score: Sent) => new Date(now - score.daysAgo * DAY_MS - 60_000);

    /** The groups a score counts in (decision 037): its event's, else every one of its session. */
    const groupsOf = (score: Sent, by: string): (string | null)[] => {
      const session = SESSIONS[score.session] as (typeof SESSIONS)[string];
      const event = score.event ? session.events[score.event] : undefined;
      const events = Object.values(session.events);
      const all = (keys: (string | undefined)[]) => {
        const found = [...new Set(keys.filter((key) => key !== undefined))] as string[];
        return found.length > 0 ? found : [null];
      };
      if (by === "model")
        return event?.type === "llm"
          ? [event.model ?? null]
          : all(events.map((e) => (e.type === "llm" ? e.model : undefined)));
      if (by === "tool")
        return event?.type === "tool"
          ? [event.name ?? null]
          : all(events.map((e) => (e.type === "tool" ? e.name : undefined)));
      if (by === "agent") return event?.agent ? [event.agent] : all(events.map((e) => e.agent));
      return all(session.tags);
    };
    /** What the page writes for a set of scores of one kind: [count, mean | pass rate | top labels]. */
    const short = (n: number) => String(Number(n.toFixed(3)));
    const measures = (scores: Sent[]) => {
      if (scores.length === 0) return ["0", "—"];
      const values = scores.map((s) => s.value);
      if (typeof values[0] === "number") {
        return [String(scores.length), short((values as number[]).reduce((a, b) => a + b, 0) / values.length)];
      }
      if (typeof values[0] === "boolean") {
        return [String(scores.length), `${short((values.filter((v) => v === true).length / values.length) * 100)}%`];
      }
      const labels = new Map<string, number>();
      for (const v of values as string[]) labels.set(v, (labels.get(v) ?? 0) + 1);
      const top = [...labels]
        .sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1))
        .slice(0, 3)
        .map(([label, n]) => `${label} ${n}`);
      return [String(scores.length), top.join(", ")];
    };
    /** The by-table the page should show: the top 5 groups by count (ties by key, none last), then the rest. */
    const expectedBreakdown = (name: string, by: string) => {
      const groups = new Map<string | null, Sent[]>();
      for (const score of SENT.filter((s) => s.name === name)) {
        for (const key of groupsOf(score, by)) groups.set(key, [...(groups.get(key) ?? []), score]);
      }
      const ranked = [...groups].sort(
        (a, b) =>
          b[1].length - a[1].length ||
          (a[0] === null ? 1 : b[0] === null ? -1 : a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0),
      );
      const rows = ranked.slice(0, 5).map(([key, scores]) => [key ?? "", key ?? "(none)", ...measures(scores)]);
      const rest = ranked.slice(5).flatMap(([, scores]) => scores);
      if (rest.length > 0) rows.push(["other", `Other ${by}s`, ...measures(rest)]);
      return rows;
    };
    const shownBreakdown = () =>
      page.$$eval("#score-breakdown tbody tr", (rows: any[]) =>
        rows.map((row) => [
          row.classList.contains("other") ? "other" : row.dataset.key,
          ...[...row.cells].map((cell: any) => cell.textContent),
        ]),
      );
    /** The daily numbers the page should show for each day of its range, in the page's zone. */
    const dayOf = (date: Date, tz: string) =>
      new Intl.DateTimeFormat("en-CA", { timeZone: tz, year: "numeric", month: "2-digit", day: "2-digit" }).format(
        date,
      );
    const expectedDays = async (name: string) => {
      const days = await page.$$eval("#numbers-score tbody tr", (rows: any[]) =>
        rows.map((row) => row.cells[0].textContent),
      );
      const tz = (await page.getAttribute("#app", "data-tz")) as string;
      const scores = SENT.filter((s) => s.name === name);
      const labels = [...new Set(scores.map((s) => s.value).filter((v) => typeof v === "string"))].sort() as string[];
      return days.map((day: string) => {
        const those = scores.filter((s) => dayOf(sentAt(s), tz) === day);
        if (labels.length > 0) {
          return [day, String(those.length), ...labels.map((l) => String(those.filter((s) => s.value === l).length))];
        }
        return [day, ...measures(those)];
      });
    };
    const shownDays = () =>
      page.$$eval("#numbers-score tbody tr", (rows: any[]) =>
        rows.map((row) => [...row.cells].map((cell: any) => cell.textContent)),
      );
    /** The score chart's legend rows, [label, value], the pointer on the index-th of `days` bars. */
    const legendOn = async (index: number, days: string[]) => {
      const over = page.locator("#chart-score .u-over");
      const box = await over.boundingBox();
      if (!box) throw new Error("no chart");
      await over.hover({ position: { x: ((index + 0.5) / days.length) * box.width, y: box.height / 2 } });
      await page.waitForFunction(
        (day) =>
          (globalThis as any).document.querySelector("#chart-score .u-legend .u-series .u-value")?.textContent === day,
        days[index],
      );
      return page.$$eval("#chart-score .u-legend .u-series", (rows: any[]) =>
        rows.map((row) => [row.querySelector(".u-label").textContent, row.querySelector(".u-value").textContent]),
      );
    };
    const legendLabels = () =>
      page.$$eval("#chart-score .u-legend .u-series .u-label", (labels: any[]) => labels.map((l) => l.textContent));
    const panelLoaded = (name: string, by: string) =>
      page.waitForSelector(`#score-panel[data-loaded="true"][data-name="${name}"] #score-breakdown[data-by="${by}"]`, {
        state: "attached",
      });
    const checkPanel = async (t: Test, name: string, by: string) => {
      await panelLoaded(name, by);
      const days = await expectedDays(name);
      t.ok(days.length >= 30, "every day of the range");
      t.same(await shownDays(), days, `${name}: the numbers per day`);
      t.ok(
        days.some((row) => row[1] !== "0"),
        "some day has scores",
      );
      t.equal(
        await page.getAttribute("#score-panel", "data-count"),
        String(SENT.filter((s) => s.name === name).length),
      );
      t.same(await shownBreakdown(), expectedBreakdown(name, by), `${name} by ${by}`);
    };

    await t.test(
      "the score panel per day and by model, agent, tag and tool, as computed from the scores sent",
      async (t) => {
        for (const [id, session] of Object.entries(SESSIONS)) {
          const jwt = await env.session(id, {
            init_timestamp: at(30_000),
            end_timestamp: at(31_000),
            end_state: "Success",
            tags: session.tags,
          });
          await env.withJwt(
            "/v2/create_events",
            {
              events: Object.entries(session.events).map(([eventId, e]) => ({
                type: e.type,
                id: eventId,
                init_timestamp: at(30_100),
                end_timestamp: at(30_200),
                ...(e.model ? { model: e.model } : {}),
                ...(e.name ? { name: e.name } : {}),
                ...(e.agent ? { agent_id: e.agent } : {}),
              })),
            },
            jwt,
          );
        }
        await call("PUT", "/v2/score-configs/tone", {
          data_type: "categorical",
          categories: ["polite", "rude", "neutral"],
        });
        await call("POST", "/v2/scores", {
          scores: SENT.map((score, i) => ({
            id: `panel-score-${i}`,
            name: score.name,
            value: score.value,
            session_id: score.session,
            ...(score.event ? { event_id: score.event } : {}),
            timestamp: sentAt(score).toISOString(),
            source: "eval",
          })),
        });
        const models = expectedBreakdown("accuracy", "model").map((row) => row[0]);
        t.ok(models.includes("gpt-4o") && models.includes("claude-3-5-sonnet"), "two models, to tell apart");
        const summary = (name: string) => measures(SENT.filter((s) => s.name === name));

        await page.goto(`${base}/?range=30d&score=accuracy`);
        await checkPanel(t, "accuracy", "model");
        t.equal(
          await page.textContent("#score-summary"),
          `${summary("accuracy")[0]} scores, mean ${summary("accuracy")[1]}.`,
        );
        t.equal(await page.getAttribute("#score-panel", "data-kind"), "numeric");
        t.ok(await page.isVisible("#chart-score canvas"), "a chart");
        t.same(await legendLabels(), ["Day", "Count", "Mean"], "a numeric score: count and mean");
        await page.locator("#score-panel").evaluate((panel: any) => panel.scrollIntoView({ block: "start" }));
        await saveScreenshot(page, "scores-overview.png");

        await page.selectOption("#score-by", "agent");
        await checkPanel(t, "accuracy", "agent");
        t.match(page.url(), /score_by=agent/, "the grouping is in the address");
        t.match(page.url(), /score=accuracy/, "with the score");

        await page.selectOption("#score-name", "resolved");
        await checkPanel(t, "resolved", "agent");
        t.equal(await page.getAttribute("#score-panel", "data-kind"), "boolean");
        t.same(await legendLabels(), ["Day", "Count", "True"], "a boolean score: count and pass rate");
        t.equal(
          await page.textContent("#score-summary"),
          `${summary("resolved")[0]} scores, ${summary("resolved")[1]} true.`,
        );
        await page.selectOption("#score-by", "tag");
        await checkPanel(t, "resolved", "tag");
        t.equal(
          await page.locator("#score-breakdown tbody tr.other").count(),
          1,
          "seven tag groups: the rest is one row",
        );

        await page.selectOption("#score-name", "tone");
        await checkPanel(t, "tone", "tag");
        t.equal(await page.getAttribute("#score-panel", "data-kind"), "categorical");
        t.equal(await page.textContent("#score-summary"), `${summary("tone")[0]} scores: ${summary("tone")[1]}.`);
        // The chart: a bar per day stacked by label; on each day, its legend gives each label's
        // count (its part of the bar), as computed here from the scores sent.
        const toneLabels = [...new Set(SENT.filter((s) => s.name === "tone").map((s) => s.value as string))].sort();
        t.ok(toneLabels.length >= 2, "labels to tell apart");
        t.same(await legendLabels(), ["Day", ...toneLabels], "a series per label, no other");
        const toneDays = await expectedDays("tone");
        const dayNames = toneDays.map((row) => row[0] as string);
        const charted: unknown[] = [];
        for (const i of dayNames.keys()) charted.push(await legendOn(i, dayNames));
        t.same(
          charted,
          toneDays.map(([day, , ...counts]) => [["Day", day], ...toneLabels.map((label, k) => [label, counts[k]])]),
          "each label's count per day in the chart",
        );
        t.ok(
          toneDays.filter((row) => row.slice(2).filter((n) => n !== "0").length >= 2).length >= 2,
          "two days with two labels each",
        );
        await page.mouse.move(0, 0);
        await page.selectOption("#score-by", "tool");
        await checkPanel(t, "tone", "tool");
        await page.reload();
        await checkPanel(t, "tone", "tool");
        t.equal(await page.inputValue("#score-by"), "tool", "kept by a reload");
        await page.selectOption("#score-by", "model");
        await checkPanel(t, "tone", "model");
        t.notMatch(page.url(), /score_by/, "model is the default, not written");
        await page.locator("#score-by-box").evaluate((box: any) => box.scrollIntoView({ block: "center" }));
        await saveScreenshot(page, "scores-by-model.png");
      },
    );

    await t.test("the daily chart's ticks are whole days of the range", async (t) => {
      for (const range of ["7d", "30d", "90d"]) {
        await page.goto(`${base}/?range=${range}&score=accuracy`);
        await panelLoaded("accuracy", "model");
        const days = await page.$$eval("#numbers-score tbody tr", (rows: any[]) =>
          rows.map((row) => row.cells[0].textContent),
        );
        for (const chart of ["#chart-score", "#chart-cost", "#chart-sessions"]) {
          const ticks = ((await page.getAttribute(chart, "data-ticks")) ?? "").split(" ");
          t.ok(ticks.length >= 2, `${range} ${chart}: ticks`);
          t.ok(
            ticks.every((tick) => days.includes(tick)),
            `${range} ${chart}: every tick is a day of the range`,
          );
          t.equal(ticks.at(-1), days.at(-1), `${range} ${chart}: the last day is labelled`);
          const steps = new Set(ticks.slice(1).map((tick, i) => days.indexOf(tick) - days.indexOf(ticks[i])));
          t.equal(steps.size, 1, `${range} ${chart}: evenly spaced`);
        }
        if (range === "7d") {
          t.same(((await page.getAttribute("#chart-score", "data-ticks")) ?? "").split(" "), days, "a week: every day");
        }
      }
    });

    t.same(await page.evaluate(() => (globalThis as any).__xss), undefined, "no injected script ran");
    t.same(problems, [], "no page error, no CSP violation");
  },
);
