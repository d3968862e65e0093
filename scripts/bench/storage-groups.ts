/**
 * Which part of the data a table or index of agentmon's schema is (bench:storage, issue 24 §7):
 * the raw rows the acknowledged write keeps, or one projection (something derived from them, that
 * the projector maintains), or neither that this list knows ("other", so that a table added later
 * shows up in the report instead of being missed).
 *
 * An index counts with its table, except the indexes that exist only for a projection: the
 * session-totals sort indexes over the sessions' derived columns (decision 022), and the
 * full-text indexes PostgreSQL keeps as GIN indexes on events and sessions (decision 023).
 */

export type Kind = "raw" | "projection" | "other";
export interface Group {
  kind: Kind;
  /** The line of the report: a table's name, or a projection's (several tables for FTS). */
  group: string;
}

/** Tables of raw rows: what the contract keeps durably, and the bookkeeping around it. */
export const RAW_TABLES = [
  "sessions",
  "events",
  "agents",
  "span_records",
  "session_logs",
  "api_keys",
  "projects",
  "meta",
  "price_imports",
  "rate_limits",
  "rate_buckets",
  "migrations",
  "agentmon_schema",
  "scores",
  "score_configs",
] as const;

/** Projections, one line each (issue 24's list); FTS shadow tables and the prefixes are below. */
export const PROJECTION_TABLES = [
  "session_totals",
  "session_models",
  "session_keys",
  "session_rollups",
  "session_rollup_durations",
  "event_rollups",
  "event_rollup_durations",
  "score_facts",
] as const;

/** Indexes on sessions over the totals columns (sort by duration, cost, tokens, event count). */
const TOTALS_INDEXES = /^sessions_by_project_(duration|cost|tokens|events)$/;

/**
 * The group of a b-tree (SQLite: a table, an index, an FTS shadow table) or a relation (PostgreSQL)
 * named `name`, that belongs to table `table` (the same name for a table).
 */
export function groupOf(name: string, table: string = name): Group {
  const n = name.toLowerCase();
  const t = table.toLowerCase();
  if (n !== t && TOTALS_INDEXES.test(n)) return { kind: "projection", group: "session totals (sort indexes)" };
  // SQLite's FTS5 tables and their shadow tables (event_search_data, _idx, _docsize, _config,
  // the pending queue); PostgreSQL's GIN indexes events_search and sessions_search.
  if (t.startsWith("event_search") || (n !== t && t === "events" && n.includes("search")))
    return { kind: "projection", group: "event_search*" };
  if (t.startsWith("session_search") || (n !== t && t === "sessions" && n.includes("search")))
    return { kind: "projection", group: "session_search*" };
  if ((PROJECTION_TABLES as readonly string[]).includes(t)) return { kind: "projection", group: t };
  if (t.startsWith("projection")) return { kind: "projection", group: t };
  if (t.startsWith("session_shares")) return { kind: "projection", group: t };
  if ((RAW_TABLES as readonly string[]).includes(t)) return { kind: "raw", group: t };
  // SQLite's own: the schema, sequences, ANALYZE's statistics.
  if (t.startsWith("sqlite_")) return { kind: "other", group: "sqlite internals" };
  return { kind: "other", group: t };
}

export interface Measured {
  /** The b-tree or relation. */
  name: string;
  /** The table it belongs to. */
  table: string;
  bytes: number;
}

export interface Line {
  kind: Kind;
  group: string;
  bytes: number;
  /** The b-trees or relations counted in it. */
  parts: string[];
}

/** Sums measured b-trees into their groups: raw first, then projections, then other; largest first. */
export function attribute(measured: Measured[]): Line[] {
  const lines = new Map<string, Line>();
  for (const m of measured) {
    const { kind, group } = groupOf(m.name, m.table);
    const key = `${kind}\0${group}`;
    const line = lines.get(key) ?? { kind, group, bytes: 0, parts: [] };
    line.bytes += m.bytes;
    line.parts.push(m.name);
    lines.set(key, line);
  }
  const order: Record<Kind, number> = { raw: 0, projection: 1, other: 2 };
  return [...lines.values()].sort((a, b) => order[a.kind] - order[b.kind] || b.bytes - a.bytes);
}
