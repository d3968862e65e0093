/**
 * Credentials (contract part 4): API keys are UUIDs kept as SHA-256 hashes; JWTs are HS256 with
 * the claims of 4.4, signed and checked here with node:crypto so that no other algorithm can
 * slip in; failed API-key checks are counted per client address (4.6).
 */
import { createHash, createHmac, randomBytes, timingSafeEqual } from "node:crypto";

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export const isApiKeyShape = (key: string) => UUID.test(key);
export const hashApiKey = (key: string) => createHash("sha256").update(key.toLowerCase()).digest("hex");
/** What `agentmon keys list` shows of a key: enough to recognise it, far too little to use it. */
export const keyPrefix = (key: string) => key.toLowerCase().slice(0, 8);
export const newSecret = () => randomBytes(32).toString("base64url");

export const JWT_LIFETIME_SECONDS = 24 * 60 * 60;

export interface Claims {
  session_id: string;
  project_id: string;
  key_id: string;
  iat: number;
  exp: number;
}

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

/**
 * Counts failed API-key checks per client address in fixed windows: once `limit` failures fall
 * in one window, the address is refused until that window ends.
 */
export class FailureLimiter {
  readonly #windows = new Map<string, { start: number; count: number }>();
  readonly #limit: number;
  readonly #windowMs: number;

  constructor(limit: number, windowMs: number) {
    this.#limit = limit;
    this.#windowMs = windowMs;
  }

  /** Seconds the address must wait, or 0 when it may try. */
  retryAfter(address: string, now: number): number {
    const window = this.#current(address, now);
    if (!window || window.count < this.#limit) return 0;
    return Math.max(1, Math.ceil((window.start + this.#windowMs - now) / 1000));
  }

  fail(address: string, now: number): void {
    const window = this.#current(address, now);
    if (window) window.count += 1;
    else {
      if (this.#windows.size >= 100_000) this.#prune(now);
      this.#windows.set(address, { start: now, count: 1 });
    }
  }

  #current(address: string, now: number) {
    const window = this.#windows.get(address);
    if (window && now - window.start >= this.#windowMs) {
      this.#windows.delete(address);
      return undefined;
    }
    return window;
  }

  #prune(now: number) {
    for (const [address, window] of this.#windows) {
      if (now - window.start >= this.#windowMs) this.#windows.delete(address);
    }
  }
}
