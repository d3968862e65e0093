/**
 * The price table (issue 17 part 6, docs/decisions/015-prices.md): the keys an entry may have,
 * the mistakes the loader refuses with a message naming the entry, validity ranges and their
 * overlaps, the layers (AGENTMON_PRICES, then the imported table, then the shipped one), the
 * shipped table's cache rates, and a version-1 table file still read as before.
 */
import t from "tap";
import {
  callCost,
  importedEntries,
  layeredPrices,
  type PriceEntry,
  parsePrices,
  priceTable,
  shippedPrices,
} from "../domain/prices.ts";
import { parseTimestamp } from "../domain/timestamps.ts";

const at = (iso: string) => parseTimestamp(iso)?.us ?? Number.NaN;
const good = { pattern: "^m$", effective_from: "2025-01-01", prompt_per_million: 1, completion_per_million: 2 };
const text = (...entries: unknown[]) => JSON.stringify(entries);

t.test("every mistake is refused with a message naming the file, the entry and the rule", async (t) => {
  const refused: [string, string, RegExp][] = [
    [
      "an unknown key (a typo)",
      text(good, { ...good, pattern: "^n$", cache_read_per_milion: 1 }),
      /^f\.json: entry 1 has unknown keys: cache_read_per_milion \(allowed: pattern, effective_from, prompt_per_million, completion_per_million, effective_until, cache_read_per_million, cache_creation_per_million, reasoning_per_million, per_request, note\)$/,
    ],
    [
      "a required key missing",
      text({ pattern: "^m$", effective_from: "2025-01-01", prompt_per_million: 1 }),
      /^f\.json: entry 0 lacks completion_per_million$/,
    ],
    [
      "a negative price per million",
      text({ ...good, cache_read_per_million: -0.5 }),
      /^f\.json: entry 0: cache_read_per_million must be a number >= 0 \(USD per million tokens\)$/,
    ],
    [
      "a negative cache write price",
      text({ ...good, cache_creation_per_million: -1 }),
      /entry 0: cache_creation_per_million must be a number >= 0/,
    ],
    [
      "a reasoning price as text",
      text({ ...good, reasoning_per_million: "8" }),
      /entry 0: reasoning_per_million must be a number >= 0/,
    ],
    [
      "a negative price per call",
      text({ ...good, per_request: -0.01 }),
      /^f\.json: entry 0: per_request must be a number >= 0 \(USD per call\)$/,
    ],
    [
      "a price per call that is no number",
      text({ ...good, per_request: null }),
      /entry 0: per_request must be a number >= 0/,
    ],
    [
      "effective_until before effective_from",
      text({ ...good, effective_until: "2024-12-31" }),
      /^f\.json: entry 0: effective_until \(2024-12-31\) must be after effective_from \(2025-01-01\); it is exclusive$/,
    ],
    [
      "effective_until on effective_from (an empty range)",
      text({ ...good, effective_until: "2025-01-01" }),
      /entry 0: effective_until \(2025-01-01\) must be after effective_from/,
    ],
    [
      "effective_until not a day",
      text({ ...good, effective_until: "2025-02-30" }),
      /^f\.json: entry 0: effective_until must be a date written YYYY-MM-DD \(the first day it no longer applies\)$/,
    ],
    ["a note that is no text", text({ ...good, note: 1 }), /entry 0: note must be a string/],
    [
      "two entries of a pattern from the same day",
      text(good, { ...good, pattern: "^other$" }, { ...good, prompt_per_million: 9 }),
      /^f\.json: entries 0 and 2 overlap \(pattern "\^m\$"\): both take effect on 2025-01-01; keep one of them$/,
    ],
    [
      "a range running past the next entry's start",
      text({ ...good, effective_from: "2025-06-01" }, { ...good, effective_until: "2025-07-01" }),
      /^f\.json: entries 0 and 1 overlap \(pattern "\^m\$"\): entry 1 is valid from 2025-01-01 until 2025-07-01, entry 0 from 2025-06-01; end entry 1 on or before 2025-06-01 \(effective_until is exclusive\)$/,
    ],
    [
      "two bounded ranges that overlap",
      text(
        { ...good, effective_until: "2025-03-01" },
        { ...good, effective_from: "2025-02-01", effective_until: "2025-04-01" },
      ),
      /entries 0 and 1 overlap .*until 2025-03-01, entry 1 from 2025-02-01/,
    ],
  ];
  for (const [what, table, message] of refused) t.throws(() => parsePrices(table, "f.json"), message, what);
});

