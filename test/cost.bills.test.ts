/**
 * Prices that match the invoice (issue 17 part 6, docs/decisions/015-prices.md): llm events with
 * cache reads and writes, reasoning tokens, prices per call and price validity ranges, priced
 * from a price table and checked against bills written out by hand, through the HTTP API (each
 * event's cost, token_cost (S6), the stats, the list row, the export) and through OTLP spans
 * carrying each convention's detail attributes. The table loader is cost.table.test.ts, the
 * `agentmon prices` commands cost.cli.test.ts.
 */
import t from "tap";
import { type PriceEntry, priceTable } from "../domain/prices.ts";
import { costOf, read, send } from "./cost.helpers.ts";
import { API_KEY, build, type TestApp } from "./helper.ts";
import { sendTraces, span, TRACE_SESSION, request as traces } from "./otlp.helpers.ts";

/** A table of made-up models, so that the bills do not move when the shipped prices do. USD. */
const TABLE: PriceEntry[] = [
  // Priced like Anthropic's: cache writes at 1.25 × input, reads at 0.1 × input.
  {
    pattern: "^house-claude$",
    effective_from: "2026-01-01",
    prompt_per_million: 3,
    completion_per_million: 15,
    cache_read_per_million: 0.3,
    cache_creation_per_million: 3.75,
  },
  // A reasoning model with a reasoning rate of its own and a price per call, until a price cut.
  {
    pattern: "^house-reasoner$",
    effective_from: "2026-01-01",
    effective_until: "2026-07-01",
    prompt_per_million: 1.1,
    completion_per_million: 4.4,
    cache_read_per_million: 0.55,
    reasoning_per_million: 8.8,
    per_request: 0.002,
  },
  // After the cut: no cache or reasoning rate, so those tokens cost what prompt and completion do.
  {
    pattern: "^house-reasoner$",
    effective_from: "2026-07-01",
    prompt_per_million: 0.9,
    completion_per_million: 3.6,
    per_request: 0.001,
  },
  // Priced per call only, and withdrawn on 2026-12-01.
  {
    pattern: "^house-search$",
    effective_from: "2026-01-01",
    effective_until: "2026-12-01",
    prompt_per_million: 0,
    completion_per_million: 0,
    per_request: 0.005,
  },
];

/** The made-up table alone (no shipped layer under it). */
const house = (t: Parameters<typeof build>[0]) => build(t, { prices: priceTable(TABLE, []) });

/** token_cost of update_session, stats of getSessionStats, the list row's stats and the export's. */
async function sums(api: TestApp, sessionId: string, jwt: string) {
  const tokenCost = (await send(api, "/v2/update_session", { session: {} }, jwt)).token_cost;
  const stats = (await read(api, `/v2/sessions/${sessionId}/stats`)).json().stats;
  const rows = (await read(api, "/v2/sessions?limit=200")).json().sessions;
  const row = rows.find((r: { session: { id: string } }) => r.session.id === sessionId)?.stats;
  const exported = (await read(api, `/v2/sessions/${sessionId}/export`)).json().stats;
  return { tokenCost, stats, row, exported };
}

