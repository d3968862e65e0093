/**
 * The data the overview's browser test (test/browser.overview.test.ts) shows: a week of sessions,
 * 2026-11-16 to 2026-11-22, written through the write API over HTTP as agents write them, at fixed
 * instants so that the pages (and the screenshot) are the same on every run. Three models at
 * different prices, three tools of different speeds, failures, error events, a running session,
 * and one completion that the search finds (with markup in it, which must stay text).
 */
import { bearer, client } from "./data.ts";

/** The days shown, in the test's timezone, and how many sessions start on each. */
export const FIRST_DAY = "2026-11-16";
export const LAST_DAY = "2026-11-22";
export const PER_DAY = [3, 5, 2, 6, 4, 1, 5];
/** The browser's timezone in the test: the days are Paris days (UTC+1 in November). */
export const TIMEZONE = "Europe/Paris";
/** The instants the page asks for: Paris midnight of the first day, and of the day after the last. */
export const FROM = "2026-11-15T23:00:00.000Z";
export const TO = "2026-11-22T23:00:00.000Z";

const MODELS = [
  { model: "gpt-4o", prompt: 0.0000025, completion: 0.00001 },
  { model: "claude-3-5-sonnet", prompt: 0.000003, completion: 0.000015 },
  { model: "gpt-4o-mini", prompt: 0.00000015, completion: 0.0000006 },
];
const TOOLS = [
  { name: "web.search", ms: 1800 },
  { name: "db.query", ms: 120 },
  { name: "code.run", ms: 4200 },
];

/** The session the search finds, and the words around the match. */
export const SEARCHED = "ov-3-2";
export const SEARCH_WORD = "capacitor";
export const SEARCH_TEXT = "Diagnosis: the flux <b>capacitor</b> overheated after 88 mph; replace it";

export async function createOverviewData(base: () => string) {
  const api = client(base);
  let i = 0;
  for (const [day, count] of PER_DAY.entries()) {
    for (let k = 0; k < count; k++, i++) {
      const id = `ov-${day}-${k}`;
      // 09:15 UTC (10:15 in Paris) and every two hours after: every session on its Paris day.
      const t0 = Date.UTC(2026, 10, 16 + day, 9 + 2 * k, 15);
      const at = (ms: number) => new Date(t0 + ms).toISOString();
      const jwt = await api.session(id, { init_timestamp: at(0), tags: ["overview", `day-${day}`] });
      const events: Record<string, unknown>[] = [];
      let clock = 100;
      for (let j = 0; j < 1 + (i % 3); j++) {
        const m = MODELS[(i + j) % 3] as (typeof MODELS)[number];
        const prompt = 300 + 37 * i + 11 * j;
        const completion = 40 + 5 * i;
        events.push({
          type: "llm",
          id: `${id}-llm-${j}`,
          init_timestamp: at(clock),
          end_timestamp: at(clock + 900 + 10 * i),
          model: m.model,
          prompt: `Step ${j} of session ${id}`,
          completion: id === SEARCHED && j === 0 ? SEARCH_TEXT : `Done with step ${j}`,
          prompt_tokens: prompt,
          completion_tokens: completion,
          cost: Number((prompt * m.prompt + completion * m.completion).toFixed(8)),
        });
        clock += 1000 + 10 * i;
      }
      if (i % 2 === 0) {
        const tool = TOOLS[i % 3] as (typeof TOOLS)[number];
        const ms = tool.ms + 37 * i;
        events.push({
          type: "tool",
          id: `${id}-tool`,
          init_timestamp: at(clock),
          end_timestamp: at(clock + ms),
          name: tool.name,
          input: { step: i },
          output: "ok",
        });
        clock += ms + 100;
      }
      if (i % 5 === 0) {
        events.push({
          type: "error",
          id: `${id}-error`,
          init_timestamp: at(clock),
          error_type: "UpstreamError",
          details: `upstream answered 502 at step ${i}`,
        });
        clock += 100;
      }
      await api.post("/v2/create_events", { events }, bearer(jwt));
      // Every fourth session fails; the last of the week is still running.
      if (id === `ov-6-${(PER_DAY[6] as number) - 1}`) continue;
      const fail = i % 4 === 3;
      await api.post(
        "/v2/update_session",
        {
          session: {
            end_state: fail ? "Fail" : "Success",
            end_timestamp: at(clock + 200),
            end_state_reason: fail ? `step ${i} failed: upstream timeout` : "done",
          },
        },
        bearer(jwt),
      );
    }
  }
  return { sessions: i };
}
