/** What services work with: storage, the clock, prices, the token issuer, the public address, the counters. */
import type { Store } from "../db/store.ts";
import type { PriceTable } from "../domain/prices.ts";
import type { OtlpClaims } from "../domain/types.ts";

export interface Context {
  store: Store;
  /** Milliseconds since the epoch. */
  now(): number;
  /** Prices llm events sent without a cost (domain/prices.ts). */
  prices: PriceTable;
  /** Issues a JWT for a session (contract 4.4). */
  issueJwt(claims: { session_id: string; project_id: string; key_id: string }): string;
  /** Issues a token for the OTLP and v4 endpoints (otlp.md T5). */
  issueOtlpToken(claims: OtlpClaims): string;
  /** Base of session_url, without a trailing slash. */
  publicUrl(): string;
  /** What was taken in and refused item by item, for GET /metrics (services/metrics.ts). */
  counts: IngestCounts;
}

/** What GET /metrics counts of the data itself; the HTTP layer counts the requests. */
export type Ingested = "sessions" | "events" | "spans" | "log_records";
export interface IngestCounts {
  /** Items stored by a call that succeeded: new sessions; events, spans, GenAI log records sent. */
  ingested(kind: Ingested, n: number): void;
  /** Items refused one by one inside a call that succeeded (OTLP partial success, T8). */
  rejected(kind: "spans" | "log_records", n: number): void;
}

/** The page of a session in the web UI (S2). */
export const sessionUrl = (context: Context, id: string) => `${context.publicUrl()}/sessions/${encodeURIComponent(id)}`;
