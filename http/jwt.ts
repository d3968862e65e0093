/**
 * JWTs (contract 4.4): HS256 with the claims session_id, project_id, key_id, iat and exp.
 */
import { createHmac, timingSafeEqual } from "node:crypto";
import type { Claims } from "../domain/types.ts";

export type { Claims };

export const JWT_LIFETIME_SECONDS = 24 * 60 * 60;

const HEADER = Buffer.from(JSON.stringify({ alg: "HS256", typ: "JWT" })).toString("base64url");
const BASE64URL = /^[A-Za-z0-9_-]*$/;

const sign = (input: string, secret: string) => createHmac("sha256", secret).update(input).digest();

export function signJwt(claims: Omit<Claims, "exp">, secret: string): string {
  const payload = Buffer.from(JSON.stringify({ ...claims, exp: claims.iat + JWT_LIFETIME_SECONDS })).toString(
    "base64url",
  );
  return `${HEADER}.${payload}.${sign(`${HEADER}.${payload}`, secret).toString("base64url")}`;
}

function decodeJson(part: string): Record<string, unknown> | undefined {
  try {
    const value: unknown = JSON.parse(Buffer.from(part, "base64url").toString("utf8"));
    return typeof value === "object" && value !== null && !Array.isArray(value)
      ? (value as Record<string, unknown>)
      : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Tokens whose signature and claims were verified, with the secret they were verified under: a
 * client sends the same token with every call, and the HMAC is most of the cost of checking it
 * (issue 3, B2). Only exact strings already verified hit; expiry is checked at every use.
 */
const verified = new Map<string, { secret: string; claims: Claims }>();

/** The claims of a well-formed, HS256-signed, unexpired token; undefined for anything else. */
export function verifyJwt(token: string, secret: string, nowSeconds: number): Claims | undefined {
  const hit = verified.get(token);
  const claims = hit !== undefined && hit.secret === secret ? hit.claims : verifySigned(token, secret);
  if (claims === undefined || !timely(claims, nowSeconds)) return undefined;
  if (hit === undefined) {
    if (verified.size >= 4096) verified.clear();
    verified.set(token, { secret, claims });
  }
  return claims;
}

function verifySigned(token: string, secret: string): Claims | undefined {
  const parts = token.split(".");
  if (parts.length !== 3 || !parts.every((part) => BASE64URL.test(part))) return undefined;
  const [header, payload, signature] = parts as [string, string, string];
  if (decodeJson(header)?.alg !== "HS256") return undefined;
  const expected = sign(`${header}.${payload}`, secret);
  const given = Buffer.from(signature, "base64url");
  if (given.length !== expected.length || !timingSafeEqual(given, expected)) return undefined;
  // Only the canonical encoding: the last character of a 32-byte signature has 2 spare bits.
  if (given.toString("base64url") !== signature) return undefined;
  const claims = decodeJson(payload);
  if (
    !claims ||
    typeof claims.session_id !== "string" ||
    typeof claims.project_id !== "string" ||
    typeof claims.key_id !== "string" ||
    typeof claims.iat !== "number" ||
    typeof claims.exp !== "number" ||
    // 4.4: exp = iat + 24 h.
    claims.exp - claims.iat > JWT_LIFETIME_SECONDS
  ) {
    return undefined;
  }
  return claims as unknown as Claims;
}

/** Not expired, and not issued in the future (a minute of clock skew allowed). */
const timely = (claims: Claims, nowSeconds: number) => claims.exp > nowSeconds && claims.iat <= nowSeconds + 60;
