/**
 * Page cursors of the read API: opaque base64url strings that carry where the next page starts
 * (a keyset position: init_us and id of the last row given), which list made them, and a
 * checksum. The checksum is not a secret: it tells an altered or truncated cursor from a real one
 * (a 400 rather than a wrong page); a forged cursor can only move within the caller's own data.
 */
import { createHash } from "node:crypto";
import { hasNul } from "./nul.ts";
import type { Position } from "./types.ts";

/** The session list's cursors of another order than the default name it: `sessions:cost:asc`. */
export type CursorKind = "sessions" | "events" | "audit" | "scores" | `sessions:${string}:${string}`;

const CHECK_BYTES = 6;
const BASE64URL = /^[A-Za-z0-9_-]+$/;
const check = (payload: Buffer) => createHash("sha256").update(payload).digest().subarray(0, CHECK_BYTES);

export function encodeCursor(kind: CursorKind, position: Position): string {
  const payload = Buffer.from(JSON.stringify([kind, position.init_us, position.id]), "utf8");
  return Buffer.concat([payload, check(payload)]).toString("base64url");
}

/** The position a cursor of this kind carries; undefined for anything else. */
export function decodeCursor(kind: CursorKind, text: string): Position | undefined {
  if (!BASE64URL.test(text)) return undefined;
  const bytes = Buffer.from(text, "base64url");
  // Node decodes base64url leniently: only a cursor that encodes back to the same text is one.
  if (bytes.length <= CHECK_BYTES || bytes.toString("base64url") !== text) return undefined;
  const payload = bytes.subarray(0, bytes.length - CHECK_BYTES);
  if (!check(payload).equals(bytes.subarray(bytes.length - CHECK_BYTES))) return undefined;
  let value: unknown;
  try {
    value = JSON.parse(payload.toString("utf8"));
  } catch {
    return undefined;
  }
  if (!Array.isArray(value) || value.length !== 3) return undefined;
  const [k, initUs, id] = value as unknown[];
  if (k !== kind || typeof initUs !== "number" || !Number.isFinite(initUs) || typeof id !== "string") return undefined;
  // A forged cursor must not carry U+0000 into a query of the store (decision 017).
  if (hasNul(id)) return undefined;
  return { init_us: initUs, id };
}