t.test("v2 events: cache reads and writes, reasoning, per-call prices and validity ranges, by hand", async (t) => {
  const api = await house(t);
  const jwt = await api.session("bill");
  await send(
    api,
    "/v2/create_events",
    {
      events: [
        // e1, house-claude (3 / 15, reads 0.3, writes 3.75), counts by name. Of the 12 000 prompt
        // tokens 10 000 were read from the cache and 1 500 written to it:
        //   uncached  12 000 − 10 000 − 1 500 = 500 × 3    =  1 500
        //   reads                         10 000 × 0.3     =  3 000
        //   writes                         1 500 × 3.75    =  5 625
        //   completion                       400 × 15      =  6 000
        //                                                    16 125 / 1 000 000 = 0.016125
        {
          type: "llm",
          id: "e1",
          model: "house-claude",
          init_timestamp: "2026-11-22T05:00:00Z",
          prompt_tokens: 12_000,
          cache_read_tokens: 10_000,
          cache_creation_tokens: 1_500,
          completion_tokens: 400,
        },
        // e2, house-reasoner before the cut (1.1 / 4.4, reads 0.55, reasoning 8.8, 0.002 a call),
        // the details from OpenAI's usage sent beside the named counts:
        //   uncached  2 000 − 1 024 = 976 × 1.1    =  1 073.6
        //   reads             1 024 × 0.55         =    563.2
        //   answered  1 500 − 1 200 = 300 × 4.4    =  1 320
        //   reasoning         1 200 × 8.8          = 10 560
        //                                            13 516.8 / 1 000 000 = 0.0135168
        //   + 0.002 per call                                              = 0.0155168
        {
          event_type: "llms",
          id: "e2",
          model: "house-reasoner",
          init_timestamp: "2026-03-01T12:00:00Z",
          prompt_tokens: 2_000,
          completion_tokens: 1_500,
          usage: {
            prompt_tokens: 2_000,
            completion_tokens: 1_500,
            prompt_tokens_details: { cached_tokens: 1_024, audio_tokens: 0 },
            completion_tokens_details: { reasoning_tokens: 1_200 },
          },
        },
        // e3, house-reasoner on the cut's first instant (0.9 / 3.6, 0.001 a call, no cache or
        // reasoning rate):
        //   uncached  2 000 − 1 000 = 1 000 × 0.9  =    900
        //   reads             1 000 × 0.9          =    900
        //   answered    500 − 200 = 300 × 3.6      =  1 080
        //   reasoning           200 × 3.6          =    720
        //                                             3 600 / 1 000 000 = 0.0036
        //   + 0.001 per call                                          = 0.0046
        {
          type: "llm",
          id: "e3",
          model: "house-reasoner",
          init_timestamp: "2026-07-01T00:00:00Z",
          prompt_tokens: 2_000,
          cache_read_tokens: 1_000,
          completion_tokens: 500,
          reasoning_tokens: 200,
        },
        // e4, house-reasoner on the last microsecond before the cut (effective_until is exclusive):
        //   1 000 × 1.1 = 1 100 / 1 000 000 = 0.0011, + 0.002 per call = 0.0031
        {
          type: "llm",
          id: "e4",
          model: "house-reasoner",
          init_timestamp: "2026-06-30T23:59:59.999999Z",
          prompt_tokens: 1_000,
          completion_tokens: 0,
        },
        // e5, house-search, no token counts: the price per call alone, 0.005.
        { type: "llm", id: "e5", model: "house-search", init_timestamp: "2026-11-30T23:59:59Z" },
        // e6, house-search on the day it was withdrawn: no price.
        { type: "llm", id: "e6", model: "house-search", init_timestamp: "2026-12-01T00:00:00Z" },
        // e7, house-claude before its first day: no price.
        {
          type: "llm",
          id: "e7",
          model: "house-claude",
          init_timestamp: "2025-12-31T23:59:59Z",
          prompt_tokens: 100,
          completion_tokens: 10,
        },
        // A tool event's counts are kept but neither priced nor summed.
        { type: "tool", id: "tool", name: "search", prompt_tokens: 5, cache_read_tokens: 5, reasoning_tokens: 5 },
      ],
    },
    jwt,
  );
  const expected: [string, number | undefined][] = [
    ["e1", 0.016125],
    ["e2", 0.0155168],
    ["e3", 0.0046],
    ["e4", 0.0031],
    ["e5", 0.005],
    ["e6", undefined],
    ["e7", undefined],
  ];
  for (const [id, cost] of expected) {
    t.strictSame(
      await costOf(api, "bill", id),
      { cost_source: cost === undefined ? "unknown" : "table", cost },
      `${id}: ${cost ?? "no price"}`,
    );
  }

  // 0.016125 + 0.0155168 + 0.0046 + 0.0031 + 0.005 = 0.0443418
  // prompt 12 000 + 2 000 + 2 000 + 1 000 + 100 = 17 100; completion 400 + 1 500 + 500 + 0 + 10 = 2 410;
  // reads 10 000 + 1 024 + 1 000 = 12 024; writes 1 500; reasoning 1 200 + 200 = 1 400 (llm events only).
  const { tokenCost, stats, row, exported } = await sums(api, "bill", jwt);
  t.equal(tokenCost, "0.0443418", "token_cost (S6)");
  t.match(stats, {
    cost: "0.0443418",
    prompt_tokens: 17_100,
    completion_tokens: 2_410,
    cache_read_tokens: 12_024,
    cache_creation_tokens: 1_500,
    reasoning_tokens: 1_400,
  });
  t.strictSame(row, stats, "the list row's stats are the same");
  t.strictSame(exported, stats, "and the export's");

  const events = (await read(api, "/v2/sessions/bill/events?type=llm")).json().events;
  const e2 = events.find((e: { id: string }) => e.id === "e2");
  t.match(e2, { prompt_tokens: 2_000, cache_read_tokens: 1_024, completion_tokens: 1_500, reasoning_tokens: 1_200 });
  t.notOk("cache_creation_tokens" in e2, "a count nobody gave is not shown");
  t.strictSame(
    e2.usage,
    {
      prompt_tokens: 2_000,
      completion_tokens: 1_500,
      prompt_tokens_details: { cached_tokens: 1_024, audio_tokens: 0 },
      completion_tokens_details: { reasoning_tokens: 1_200 },
    },
    "the usage it was read from is kept as sent (G5)",
  );
});

