/**
 * The data the browser test (test/browser.test.ts) shows, created through the write API over HTTP
 * as agents create it, at fixed instants so that the pages (and the screenshots) are the same on
 * every run; and the AgentOps SDK fixtures replayed.
 */
import { readdirSync, readFileSync } from "node:fs";
import { API_KEY, OTHER_PROJECT_KEY } from "../helper.ts";

export const FIXTURES = new URL("../fixtures/agentops-sdk-0.3/", import.meta.url);

/** Fixed instants, so that the pages (and the screenshots) are the same on every run. */
const T0 = Date.parse("2026-11-22T09:00:00Z");
export const at = (ms: number) => new Date(T0 + ms).toISOString();
export const MIN = 60_000;

/** The default project's sessions, newest first. */
export const ALL_SESSIONS = [
  "checkout-1",
  "running-1",
  "checkout-2",
  "search-1",
  "big-10k",
  "79f6fc6b-8463-4bc7-8a68-c3f84a2c9423", // the AgentOps SDK 0.3.18 fixture session (05:09:43)
  "6fbb6581-44b2-42ad-9cf4-13a41f4ceeb7", // the AgentOps SDK 0.3.26 fixture session (05:09:41)
];

/** The prompt of the XSS probe: if it were ever parsed as HTML, the image's onerror would run. */
export const XSS = `Is the cart ready? <img src=x onerror="window.__xss=1;document.title='pwned'"> <script>window.__xss=2</script>`;

interface Client {
  /** POSTs JSON to the running server; answers the body of a 200, throws on anything else. */
  post(path: string, body: unknown, headers: Record<string, string>): Promise<Record<string, any>>;
  /** Creates a session with the API key (or another key) and answers its JWT. */
  session(id: string, fields: Record<string, unknown>, key?: string): Promise<string>;
}

export function client(base: () => string): Client {
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

export const bearer = (jwt: string) => ({ authorization: `Bearer ${jwt}` });

/** The data the pages show, one session at a time; answers the JWT of the running session. */
export async function createData(api: Client) {
  await checkoutSession(api);
  await failedCheckoutSession(api);
  await searchSession(api);
  const running = await runningSession(api);
  await api.session("secret-1", { init_timestamp: at(0), tags: ["e2e", "checkout"] }, OTHER_PROJECT_KEY);
  await bigSession(api);
  return { running };
}

/** checkout-1: an agent and one event of each kind (the prompt holds the XSS probe), ended Success. */
async function checkoutSession(api: Client) {
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
}

/** checkout-2, an hour before: one llm event, ended Fail. */
async function failedCheckoutSession(api: Client) {
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
}

/** search-1, two hours before: one tool event, ended with the S5 alias unknown. */
async function searchSession(api: Client) {
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
}

/** running-1, half an hour before: one llm event and no end, so it runs; answers its JWT. */
async function runningSession(api: Client): Promise<string> {
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
  return running;
}

/** big-10k, three hours before: 10 000 events, ended Success. */
async function bigSession(api: Client) {
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
}

/** Replays one AgentOps SDK version's recorded requests over HTTP; answers its session_url. */
export async function replayFixtures(api: Client, version: string): Promise<string> {
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
