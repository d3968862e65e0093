/**
 * API keys (contract 4.1, 4.3): UUIDs, kept only as SHA-256 hashes, shown to people by an
 * 8-character prefix. `isLive` is the one rule of what makes a key usable for a project.
 */
import { createHash, randomBytes } from "node:crypto";
import type { ApiKeyRecord } from "./types.ts";

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
