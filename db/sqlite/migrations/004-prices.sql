-- agentmon schema, version 4: prices that match the invoice (issue 17 part 6,
-- docs/decisions/015-prices.md).

-- The detail counts of an llm call: the parts of prompt_tokens read from and written to the
-- provider's prompt cache, and the part of completion_tokens spent on reasoning. NULL: not given.
-- Rows written before version 4 have none; they keep the cost they were stored with.
ALTER TABLE events ADD COLUMN cache_read_tokens INTEGER;
ALTER TABLE events ADD COLUMN cache_creation_tokens INTEGER;
ALTER TABLE events ADD COLUMN reasoning_tokens INTEGER;

-- Price tables imported with `agentmon prices import FILE`, the file's text as it was checked. The
-- latest (highest seq) is a layer of the price table from the server's next start, under
-- AGENTMON_PRICES and over the shipped prices/models.json; the older ones are kept as a record.
CREATE TABLE price_imports (
  seq         INTEGER PRIMARY KEY,
  imported_at TEXT NOT NULL,
  source      TEXT NOT NULL,
  body        TEXT NOT NULL
) STRICT;
