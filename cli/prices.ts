/**
 * `agentmon prices check|import FILE` (docs/decisions/015-prices.md): which models of the stored
 * llm events have no price, and a newer price table without a release, kept in the database and
 * used by `agentmon serve` from its next start (after AGENTMON_PRICES, before the shipped table).
 */
import { readFileSync } from "node:fs";
import { resolve } from "node:path";
import type { Store } from "../db/store.ts";
import {
  type FoundPrice,
  importedEntries,
  LAYERS,
  type PriceEntry,
  parsePrices,
  priceTable,
  shippedPrices,
} from "../domain/prices.ts";
import type { ImportedPrices, UnpricedModel } from "../domain/types.ts";
import { isoFromMicros } from "../domain/views.ts";
import { type Config, ConfigError, type Output, USAGE } from "./config.ts";
import { openCommandStore } from "./storage.ts";

async function withStore<T>(config: Config, use: (store: Store) => Promise<T>): Promise<T> {
  const store = await openCommandStore(config);
  try {
    return await use(store);
  } finally {
    await store.close();
  }
}

/** Checks the file as `serve` would and keeps its text in the database. */
async function importTable(file: string | undefined, config: Config, io: Output): Promise<number> {
  if (file === undefined || file === "")
    throw new ConfigError("prices import needs a file: agentmon prices import FILE");
  const path = resolve(file);
  let text: string;
  try {
    text = readFileSync(path, "utf8");
  } catch (error) {
    throw new ConfigError(`cannot read the price table ${path}: ${(error as NodeJS.ErrnoException).code ?? "error"}`);
  }
  let entries: PriceEntry[];
  try {
    entries = parsePrices(text, path);
  } catch (error) {
    throw new ConfigError(`nothing imported: ${(error as Error).message}`);
  }
  await withStore(config, (store) => store.importPrices(text, path, new Date().toISOString()));
  io.out(
    `Imported ${entries.length} price ${entries.length === 1 ? "entry" : "entries"} from ${path} into ${config.db}.`,
  );
  io.out(
    "agentmon serve prices with them from its next start: after AGENTMON_PRICES, before the shipped table. " +
      "Events already stored keep their cost.",
  );
  return 0;
}

const describe = (price: FoundPrice | undefined) =>
  price === undefined ? "none" : `${price.layer}, from ${price.effective_from}`;

/** A table of text, columns padded; numbers right-aligned. */
function columns(rows: string[][], right: Set<number>): string[] {
  const widths = rows[0]?.map((_, i) => Math.max(...rows.map((row) => (row[i] ?? "").length))) ?? [];
  return rows.map((row) =>
    row
      .map((cell, i) => (right.has(i) ? cell.padStart(widths[i] ?? 0) : cell.padEnd(widths[i] ?? 0)))
      .join("  ")
      .trimEnd(),
  );
}

/**
 * Lists the models of llm events that have no cost, with whether the table the server would use
 * now (AGENTMON_PRICES, the imported table, the shipped one) prices that model for an event
 * arriving now. Exit 1 when some model has no price, so that a cron job can say so.
 */
async function check(config: Config, io: Output): Promise<number> {
  const { imported, unpriced } = await withStore(config, async (store) => ({
    imported: await store.importedPrices(),
    unpriced: await store.unpricedModels(),
  }));
  let table: ReturnType<typeof priceTable>;
  try {
    table = priceTable(config.prices ?? [], shippedPrices(), importedEntries(imported));
  } catch (error) {
    throw new ConfigError((error as Error).message);
  }
  io.out(`Price table: ${layers(config, imported)}.`);
  if (unpriced.length === 0) {
    io.out("Every llm event that names a model has a cost.");
    return 0;
  }
  const nowUs = Date.now() * 1000;
  const found = unpriced.map((row: UnpricedModel) => ({ row, price: table.lookup(row.model, nowUs) }));
  io.out("llm events without a cost, by model (every project):");
  const rows = [
    ["model", "events", "with tokens", "first", "last", "price now"],
    ...found.map(({ row, price }) => [
      row.model,
      String(row.events),
      String(row.with_tokens),
      isoFromMicros(row.first_us),
      isoFromMicros(row.last_us),
      describe(price),
    ]),
  ];
  for (const line of columns(rows, new Set([1, 2]))) io.out(`  ${line}`);
  const missing = found.filter(({ price }) => price === undefined).length;
  if (missing > 0) {
    io.out(
      `${missing} ${missing === 1 ? "model has" : "models have"} no price: add ${missing === 1 ? "it" : "them"} to a ` +
        "price table (agentmon prices import FILE, or AGENTMON_PRICES).",
    );
  }
  io.out(
    "Events already stored are not re-priced; new events of a priced model are (an event with no token count " +
      "is priced only by a price per call).",
  );
  return missing > 0 ? 1 : 0;
}

function layers(config: Config, imported: ImportedPrices | undefined): string {
  const parts: string[] = [];
  const count = (n: number) => `${n} ${n === 1 ? "entry" : "entries"}`;
  if (config.prices !== undefined) parts.push(`${LAYERS.overrides} (${count(config.prices.length)})`);
  if (imported !== undefined) parts.push(`${LAYERS.imported} ${imported.imported_at} from ${imported.source}`);
  parts.push(`${LAYERS.shipped} (${count(shippedPrices().length)})`);
  return parts.join(", then ");
}

export async function prices(sub: string | undefined, args: string[], config: Config, io: Output): Promise<number> {
  if (sub === "check") return check(config, io);
  if (sub === "import") return importTable(args[0], config, io);
  io.err(USAGE);
  return 2;
}
