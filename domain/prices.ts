/**
 * Cost of llm events (issue 5; issue 17 part 6, docs/decisions/015-prices.md): an event sent
 * without `cost` is priced from a model price table. The table is layered: the file named by
 * AGENTMON_PRICES first, then the table last imported into the database (`agentmon prices
 * import`), then the shipped `prices/models.json`; the first layer that prices a model at an
 * instant prices it. Every event records where its cost came from: `client`, `table` or `unknown`.
 *
 * The counts an event is priced by (openapi.yaml, Event): `prompt_tokens` is every input token,
 * and `cache_read_tokens` and `cache_creation_tokens` are parts of it; `completion_tokens` is every
 * output token, and `reasoning_tokens` is a part of it (OpenAI's and OpenTelemetry's way).
 */
import { readFileSync } from "node:fs";
import { fromRoot } from "../lib/paths.ts";
import type { EventRecord, ImportedPrices } from "./types.ts";

/** One line of a price table, as written in the JSON file. Prices are USD. */
export interface PriceEntry {
  /** A JavaScript regular expression tested against the model name, case-insensitively. */
  pattern: string;
  /** YYYY-MM-DD (UTC): the entry prices events whose init_timestamp is on or after this day. */
  effective_from: string;
  /**
   * YYYY-MM-DD (UTC), exclusive: the entry prices events before this day. Absent: until the next
   * entry of the same pattern (in the same table) takes effect, or for ever.
   */
  effective_until?: string;
  /** Per million prompt (input) tokens that are not cache reads or writes. */
  prompt_per_million: number;
  /** Per million completion (output) tokens that are not reasoning tokens. */
  completion_per_million: number;
  /** Per million input tokens read from the provider's prompt cache; absent: prompt_per_million. */
  cache_read_per_million?: number;
  /** Per million input tokens written to the provider's prompt cache; absent: prompt_per_million. */
  cache_creation_per_million?: number;
  /** Per million reasoning (thinking) tokens; absent: completion_per_million, as providers bill them. */
  reasoning_per_million?: number;
  /** Per call (per llm event), on top of the tokens; absent: 0. */
  per_request?: number;
  /** Free text, for people: where the prices come from and when they were read. Not used. */
  note?: string;
}

/** An entry as a lookup finds it, with the layer it comes from. */
export type FoundPrice = PriceEntry & { layer: string };

interface CompiledEntry extends FoundPrice {
  regex: RegExp;
  from_us: number;
  /** Exclusive; Infinity when open-ended. */
  until_us: number;
}

export interface PriceTable {
  /** The entry that prices this model at this instant (microseconds since the epoch), if any. */
  lookup(model: string, atUs: number): FoundPrice | undefined;
}

/** One layer of a table: its name (said by `agentmon prices check`) and its entries. */
export interface PriceLayer {
  name: string;
  entries: PriceEntry[];
}

const SHIPPED = fromRoot("prices/models.json");
const REQUIRED = ["pattern", "effective_from", "prompt_per_million", "completion_per_million"] as const;
const PER_MILLION = [
  "prompt_per_million",
  "completion_per_million",
  "cache_read_per_million",
  "cache_creation_per_million",
  "reasoning_per_million",
] as const;
const KEYS: readonly string[] = [...REQUIRED, "effective_until", ...PER_MILLION.slice(2), "per_request", "note"];
const DAY = /^(\d{4})-(\d{2})-(\d{2})$/;

function dayUs(text: string): number | undefined {
  const m = DAY.exec(text);
  if (!m) return undefined;
  const ms = Date.UTC(Number(m[1]), Number(m[2]) - 1, Number(m[3]));
  // Date.UTC rolls 2024-02-30 over into March: such a day does not exist.
  return new Date(ms).toISOString().startsWith(text) ? ms * 1000 : undefined;
}

const isPrice = (value: unknown): value is number => typeof value === "number" && Number.isFinite(value) && value >= 0;

