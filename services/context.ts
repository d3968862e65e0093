/** What services work with: storage, the clock, prices, the token issuer, the public address. */
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
}

/** The page of a session in the web UI (S2). */
export const sessionUrl = (context: Context, id: string) => `${context.publicUrl()}/sessions/${encodeURIComponent(id)}`;
