/**
 * Price tables kept in the database (`agentmon prices import`) and the models the stored llm
 * events lack a price for (`agentmon prices check`); docs/decisions/015-prices.md.
 */
import type { ImportedPrices, UnpricedModel } from "../../domain/types.ts";
import type { Db } from "./open.ts";

export function priceStatements(db: Db) {
  const q = {
    insert: db.prepare("INSERT INTO price_imports (imported_at, source, body) VALUES (?, ?, ?)"),
    latest: db.prepare<[], { imported_at: string; source: string; body: string }>(
      "SELECT imported_at, source, body FROM price_imports ORDER BY seq DESC LIMIT 1",
    ),
    // A scan of the events (an operator's command, not a request): grouped by model.
    unpriced: db.prepare<[], UnpricedModel>(
      `SELECT model, count(*) AS events,
         count(*) FILTER (WHERE prompt_tokens IS NOT NULL OR completion_tokens IS NOT NULL
           OR cache_read_tokens IS NOT NULL OR cache_creation_tokens IS NOT NULL
           OR reasoning_tokens IS NOT NULL) AS with_tokens,
         min(init_us) AS first_us, max(init_us) AS last_us
       FROM events WHERE type = 'llm' AND cost_source = 'unknown' AND model IS NOT NULL
       GROUP BY model ORDER BY events DESC, model`,
    ),
  };
  return {
    /** Keeps the table's text; inside the caller's transaction. */
    import(text: string, source: string, now: string): void {
      q.insert.run(now, source, text);
    },
    imported(): ImportedPrices | undefined {
      const row = q.latest.get();
      return row === undefined ? undefined : { text: row.body, source: row.source, imported_at: row.imported_at };
    },
    unpriced: (): UnpricedModel[] => q.unpriced.all(),
  };
}
