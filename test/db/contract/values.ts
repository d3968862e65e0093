/** The values the Store contract writes and compares: chosen to break a careless adapter. */
import type { Test } from "tap";
import type { EventRecord, JsonObject, NewSession, SessionTotals } from "../../../domain/types.ts";
import { iso, newEvent, newSession as sessionRecord, US0 } from "../records.ts";

/**
 * SQL and LIKE metacharacters, quotes, a backslash, a control character, the six characters
 * `\u0000` (a backslash and text: what a JSON body writes as `"\\u0000"`), emoji (a ZWJ sequence,
 * a flag), accents. No U+0000 itself: PostgreSQL cannot store it, so the HTTP edge refuses any
 * request that holds one (decision 017) and no adapter is ever given one; the contract does not
 * ask for it.
 */
export const NASTY = "'; DROP TABLE sessions; -- \" \\ % _ [x] \u0001 \\u0000 nul 🧪👩‍💻🇺🇳 Ünïcödé";

/** An object with a `__proto__` key (as JSON.parse makes it: data, not a prototype), nested nulls, odd numbers. */
export const nasty = (): JsonObject =>
  JSON.parse(
    `{"__proto__": {"polluted": true}, "constructor": {"prototype": {"x": null}}, ${JSON.stringify(NASTY)}: ${JSON.stringify(NASTY)},
      "deepNulls": {"a": [1, null, {"b": null, "c": [[], {}, ""]}]}, "null": null, "float": 1.5, "big": 9007199254740991,
      "tiny": -1e-7, "false": false, "empty": "", "emptyObject": {}, "emptyArray": []}`,
  );

export const newSession = (id: string, fields: Partial<NewSession> = {}) =>
  sessionRecord(id, { init_timestamp: iso(US0), ...fields });

/** An llm event at US0 + 1 s, as services store it (cost_source set). */
export const event = (id: string, fields: Partial<EventRecord> = {}) =>
  newEvent(id, { init_timestamp: iso(US0 + 1_000_000), ...fields });

/** An event at this instant, ending at `endUs` (or not ended). */
export const eventAt = (id: string, us: number, fields: Partial<EventRecord> = {}, endUs?: number) =>
  event(id, {
    init_timestamp: iso(us),
    init_us: us,
    end_timestamp: endUs === undefined ? null : iso(endUs),
    ...fields,
  });

export const NO_TOTALS: SessionTotals = {
  events: 0,
  event_counts: { llm: 0, tool: 0, action: 0, error: 0 },
  prompt_tokens: 0,
  completion_tokens: 0,
  cache_read_tokens: 0,
  cache_creation_tokens: 0,
  reasoning_tokens: 0,
  cost: 0,
  first_us: null,
  last_us: null,
};

export const WHOLE = { agents: true, events: true };
export const T0 = "2026-11-22T00:00:00Z";

/** JSON with every object's keys sorted: the same text for the same data, whatever the key order. */
export const canonical = (value: unknown) =>
  JSON.stringify(value, (_key, v: unknown) =>
    v !== null && typeof v === "object" && !Array.isArray(v)
      ? Object.fromEntries(Object.entries(v).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)))
      : v,
  );

/**
 * strictSame for values holding nasty(): tcompare's strict mode takes an own `constructor` key for
 * the object's class and fails two equal copies ("object identities differ"), so these compare
 * as JSON, which is as strict about types and every character.
 */
export const sameData = (t: Test, actual: unknown, expected: unknown, message: string) =>
  t.equal(canonical(actual), canonical(expected), message);

/** A rejection's error, or "resolved". */
export const failure = (promise: Promise<unknown>) =>
  promise.then(
    () => "resolved",
    (error: unknown) => error,
  );