t.test("what is allowed: ranges that meet or leave gaps, the same pattern in another table, every key", async (t) => {
  const meeting = [
    { ...good, effective_until: "2025-03-01" },
    { ...good, effective_from: "2025-03-01", effective_until: "2025-04-01" },
    { ...good, effective_from: "2025-06-01" },
  ];
  t.strictSame(parsePrices(text(...meeting), "f.json"), meeting, "an end on the next start is no overlap");
  const every: PriceEntry = {
    pattern: "^all$",
    effective_from: "2025-01-01",
    effective_until: "2026-01-01",
    prompt_per_million: 1,
    completion_per_million: 2,
    cache_read_per_million: 0.1,
    cache_creation_per_million: 1.25,
    reasoning_per_million: 3,
    per_request: 0.01,
    note: "every key",
  };
  t.strictSame(parsePrices(text(every), "f.json"), [every], "kept as written");
  t.strictSame(parsePrices("[]", "f.json"), [], "an empty table");
});

t.test("a version-1 table (issue 5's four keys) is read and priced as before", async (t) => {
  const v1 = [
    {
      pattern: "^gpt-4o(-\\d{4}-\\d{2}-\\d{2})?$",
      effective_from: "2024-05-13",
      prompt_per_million: 5,
      completion_per_million: 15,
    },
    {
      pattern: "^gpt-4o(-\\d{4}-\\d{2}-\\d{2})?$",
      effective_from: "2024-10-02",
      prompt_per_million: 2.5,
      completion_per_million: 10,
    },
  ];
  const entries = parsePrices(text(...v1), "v1.json");
  t.strictSame(entries, v1);
  const table = priceTable(entries, []);
  t.equal(
    table.lookup("gpt-4o", at("2024-10-01T23:59:59Z"))?.prompt_per_million,
    5,
    "the older entry up to the newer's day",
  );
  t.equal(table.lookup("gpt-4o", at("2024-10-02T00:00:00Z"))?.prompt_per_million, 2.5, "then the newer");
  t.equal(table.lookup("gpt-4o", at("2024-05-12T23:59:59Z")), undefined, "nothing before the first");
  // 1 000 × 2.5 + 100 × 10 = 3 500 → 0.0035; cache counts without a cache rate cost what prompt tokens do.
  const entry = table.lookup("gpt-4o", at("2025-01-01T00:00:00Z")) as PriceEntry;
  t.equal(callCost({ prompt_tokens: 1_000, completion_tokens: 100 }, entry), 0.0035);
  t.equal(
    callCost({ prompt_tokens: 1_000, completion_tokens: 100, cache_read_tokens: 600, reasoning_tokens: 50 }, entry),
    0.0035,
  );
});

t.test("an effective_until retires a model; a later layer then prices it, if it has it", async (t) => {
  const overrides = [
    {
      ...good,
      pattern: "^gpt-4o-mini$",
      effective_from: "2026-01-01",
      effective_until: "2026-02-01",
      prompt_per_million: 9,
    },
  ];
  const table = priceTable(overrides);
  t.equal(table.lookup("gpt-4o-mini", at("2026-01-15T00:00:00Z"))?.prompt_per_million, 9, "the override in its range");
  t.match(
    table.lookup("gpt-4o-mini", at("2026-02-01T00:00:00Z")),
    { layer: "shipped", prompt_per_million: 0.15 },
    "after it: the shipped entry",
  );
  const alone = priceTable(overrides, []);
  t.equal(alone.lookup("gpt-4o-mini", at("2026-02-01T00:00:00Z")), undefined, "no layer under it: no price");
});

t.test("layers: AGENTMON_PRICES, then the imported table, then the shipped one", async (t) => {
  const env = [{ ...good, pattern: "^gpt-4o$", effective_from: "2026-06-01", prompt_per_million: 100 }];
  const imported = [
    { ...good, pattern: "^gpt-4o$", effective_from: "2026-01-01", prompt_per_million: 50 },
    { ...good, pattern: "^house$", effective_from: "2026-01-01", prompt_per_million: 7 },
  ];
  const table = priceTable(env, shippedPrices(), imported);
  t.match(table.lookup("gpt-4o", at("2026-07-01T00:00:00Z")), { layer: "AGENTMON_PRICES", prompt_per_million: 100 });
  t.match(table.lookup("gpt-4o", at("2026-03-01T00:00:00Z")), { layer: "imported", prompt_per_million: 50 });
  t.match(table.lookup("gpt-4o", at("2025-03-01T00:00:00Z")), { layer: "shipped", prompt_per_million: 2.5 });
  t.match(table.lookup("house", at("2026-03-01T00:00:00Z")), { layer: "imported", prompt_per_million: 7 });
  t.match(layeredPrices([{ name: "one", entries: imported }]).lookup("house", at("2026-03-01T00:00:00Z")), {
    layer: "one",
  });

  const stored = { text: JSON.stringify(imported), source: "/srv/prices.json", imported_at: "2026-11-22T00:00:00Z" };
  t.strictSame(importedEntries(stored), imported);
  t.strictSame(importedEntries(undefined), []);
  t.throws(
    () => importedEntries({ ...stored, text: text(good, good) }),
    /^the price table imported on 2026-11-22T00:00:00Z is not valid \(\/srv\/prices\.json: entries 0 and 1 overlap .*\); correct it and import it again with `agentmon prices import FILE`$/,
  );
});

