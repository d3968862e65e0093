/**
 * Cost (issue 5, part 2): llm events sent without `cost` are priced from the model price table
 * (prices/models.json), every llm event says where its cost came from, and token_cost (S6) and the
 * stats are the same sums. AGENTMON_PRICES is in cost.overrides.test.ts, migration 002 in
 * cost.migration.test.ts.
 */
import t from "tap";
import { formatCost } from "../domain/views.ts";
import { costOf, read, send } from "./cost.helpers.ts";
import { build, type TestApp } from "./helper.ts";

/** token_cost of update_session, stats.cost of getSessionStats, and the list row's stats.cost. */
async function threeSums(api: TestApp, sessionId: string, jwt: string) {
  const tokenCost = (await send(api, "/v2/update_session", { session: {} }, jwt)).token_cost;
  const stats = (await read(api, `/v2/sessions/${sessionId}/stats`)).json().stats.cost;
  const rows = (await read(api, "/v2/sessions?limit=200")).json().sessions;
  const row = rows.find((r: { session: { id: string } }) => r.session.id === sessionId)?.stats.cost;
  return { tokenCost, stats, row };
}

// ----------------------------------------------------------------------------------- pricing

t.test("an llm event without cost is priced from the shipped table; the three sums agree", async (t) => {
  const api = await build(t);
  const jwt = await api.session("mini");
  // gpt-4o-mini: 0.15 USD per million prompt tokens, 0.60 per million completion tokens.
  await send(
    api,
    "/v2/create_events",
    {
      events: [
        {
          type: "llm",
          id: "a",
          model: "gpt-4o-mini",
          init_timestamp: "2026-11-22T05:00:00Z",
          prompt_tokens: 12,
          completion_tokens: 1,
        },
        { event_type: "llms", id: "b", model: "GPT-4o-mini-2024-07-18", prompt_tokens: 1_000_000 },
      ],
    },
    jwt,
  );
  t.strictSame(await costOf(api, "mini", "a"), { cost_source: "table", cost: 0.0000024 });
  t.strictSame(await costOf(api, "mini", "b"), { cost_source: "table", cost: 0.15 }, "dated name, any case");
  t.strictSame(await threeSums(api, "mini", jwt), { tokenCost: "0.1500024", stats: "0.1500024", row: "0.1500024" });
});

t.test("a client cost always wins, on create and on update", async (t) => {
  const api = await build(t);
  const jwt = await api.session("client");
  const events = [{ type: "llm", id: "c", model: "gpt-4o-mini", prompt_tokens: 1_000_000, cost: 7 }];
  await send(api, "/v2/create_events", { events }, jwt);
  t.strictSame(await costOf(api, "client", "c"), { cost_source: "client", cost: 7 });
  await send(api, "/v2/update_events", { events: [{ event_id: "c", completion_tokens: 5, model: "gpt-4o" }] }, jwt);
  t.strictSame(await costOf(api, "client", "c"), { cost_source: "client", cost: 7 }, "new tokens do not re-price it");

  await send(
    api,
    "/v2/create_events",
    { events: [{ type: "llm", id: "d", model: "gpt-4o-mini", prompt_tokens: 10 }] },
    jwt,
  );
  t.equal((await costOf(api, "client", "d")).cost_source, "table");
  await send(api, "/v2/update_events", { events: [{ event_id: "d", cost: 0.01 }] }, jwt);
  t.strictSame(await costOf(api, "client", "d"), { cost_source: "client", cost: 0.01 }, "a cost sent later wins");
  await send(api, "/v2/update_events", { events: [{ event_id: "d", prompt_tokens: 99 }] }, jwt);
  t.strictSame(await costOf(api, "client", "d"), { cost_source: "client", cost: 0.01 }, "and keeps winning");
  t.equal((await threeSums(api, "client", jwt)).tokenCost, "7.01");
});

t.test("update_events that changes model, tokens or time re-prices a table cost", async (t) => {
  const api = await build(t);
  const jwt = await api.session("reprice");
  const update = (fields: Record<string, unknown>) =>
    send(api, "/v2/update_events", { events: [{ event_id: "r", ...fields }] }, jwt);
  // The AgentOps SDK sends the completion and its tokens in an update, after the call ends.
  await send(
    api,
    "/v2/create_events",
    { events: [{ type: "llm", id: "r", model: "gpt-4o", init_timestamp: "2025-01-01T00:00:00Z" }] },
    jwt,
  );
  t.strictSame(await costOf(api, "reprice", "r"), { cost_source: "unknown", cost: undefined }, "no tokens yet");
  await update({ prompt_tokens: 1000, completion_tokens: 100 });
  t.strictSame(await costOf(api, "reprice", "r"), { cost_source: "table", cost: 0.0035 }, "2.50 + 10 per million");
  await update({ completion_tokens: 1000 });
  t.strictSame(await costOf(api, "reprice", "r"), { cost_source: "table", cost: 0.0125 });
  await update({ model: "gpt-4o-mini" });
  t.strictSame(await costOf(api, "reprice", "r"), { cost_source: "table", cost: 0.00075 });
  await update({ model: "a-model-nobody-prices" });
  t.strictSame(await costOf(api, "reprice", "r"), { cost_source: "unknown", cost: undefined });
  await update({ model: "gpt-4o", init_timestamp: "2024-06-01T00:00:00Z" });
  t.strictSame(await costOf(api, "reprice", "r"), { cost_source: "table", cost: 0.02 }, "5 + 15 before 2024-10-02");
  await update({ type: "tool" });
  const events = (await read(api, "/v2/sessions/reprice/events")).json().events;
  t.notOk("cost_source" in events[0] || "cost" in events[0], "a tool event has no cost from the table");
  t.equal((await threeSums(api, "reprice", jwt)).tokenCost, "0.00", "nor is it summed");
});

