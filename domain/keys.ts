/**
 * API keys (contract 4.1, 4.3): UUIDs, kept only as SHA-256 hashes, shown to people by an
 * 8-character prefix. `isLive` is the one rule of what makes a key usable for a project. A key has
 * scopes (issue 16 part 4), stored as one text column: `ingest,read,admin`.
 */
import { createHash, randomBytes } from "node:crypto";
import type { ApiKeyRecord, Scope } from "./types.ts";

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export const isApiKeyShape = (key: string) => UUID.test(key);
export const hashApiKey = (key: string) => createHash("sha256").update(key.toLowerCase()).digest("hex");
/** What `agentmon keys list` shows of a key: enough to recognise it, far too little to use it. */
export const keyPrefix = (key: string) => key.toLowerCase().slice(0, 8);
export const newSecret = () => randomBytes(32).toString("base64url");

/**
 * Whether a key may act (4.3): it exists, is not revoked, and (when a project is named, as a
 * JWT's claims name one) belongs to that project.
 */
export const isLive = (key: ApiKeyRecord | undefined, projectId?: string): key is ApiKeyRecord =>
  key !== undefined && key.revoked_at === null && (projectId === undefined || key.project_id === projectId);

/** Every scope, in the order they are stored and shown. */
export const SCOPES: readonly Scope[] = ["ingest", "read", "admin", "annotate"];

/**
 * What a key gets when no scope is named, and what keys made before scopes existed have: the
 * three of issue 16. `annotate` (issue 25) is given only when asked for: it is a narrower power.
 */
export const DEFAULT_SCOPES: readonly Scope[] = ["ingest", "read", "admin"];

/** The scopes as the api_keys.scopes column keeps them: `ingest,read`. */
export const scopesColumn = (scopes: readonly Scope[]): string => SCOPES.filter((s) => scopes.includes(s)).join(",");

/** The api_keys.scopes column read back (only scopes it knows; the column is written by scopesColumn). */
export const scopesOfColumn = (column: string): Scope[] => SCOPES.filter((s) => column.split(",").includes(s));

/**
 * A scope list as people write it (`agentmon keys create --scope ingest,read`): names separated by
 * commas, any case, spaces and repeats allowed, `all` for every one. The scopes, or why not.
 */
export function readScopes(text: string): { scopes: Scope[] } | { error: string } {
  const names = text
    .split(",")
    .map((name) => name.trim().toLowerCase())
    .filter((name) => name !== "");
  const unknown = names.filter((name) => name !== "all" && !(SCOPES as readonly string[]).includes(name));
  if (unknown.length > 0) {
    const listed = unknown.map((name) => JSON.stringify(name)).join(", ");
    return { error: `unknown scope ${listed}: the scopes are ${SCOPES.join(", ")} (or all), separated by commas` };
  }
  if (names.length === 0) return { error: `no scope given: the scopes are ${SCOPES.join(", ")} (or all)` };
  return { scopes: names.includes("all") ? [...SCOPES] : SCOPES.filter((s) => names.includes(s)) };
}