t.test("within a layer: the entry of latest effective_from whose range holds the instant", async (t) => {
  const table = layeredPrices([
    {
      name: "x",
      entries: [
        { ...good, pattern: "^m", effective_from: "2025-01-01", prompt_per_million: 1 },
        {
          ...good,
          pattern: "^m-1$",
          effective_from: "2025-06-01",
          effective_until: "2025-07-01",
          prompt_per_million: 2,
        },
      ],
    },
  ]);
  t.equal(table.lookup("m-1", at("2025-06-15T00:00:00Z"))?.prompt_per_million, 2, "the newer, more specific one");
  t.equal(table.lookup("m-1", at("2025-07-01T00:00:00Z"))?.prompt_per_million, 1, "past its end, the other pattern's");
  t.equal(table.lookup("m-2", at("2025-06-15T00:00:00Z"))?.prompt_per_million, 1);
});

t.test("callCost: each count at its rate, counts beyond their total clamp to 0, 12 decimals", async (t) => {
  const price: PriceEntry = {
    ...good,
    prompt_per_million: 3,
    completion_per_million: 15,
    cache_read_per_million: 0.3,
    cache_creation_per_million: 3.75,
    reasoning_per_million: 20,
    per_request: 0.01,
  };
  // (1 000 − 200 − 100) × 3 = 2 100; 200 × 0.3 = 60; 100 × 3.75 = 375; (50 − 20) × 15 = 450; 20 × 20 = 400
  // → 3 385 / 1 000 000 = 0.003385, + 0.01 = 0.013385
  const counts = {
    prompt_tokens: 1_000,
    completion_tokens: 50,
    cache_read_tokens: 200,
    cache_creation_tokens: 100,
    reasoning_tokens: 20,
  };
  t.equal(callCost(counts, price), 0.013385);
  t.equal(callCost({ prompt_tokens: null, completion_tokens: null }, price), 0.01, "no counts: the price per call");
  // max(0, 10 − 200 − 100) = 0; 60; 375; max(0, 5 − 20) = 0; 400 → 835 → 0.000835 + 0.01
  t.equal(callCost({ ...counts, prompt_tokens: 10, completion_tokens: 5 }, price), 0.010835);
  // 7 × 0.1 = 0.7000000000000001 in binary: the cost is the decimal.
  t.equal(callCost({ prompt_tokens: 7, completion_tokens: 0 }, { ...good, prompt_per_million: 0.1 }), 0.0000007);
});

t.test("the shipped table: cache rates where the provider publishes them, a note on every changed entry", async (t) => {
  const shipped = priceTable([], shippedPrices());
  const when = at("2026-01-01T00:00:00Z");
  const rates: [string, number | undefined, number | undefined][] = [
    ["gpt-4o-mini", 0.075, undefined],
    ["gpt-4o-2024-08-06", 1.25, undefined],
    ["gpt-4.1", 0.5, undefined],
    ["o3-mini", 0.55, undefined],
    ["claude-3-5-sonnet-20241022", 0.3, 3.75],
    ["claude-opus-4-20250514", 1.5, 18.75],
    ["claude-3-5-haiku-latest", 0.08, 1],
    ["gemini-1.5-pro", undefined, undefined],
  ];
  for (const [model, read, write] of rates) {
    const entry = shipped.lookup(model, when);
    t.strictSame([entry?.cache_read_per_million, entry?.cache_creation_per_million], [read, write], model);
  }
  for (const entry of shippedPrices()) {
    if (entry.cache_read_per_million !== undefined)
      t.match(entry.note, /as of 2025-06/, `${entry.pattern}: its source`);
  }
  t.equal(
    shipped.lookup("gpt-4o-2024-05-13", at("2024-06-01T00:00:00Z"))?.cache_read_per_million,
    undefined,
    "before caching",
  );
});