t.test("where the counts come from: the named field wins over usage; the AgentOps SDK's returns", async (t) => {
  const api = await house(t);
  const jwt = await api.session("where");
  await send(
    api,
    "/v2/create_events",
    {
      events: [
        // The AgentOps SDK 0.3 sends OpenAI's response as returns: usage inside it.
        // house-claude: 1 000 − 600 = 400 × 3 = 1 200; 600 × 0.3 = 180; 50 × 15 = 750 → 2 130 → 0.00213
        {
          event_type: "llms",
          id: "sdk",
          model: "house-claude",
          init_timestamp: "2026-11-22T05:00:00Z",
          prompt_tokens: 1_000,
          completion_tokens: 50,
          returns: { id: "chatcmpl-1", usage: { prompt_tokens_details: { cached_tokens: 600 } } },
        },
        // A named count wins: 100 read (not usage's 900): 900 × 3 = 2 700; 100 × 0.3 = 30 → 2 730 → 0.00273
        {
          type: "llm",
          id: "named",
          model: "house-claude",
          init_timestamp: "2026-11-22T05:00:00Z",
          prompt_tokens: 1_000,
          cache_read_tokens: 100,
          usage: { input_tokens_details: { cached_tokens: 900 } },
        },
        // Not a count (negative, fractional, text): ignored, priced as plain prompt: 1 000 × 3 → 0.003
        {
          type: "llm",
          id: "junk",
          model: "house-claude",
          init_timestamp: "2026-11-22T05:00:00Z",
          prompt_tokens: 1_000,
          prompt_tokens_details: { cached_tokens: -1 },
          usage: {
            prompt_tokens_details: { cached_tokens: 1.5 },
            completion_tokens_details: { reasoning_tokens: "7" },
          },
        },
        // Anthropic's usage is not read (its input_tokens leaves the cache out): 20 × 3 = 60 → 0.00006
        {
          type: "llm",
          id: "anthropic",
          model: "house-claude",
          init_timestamp: "2026-11-22T05:00:00Z",
          prompt_tokens: 20,
          usage: { input_tokens: 20, cache_read_input_tokens: 5_000, cache_creation_input_tokens: 0 },
        },
      ],
    },
    jwt,
  );
  t.strictSame(await costOf(api, "where", "sdk"), { cost_source: "table", cost: 0.00213 });
  t.strictSame(await costOf(api, "where", "named"), { cost_source: "table", cost: 0.00273 });
  t.strictSame(await costOf(api, "where", "junk"), { cost_source: "table", cost: 0.003 });
  t.strictSame(await costOf(api, "where", "anthropic"), { cost_source: "table", cost: 0.00006 });
  const stats = (await read(api, "/v2/sessions/where/stats")).json().stats;
  t.match(
    stats,
    { cache_read_tokens: 700, reasoning_tokens: 0, cost: "0.00792" },
    "600 + 100; 0.00213 + 0.00273 + 0.003 + 0.00006",
  );
});