/** Checks one entry; answers it with the keys it was written with, in the file's order. */
function checkEntry(entry: unknown, where: string): PriceEntry {
  if (typeof entry !== "object" || entry === null || Array.isArray(entry)) {
    throw new Error(`${where} must be an object`);
  }
  const e = entry as Record<string, unknown>;
  const unknown = Object.keys(e).filter((key) => !KEYS.includes(key));
  if (unknown.length > 0) {
    throw new Error(`${where} has unknown keys: ${unknown.join(", ")} (allowed: ${KEYS.join(", ")})`);
  }
  const missing = REQUIRED.filter((key) => !(key in e));
  if (missing.length > 0) throw new Error(`${where} lacks ${missing.join(", ")}`);
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
  if ("effective_until" in e) {
    if (typeof e.effective_until !== "string" || dayUs(e.effective_until) === undefined) {
      throw new Error(
        `${where}: effective_until must be a date written YYYY-MM-DD (the first day it no longer applies)`,
      );
    }
    if (e.effective_until <= e.effective_from) {
      throw new Error(
        `${where}: effective_until (${e.effective_until}) must be after effective_from (${e.effective_from}); it is exclusive`,
      );
    }
  }
  for (const key of PER_MILLION) {
    if (key in e && !isPrice(e[key])) {
      throw new Error(`${where}: ${key} must be a number >= 0 (USD per million tokens)`);
    }
  }
  if ("per_request" in e && !isPrice(e.per_request)) {
    throw new Error(`${where}: per_request must be a number >= 0 (USD per call)`);
  }
  if ("note" in e && typeof e.note !== "string") throw new Error(`${where}: note must be a string`);
  return { ...e } as unknown as PriceEntry;
}

/**
 * Entries of one table with the same pattern must not be valid at the same instant: such a table
 * says two prices for one call. An entry without effective_until ends where the next entry of its
 * pattern begins, so only two entries starting the same day, or an effective_until past the next
 * entry's effective_from, overlap.
 */
function checkOverlaps(entries: PriceEntry[], source: string): void {
  const byPattern = new Map<string, number[]>();
  entries.forEach((entry, index) => {
    const list = byPattern.get(entry.pattern) ?? [];
    list.push(index);
    byPattern.set(entry.pattern, list);
  });
  for (const [pattern, indexes] of byPattern) {
    // Dates as written (YYYY-MM-DD) sort as strings, as they are compared below; localeCompare
    // would also start ICU's collator, 8 ms of every start (B4).
    const from = (index: number) => (entries[index] as PriceEntry).effective_from;
    const sorted = [...indexes].sort((a, b) => (from(a) < from(b) ? -1 : from(a) > from(b) ? 1 : 0));
    for (let i = 1; i < sorted.length; i++) {
      const [a, b] = [sorted[i - 1] as number, sorted[i] as number];
      const [ea, eb] = [entries[a] as PriceEntry, entries[b] as PriceEntry];
      const [first, second] = a < b ? [a, b] : [b, a];
      const both = `${source}: entries ${first} and ${second} overlap (pattern ${JSON.stringify(pattern)})`;
      if (ea.effective_from === eb.effective_from) {
        throw new Error(`${both}: both take effect on ${ea.effective_from}; keep one of them`);
      }
      if (ea.effective_until !== undefined && ea.effective_until > eb.effective_from) {
        throw new Error(
          `${both}: entry ${a} is valid from ${ea.effective_from} until ${ea.effective_until}, entry ${b} from ` +
            `${eb.effective_from}; end entry ${a} on or before ${eb.effective_from} (effective_until is exclusive)`,
        );
      }
    }
  }
}

/**
 * Reads a price table (a JSON array of entries) and checks every entry and the table as a whole,
 * so that a mistake stops the start (or the import) with a message naming the entry, not a wrong
 * bill later. `source` names the file. Entries are numbered from 0, in the file's order.
 */
export function parsePrices(text: string, source: string): PriceEntry[] {
  let data: unknown;
  try {
    data = JSON.parse(text);
  } catch (error) {
    throw new Error(`${source} is not valid JSON: ${(error as Error).message}`);
  }
  if (!Array.isArray(data)) throw new Error(`${source} must be a JSON array of price entries`);
  const entries = data.map((entry: unknown, index) => checkEntry(entry, `${source}: entry ${index}`));
  checkOverlaps(entries, source);
  return entries;
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

/** The entries of an imported table, checked again (a newer agentmon may check more). */
export function importedEntries(imported: ImportedPrices | undefined): PriceEntry[] {
  if (imported === undefined) return [];
  try {
    return parsePrices(imported.text, imported.source);
  } catch (error) {
    throw new Error(
      `the price table imported on ${imported.imported_at} is not valid (${(error as Error).message}); ` +
        "correct it and import it again with `agentmon prices import FILE`",
    );
  }
}

function compile(layer: PriceLayer): CompiledEntry[] {
  const compiled = layer.entries.map((entry) => ({
    ...entry,
    layer: layer.name,
    regex: new RegExp(entry.pattern, "i"),
    from_us: dayUs(entry.effective_from) as number,
    until_us: entry.effective_until === undefined ? Number.POSITIVE_INFINITY : (dayUs(entry.effective_until) as number),
  }));
  // An open-ended entry ends where the next entry of its pattern begins.
  for (const entry of compiled) {
    if (entry.effective_until !== undefined) continue;
    for (const other of compiled) {
      if (other.pattern === entry.pattern && other.from_us > entry.from_us && other.from_us < entry.until_us) {
        entry.until_us = other.from_us;
      }
    }
  }
  // Latest first; Array.prototype.sort is stable, so among equal dates the file's order stays.
  return compiled.sort((a, b) => b.from_us - a.from_us);
}

/**
 * A table of layers, looked at in order: the first layer with an entry for the model at the
 * instant prices it. Within one layer the entry used is, of the entries whose pattern matches and
 * whose [effective_from, end) holds the instant, the one with the latest effective_from (on a tie,
 * the first in the file).
 */
export function layeredPrices(layers: PriceLayer[]): PriceTable {
  const tables = layers.map(compile);
  // The entries that match a model name, per layer; models are few, events many.
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
        const entry = table.find((e) => e.from_us <= atUs && atUs < e.until_us);
        if (entry) return entry;
      }
      return undefined;
    },
  };
}

