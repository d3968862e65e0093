/**
 * Cost of llm events (issue 5): an event sent without `cost` is priced from a model price table,
 * `prices/models.json`, which a file named by AGENTMON_PRICES overrides or extends. Every event
 * records where its cost came from: `client`, `table` or `unknown`.
 */
import { readFileSync } from "node:fs";
import { fromRoot } from "../lib/paths.ts";
import type { EventRecord } from "./types.ts";

/** One line of a price table, as written in the JSON file. */
export interface PriceEntry {
  /** A JavaScript regular expression tested against the model name, case-insensitively. */
  pattern: string;
  /** YYYY-MM-DD (UTC): the entry prices events whose init_timestamp is on or after this day. */
  effective_from: string;
  /** USD per million prompt tokens. */
  prompt_per_million: number;
  /** USD per million completion tokens. */
  completion_per_million: number;
}

interface CompiledEntry extends PriceEntry {
  regex: RegExp;
  from_us: number;
}

export interface PriceTable {
  /** The entry that prices this model at this instant (microseconds since the epoch), if any. */
  lookup(model: string, atUs: number): PriceEntry | undefined;
}

const SHIPPED = fromRoot("prices/models.json");
const KEYS = ["pattern", "effective_from", "prompt_per_million", "completion_per_million"];
const DAY = /^(\d{4})-(\d{2})-(\d{2})$/;

function dayUs(text: string): number | undefined {
  const m = DAY.exec(text);
  if (!m) return undefined;
  const ms = Date.UTC(Number(m[1]), Number(m[2]) - 1, Number(m[3]));
  // Date.UTC rolls 2024-02-30 over into March: such a day does not exist.
  return new Date(ms).toISOString().startsWith(text) ? ms * 1000 : undefined;
}

/**
 * Reads a price table (a JSON array of entries) and checks every entry, so that a mistake stops
 * the start with a message naming the entry, not a wrong bill later. `source` names the file.
 */
export function parsePrices(text: string, source: string): PriceEntry[] {
  let data: unknown;
  try {
    data = JSON.parse(text);
  } catch (error) {
    throw new Error(`${source} is not valid JSON: ${(error as Error).message}`);
  }
  if (!Array.isArray(data)) throw new Error(`${source} must be a JSON array of price entries`);
  return data.map((entry: unknown, index) => {
    const where = `${source}: entry ${index}`;
    if (typeof entry !== "object" || entry === null || Array.isArray(entry)) {
      throw new Error(`${where} must be an object`);
    }
    const e = entry as Record<string, unknown>;
    const unknown = Object.keys(e).filter((key) => !KEYS.includes(key));
    if (unknown.length > 0)
      throw new Error(`${where} has unknown keys: ${unknown.join(", ")} (allowed: ${KEYS.join(", ")})`);
    if (typeof e.pattern !== "string" || e.pattern === "")
      throw new Error(`${where}: pattern must be a non-empty string`);
    try {
      new RegExp(e.pattern, "i");
    } catch {
      throw new Error(`${where}: pattern ${JSON.stringify(e.pattern)} is not a valid regular expression`);
    }
    if (typeof e.effective_from !== "string" || dayUs(e.effective_from) === undefined) {
      throw new Error(`${where}: effective_from must be a date written YYYY-MM-DD`);
    }
    for (const key of ["prompt_per_million", "completion_per_million"]) {
      const value = e[key];
      if (typeof value !== "number" || !Number.isFinite(value) || value < 0) {
        throw new Error(`${where}: ${key} must be a number >= 0 (USD per million tokens)`);
      }
    }
    return {
      pattern: e.pattern,
      effective_from: e.effective_from,
      prompt_per_million: e.prompt_per_million as number,
      completion_per_million: e.completion_per_million as number,
    };
  });
}

/** Reads a price table file; errors say which file and which entry. */
export function readPrices(path: string | URL): PriceEntry[] {
  let text: string;
  try {
    text = readFileSync(path, "utf8");
  } catch (error) {
    throw new Error(`cannot read the price table ${String(path)}: ${(error as NodeJS.ErrnoException).code ?? "error"}`);
  }
  return parsePrices(text, String(path));
}

let shipped: PriceEntry[] | undefined;
/** The table shipped with agentmon, prices/models.json. */
export const shippedPrices = (): PriceEntry[] => {
  shipped ??= readPrices(SHIPPED);
  return shipped;
};

function compile(entries: PriceEntry[]): CompiledEntry[] {
  const compiled = entries.map((entry) => ({
    ...entry,
    regex: new RegExp(entry.pattern, "i"),
    from_us: dayUs(entry.effective_from) as number,
  }));
  // Latest first; Array.prototype.sort is stable, so among equal dates the file's order stays.
  return compiled.sort((a, b) => b.from_us - a.from_us);
}

/**
 * The table used for pricing: the entries of `overrides` (AGENTMON_PRICES) are looked at first,
 * the shipped ones only for a model and date no override entry prices. Within one table the
 * entry used is the matching one with the latest effective_from not after the event (on a tie,
 * the first in the file).
 */
export function priceTable(overrides: PriceEntry[] = [], base: PriceEntry[] = shippedPrices()): PriceTable {
  const tables = [compile(overrides), compile(base)];
  // The entries that match a model name, per table; models are few, events many.
  const matches = new Map<string, CompiledEntry[][]>();
  return {
    lookup(model, atUs) {
      let found = matches.get(model);
      if (!found) {
        found = tables.map((table) => table.filter((entry) => entry.regex.test(model)));
        if (matches.size >= 10_000) matches.clear(); // a bound, for clients inventing model names
        matches.set(model, found);
      }
      for (const table of found) {
        const entry = table.find((e) => e.from_us <= atUs);
        if (entry) return entry;
      }
      return undefined;
    },
  };
}

/**
 * Sets an event's cost and cost_source: a client's cost always stands; otherwise an llm event
 * with a priced model and at least one token count is priced from the table (a missing count
 * counts as 0), and anything else has no cost. Run after every create and update of an event,
 * so that a change of model, tokens or time re-prices a table cost.
 */
export function priceEvent(event: EventRecord, prices: PriceTable): EventRecord {
  const source = event.cost_source ?? (event.cost === null ? "unknown" : "client");
  if (source === "client") return { ...event, cost_source: "client" };
  const tokens = event.prompt_tokens !== null || event.completion_tokens !== null;
  const price =
    event.type === "llm" && event.model !== null && tokens ? prices.lookup(event.model, event.init_us) : undefined;
  if (!price) return { ...event, cost: null, cost_source: "unknown" };
  // One division, so that whole-token prices give the decimal a person would write.
  const micro =
    (event.prompt_tokens ?? 0) * price.prompt_per_million +
    (event.completion_tokens ?? 0) * price.completion_per_million;
  return { ...event, cost: micro / 1_000_000, cost_source: "table" };
}