t.test("cache counts beyond prompt_tokens: the uncached part is 0, the cache is still priced", async (t) => {
  const api = await house(t);
  const jwt = await api.session("clamp");
  // An Anthropic count copied as it is: input_tokens 50 with 10 000 read from the cache.
  //   uncached max(0, 50 − 10 000) = 0; reads 10 000 × 0.3 = 3 000; completion 10 × 15 = 150 → 0.00315
  // and a reasoning count above completion_tokens: answered max(0, 10 − 40) = 0; 40 × 8.8 = 352 → 0.000352 + 0.002
  await send(
    api,
    "/v2/create_events",
    {
      events: [
        {
          type: "llm",
          id: "c1",
          model: "house-claude",
          init_timestamp: "2026-11-22T05:00:00Z",
          prompt_tokens: 50,
          cache_read_tokens: 10_000,
          completion_tokens: 10,
        },
        {
          type: "llm",
          id: "c2",
          model: "house-reasoner",
          init_timestamp: "2026-02-01T00:00:00Z",
          completion_tokens: 10,
          reasoning_tokens: 40,
        },
      ],
    },
    jwt,
  );
  t.strictSame(await costOf(api, "clamp", "c1"), { cost_source: "table", cost: 0.00315 });
  t.strictSame(await costOf(api, "clamp", "c2"), { cost_source: "table", cost: 0.002352 });
});

t.test("update_events: a detail count sent later re-prices a table cost (shipped Claude prices)", async (t) => {
  const api = await build(t);
  const jwt = await api.session("later");
  // claude-3-5-sonnet, shipped: 3 / 15, reads 0.3, writes 3.75.
  // 3 000 × 3 = 9 000; 100 × 15 = 1 500 → 10 500 → 0.0105
  await send(
    api,
    "/v2/create_events",
    {
      events: [
        {
          type: "llm",
          id: "s",
          model: "claude-3-5-sonnet-20241022",
          init_timestamp: "2026-11-22T05:00:00Z",
          prompt_tokens: 3_000,
          completion_tokens: 100,
        },
      ],
    },
    jwt,
  );
  t.strictSame(await costOf(api, "later", "s"), { cost_source: "table", cost: 0.0105 });
  // 1 000 × 3 = 3 000; 2 000 × 0.3 = 600; 100 × 15 = 1 500 → 5 100 → 0.0051
  await send(api, "/v2/update_events", { events: [{ event_id: "s", cache_read_tokens: 2_000 }] }, jwt);
  t.strictSame(await costOf(api, "later", "s"), { cost_source: "table", cost: 0.0051 });
  // 500 written as well: 500 × 3 = 1 500; 600; 500 × 3.75 = 1 875; 1 500 → 5 475 → 0.005475
  await send(api, "/v2/update_events", { events: [{ event_id: "s", cache_creation_tokens: 500 }] }, jwt);
  t.strictSame(await costOf(api, "later", "s"), { cost_source: "table", cost: 0.005475 });
  t.equal((await send(api, "/v2/update_session", { session: {} }, jwt)).token_cost, "0.005475");
});