/** The names of the layers, as `agentmon prices check` and the docs say them. */
export const LAYERS = { overrides: "AGENTMON_PRICES", imported: "imported", shipped: "shipped" } as const;

/**
 * The table used for pricing: `overrides` (AGENTMON_PRICES) first, then `imported` (the table
 * imported into the database), then `base` (the shipped one).
 */
export function priceTable(
  overrides: PriceEntry[] = [],
  base: PriceEntry[] = shippedPrices(),
  imported: PriceEntry[] = [],
): PriceTable {
  return layeredPrices([
    { name: LAYERS.overrides, entries: overrides },
    { name: LAYERS.imported, entries: imported },
    { name: LAYERS.shipped, entries: base },
  ]);
}

/** The token counts an event is priced by. */
type Counts = Pick<EventRecord, "prompt_tokens" | "completion_tokens"> &
  Partial<Pick<EventRecord, "cache_read_tokens" | "cache_creation_tokens" | "reasoning_tokens">>;

const hasTokens = (c: Counts) =>
  c.prompt_tokens !== null ||
  c.completion_tokens !== null ||
  (c.cache_read_tokens ?? null) !== null ||
  (c.cache_creation_tokens ?? null) !== null ||
  (c.reasoning_tokens ?? null) !== null;

/**
 * The price of one call, USD, rounded to 12 decimal places (token_cost's precision, S6), so that a
 * bill written out by hand in decimals is the number stored:
 *
 *   uncached  = max(0, prompt_tokens − cache_read_tokens − cache_creation_tokens)
 *   answered  = max(0, completion_tokens − reasoning_tokens)
 *   cost      = (uncached × prompt + cache_read_tokens × cache_read + cache_creation_tokens ×
 *                cache_creation + answered × completion + reasoning_tokens × reasoning) / 1 000 000
 *               + per_request
 *
 * A missing count counts as 0; a missing rate is the prompt's (cache) or the completion's
 * (reasoning) rate.
 */
export function callCost(counts: Counts, price: PriceEntry): number {
  const read = counts.cache_read_tokens ?? 0;
  const creation = counts.cache_creation_tokens ?? 0;
  const reasoning = counts.reasoning_tokens ?? 0;
  const uncached = Math.max(0, (counts.prompt_tokens ?? 0) - read - creation);
  const answered = Math.max(0, (counts.completion_tokens ?? 0) - reasoning);
  const prompt = price.prompt_per_million;
  const completion = price.completion_per_million;
  // One division, so that whole-token prices give the decimal a person would write.
  const micro =
    uncached * prompt +
    read * (price.cache_read_per_million ?? prompt) +
    creation * (price.cache_creation_per_million ?? prompt) +
    answered * completion +
    reasoning * (price.reasoning_per_million ?? completion);
  return Number((micro / 1_000_000 + (price.per_request ?? 0)).toFixed(12));
}

/**
 * Sets an event's cost and cost_source: a client's cost always stands; otherwise an llm event
 * whose model the table prices at its init_timestamp is priced (callCost) when it has a token
 * count or the entry has a per-request price, and anything else has no cost. Run after every
 * create and update of an event, so that a change of model, tokens or time re-prices a table
 * cost. Events already stored are not re-priced when the table changes.
 */
export function priceEvent(event: EventRecord, prices: PriceTable): EventRecord {
  const source = event.cost_source ?? (event.cost === null ? "unknown" : "client");
  if (source === "client") return { ...event, cost_source: "client" };
  const price = event.type === "llm" && event.model !== null ? prices.lookup(event.model, event.init_us) : undefined;
  if (!price || !(hasTokens(event) || (price.per_request ?? 0) > 0))
    return { ...event, cost: null, cost_source: "unknown" };
  return { ...event, cost: callCost(event, price), cost_source: "table" };
}