t.test("the entry used is the matching one with the latest effective_from not after the event", async (t) => {
  const api = await build(t);
  const jwt = await api.session("dates");
  const at = ["2024-05-12T23:59:59.999999Z", "2024-05-13T00:00:00Z", "2024-10-01T23:59:59Z", "2024-10-02T00:00:00Z"];
  const events = at.map((init, i) => ({
    type: "llm",
    id: `d${i}`,
    model: "gpt-4o-2024-08-06",
    init_timestamp: init,
    prompt_tokens: 1_000_000,
  }));
  await send(api, "/v2/create_events", { events }, jwt);
  t.strictSame(await costOf(api, "dates", "d0"), { cost_source: "unknown", cost: undefined }, "before any entry");
  t.strictSame(await costOf(api, "dates", "d1"), { cost_source: "table", cost: 5 }, "from its first day");
  t.strictSame(await costOf(api, "dates", "d2"), { cost_source: "table", cost: 5 }, "to the last day before the next");
  t.strictSame(await costOf(api, "dates", "d3"), { cost_source: "table", cost: 2.5 }, "then the next entry");
});

t.test("unknown: no model, an unpriced model, or no token counts; other kinds never get a table cost", async (t) => {
  const api = await build(t);
  const jwt = await api.session("unknown");
  await send(
    api,
    "/v2/create_events",
    {
      events: [
        { type: "llm", id: "u1", prompt_tokens: 5 },
        { type: "llm", id: "u2", model: "my-local-llama", prompt_tokens: 5 },
        { type: "llm", id: "u3", model: "gpt-4o-mini" },
        { type: "llm", id: "u4", model: "gpt-4o-mini", prompt_tokens: null, completion_tokens: null },
        { type: "llm", id: "u5", model: "gpt-4o-mini-but-not-really", prompt_tokens: 5 },
        { type: "tool", id: "t1", model: "gpt-4o-mini", prompt_tokens: 5 },
        { type: "llm", id: "z", model: "gpt-4o-mini", prompt_tokens: 0, completion_tokens: 0 },
      ],
    },
    jwt,
  );
  for (const id of ["u1", "u2", "u3", "u4", "u5"]) {
    t.strictSame(await costOf(api, "unknown", id), { cost_source: "unknown", cost: undefined }, id);
  }
  t.strictSame(await costOf(api, "unknown", "t1"), { cost_source: undefined, cost: undefined }, "a tool event");
  t.strictSame(await costOf(api, "unknown", "z"), { cost_source: "table", cost: 0 }, "zero tokens cost zero");
  t.strictSame(await threeSums(api, "unknown", jwt), { tokenCost: "0.00", stats: "0.00", row: "0.00" });
});

t.test("token_cost, stats.cost and the list row's cost are the same sum, over many events", async (t) => {
  const api = await build(t);
  const jwt = await api.session("many");
  let expected = 0;
  const events = Array.from({ length: 600 }, (_, i) => {
    if (i % 3 === 0) {
      expected += (i % 17) * 0.001;
      return { type: "llm", id: `m${i}`, cost: (i % 17) * 0.001 };
    }
    if (i % 3 === 1) {
      expected += ((i % 13) * 0.15 + (i % 7) * 0.6) / 1e6;
      return { type: "llm", id: `m${i}`, model: "gpt-4o-mini", prompt_tokens: i % 13, completion_tokens: i % 7 };
    }
    return { type: "tool", id: `m${i}`, cost: 1 };
  });
  await send(api, "/v2/create_events", { events }, jwt);
  const sums = await threeSums(api, "many", jwt);
  t.equal(sums.stats, sums.tokenCost);
  t.equal(sums.row, sums.tokenCost);
  t.equal(sums.tokenCost, formatCost(expected), "the sum of the client's and the table's costs");
  const exported = (await read(api, "/v2/sessions/many/export")).json();
  t.equal(exported.stats.cost, sums.tokenCost);
});