t.test("OTLP spans: each convention's cache and reasoning attributes, priced by the same bill", async (t) => {
  const api = await house(t);
  const int = (key: string, value: number) => ({ key, value: { intValue: String(value) } });
  const str = (key: string, value: string) => ({ key, value: { stringValue: value } });
  const body = traces(
    span("00000000000000a0", undefined, 0, { attributes: [str("gen_ai.operation.name", "invoke_agent")] }),
    // OpenTelemetry GenAI, house-claude on 2026-11-22: the bill of e1 above, 0.016125.
    span("00000000000000a1", "00000000000000a0", 1, {
      attributes: [
        str("gen_ai.operation.name", "chat"),
        str("gen_ai.request.model", "house-claude"),
        int("gen_ai.usage.input_tokens", 12_000),
        int("gen_ai.usage.cache_read.input_tokens", 10_000),
        int("gen_ai.usage.cache_creation.input_tokens", 1_500),
        int("gen_ai.usage.output_tokens", 400),
      ],
    }),
    // OpenInference, house-reasoner after the cut: the bill of e3 above, 0.0046.
    span("00000000000000a2", "00000000000000a0", 2, {
      attributes: [
        str("openinference.span.kind", "LLM"),
        str("llm.model_name", "house-reasoner"),
        int("llm.token_count.prompt", 2_000),
        int("llm.token_count.prompt_details.cache_read", 1_000),
        int("llm.token_count.completion", 500),
        int("llm.token_count.completion_details.reasoning", 200),
      ],
    }),
    // OpenLLMetry (and AgentOps), house-claude, every prompt token written to the cache:
    //   uncached 4 000 − 4 000 = 0; writes 4 000 × 3.75 = 15 000; completion 100 × 15 = 1 500
    //   → 16 500 / 1 000 000 = 0.0165
    span("00000000000000a3", "00000000000000a0", 3, {
      attributes: [
        str("gen_ai.request.model", "house-claude"),
        int("gen_ai.usage.prompt_tokens", 4_000),
        int("gen_ai.usage.cache_creation_input_tokens", 4_000),
        int("gen_ai.usage.completion_tokens", 100),
        int("gen_ai.usage.reasoning_tokens", 0),
      ],
    }),
  );
  for (const media of ["protobuf", "json"] as const) {
    const res = await sendTraces(api, body, { media });
    t.equal(res.statusCode, 200, `${media}: ${res.body}`);
  }
  t.strictSame(await costOf(api, TRACE_SESSION, "00000000000000a1"), { cost_source: "table", cost: 0.016125 });
  t.strictSame(await costOf(api, TRACE_SESSION, "00000000000000a2"), { cost_source: "table", cost: 0.0046 });
  t.strictSame(await costOf(api, TRACE_SESSION, "00000000000000a3"), { cost_source: "table", cost: 0.0165 });

  // 0.016125 + 0.0046 + 0.0165 = 0.037225; reads 10 000 + 1 000; writes 1 500 + 4 000; reasoning 200 + 0.
  const reauth = await api.withKey("/v2/reauthorize_jwt", { session_id: TRACE_SESSION }, API_KEY);
  const { tokenCost, stats, row } = await sums(api, TRACE_SESSION, reauth.json().jwt);
  t.equal(tokenCost, "0.037225", "token_cost (S6) of the trace's session");
  t.match(stats, {
    cost: "0.037225",
    prompt_tokens: 18_000,
    completion_tokens: 1_000,
    cache_read_tokens: 11_000,
    cache_creation_tokens: 5_500,
    reasoning_tokens: 200,
  });
  t.strictSame(row, stats);
  const events = (await read(api, `/v2/sessions/${TRACE_SESSION}/events?type=llm`)).json().events;
  t.match(
    events.find((e: { id: string }) => e.id === "00000000000000a2"),
    {
      cache_read_tokens: 1_000,
      reasoning_tokens: 200,
    },
  );
});
