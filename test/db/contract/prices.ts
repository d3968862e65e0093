/** The Store contract: price tables imported into the database, and the models without a price (`agentmon prices`). */
import type { Test } from "tap";
import { US0 } from "../records.ts";
import type { Fixtures } from "./fixture.ts";
import { eventAt, NASTY, newSession, T0 } from "./values.ts";

export function priceContract(t: Test, { fresh }: Fixtures) {
  t.test("importPrices: the latest import is the one read; the text comes back as it was given", async (t) => {
    const { store } = await fresh(t);
    t.equal(await store.importedPrices(), undefined, "none yet");
    const first = `[{"pattern": "^a$", "effective_from": "2025-01-01", "prompt_per_million": 1, "completion_per_million": 2, "note": ${JSON.stringify(NASTY)}}]`;
    await store.importPrices(first, "/tmp/first prices.json", T0);
    t.strictSame(await store.importedPrices(), { text: first, source: "/tmp/first prices.json", imported_at: T0 });
    await store.importPrices("[]", "second.json", "2026-11-22T01:00:00Z");
    t.strictSame(
      await store.importedPrices(),
      { text: "[]", source: "second.json", imported_at: "2026-11-22T01:00:00Z" },
      "an empty table is an import too (it takes the imported layer away)",
    );
  });

  t.test("unpricedModels: llm events with cost_source unknown and a model, by model, in every project", async (t) => {
    const { store, p, other } = await fresh(t);
    await store.createSession(p, newSession("s"));
    await store.createSession(other, newSession("o"));
    const unknown = { cost: null, cost_source: "unknown" as const };
    await store.insertEvents(p, "s", [
      eventAt("a1", US0 + 10, { model: "alpha", ...unknown }),
      eventAt("a2", US0 + 30, { model: "alpha", prompt_tokens: null, completion_tokens: null, ...unknown }),
      eventAt("b1", US0 + 20, {
        model: NASTY,
        prompt_tokens: null,
        completion_tokens: null,
        cache_read_tokens: 5,
        ...unknown,
      }),
      eventAt("priced", US0, { model: "alpha", cost: 0.5, cost_source: "table" }),
      eventAt("paid", US0, { model: "beta", cost: 0.5, cost_source: "client" }),
      eventAt("tool", US0, { type: "tool", model: "gamma", ...unknown }),
      eventAt("anon", US0, { model: null, ...unknown }),
    ]);
    await store.insertEvents(other, "o", [eventAt("a3", US0 + 5, { model: "alpha", ...unknown })]);
    t.strictSame(await store.unpricedModels(), [
      { model: "alpha", events: 3, with_tokens: 2, first_us: US0 + 5, last_us: US0 + 30 },
      { model: NASTY, events: 1, with_tokens: 1, first_us: US0 + 20, last_us: US0 + 20 },
    ]);
  });
}
