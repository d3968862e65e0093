/**
 * JWTs (contract 4.4): HS256 with the claims session_id, project_id, key_id, iat and exp, signed
 * and verified by @fastify/jwt (fast-jwt under it), which http/auth.ts registers with these
 * options. What fast-jwt cannot express is checked here, on every call, after (or, for the cheap
 * spelling check, before) its verify; decision 010 says why each part is where it is.
 */
import type { FastifyJWTOptions, JWT } from "@fastify/jwt";
import type { Claims, OtlpClaims } from "../domain/types.ts";

export const JWT_LIFETIME_SECONDS = 24 * 60 * 60;
/** 4.4: how far ahead of our clock a token's iat may be (clock skew between the nodes). */
const CLOCK_SKEW_SECONDS = 60;
/** How many verified tokens are remembered (then the memory starts again, empty). */
const VERIFIED_TOKENS = 4096;

export function jwtOptions(secret: string): FastifyJWTOptions {
  return {
    secret,
    // fast-jwt writes {"alg":"HS256","typ":"JWT"} and, given our iat, exp = iat + 24 h (seconds here).
    sign: { algorithm: "HS256", expiresIn: JWT_LIFETIME_SECONDS },
    verify: {
      // Pinned: `alg` is never taken from the token, and the secret is never read as a public key.
      algorithms: ["HS256"],
      // Verified tokens are remembered by jwtVerifier, by their exact text, which costs a Map lookup
      // where fast-jwt's cache hashes every token (decision 010).
      cache: false,
      // The time checks are ours (acceptedClaims): fast-jwt reads Date.now(), or a clockTimestamp
      // fixed when the verifier is built, while agentmon runs on its injected clock (`now`), the one
      // that stamps iat. So exp, nbf and maxAge are not given to fast-jwt (no clockTolerance either).
      ignoreExpiration: true,
      ignoreNotBefore: true,
    },
  };
}

/** A token of exactly the 4.4 claims, issued at `iat` (seconds on our clock), through the library's signer. */
export function signJwt(jwt: JWT, claims: Omit<Claims, "exp">): string {
  const { session_id, project_id, key_id, iat } = claims;
  // Only these claims, in this order: the same bytes the hand-written signer produced.
  return jwt.sign({ session_id, project_id, key_id, iat });
}

/**
 * The check of a bearer token: the claims of a canonical, HS256-signed, unexpired token with the
 * 4.4 claims; undefined for anything else (every refusal is the same 401, 4.1).
 */
export function jwtVerifier(jwt: JWT): (token: string, nowSeconds: number) => Claims | undefined {
  const payloadOf = verifiedPayloads(jwt);
  return (token, nowSeconds) => {
    const payload = payloadOf(token);
    return payload === undefined ? undefined : acceptedClaims(payload, nowSeconds);
  };
}

/** otlp.md T5: a token for the OTLP and v4 endpoints lives 30 days; AgentOps 0.4 never refreshes it. */
export const OTLP_TOKEN_LIFETIME_SECONDS = 30 * 24 * 60 * 60;

/** A T5 token: the claims project_id, key_id, iat and exp = iat + 30 days, and no session_id. */
export function signOtlpToken(jwt: JWT, claims: OtlpClaims & { iat: number }): string {
  const { project_id, key_id, iat } = claims;
  return jwt.sign({ project_id, key_id, iat }, { expiresIn: OTLP_TOKEN_LIFETIME_SECONDS });
}

/**
 * The check of a bearer token on the OTLP and v4 endpoints (T7): a T5 token, or a v2 session
 * JWT (4.4), whose project counts; undefined for anything else.
 */
export function otlpVerifier(jwt: JWT): (token: string, nowSeconds: number) => OtlpClaims | undefined {
  const payloadOf = verifiedPayloads(jwt);
  return (token, nowSeconds) => {
    const payload = payloadOf(token);
    if (payload === undefined) return undefined;
    const claims = payload as Partial<Record<keyof Claims, unknown>>;
    if (claims.session_id !== undefined) return acceptedClaims(payload, nowSeconds);
    return typeof claims.project_id === "string" &&
      typeof claims.key_id === "string" &&
      timely(claims, OTLP_TOKEN_LIFETIME_SECONDS, nowSeconds)
      ? { project_id: claims.project_id, key_id: claims.key_id }
      : undefined;
  };
}

/** A token's verified payload, by its exact text; undefined when it does not verify. */
function verifiedPayloads(jwt: JWT): (token: string) => unknown {
  /**
   * Payloads fast-jwt verified, by the token's exact text: a client sends the same token with
   * every call, and B2 (one small call after another) measured fast-jwt's own cache 5 % slower,
   * since it hashes every token to find it (decision 010). The whole text is the key, so no two
   * tokens can share an entry; the claims, expiry included, are still checked at every use.
   */
  const verified = new Map<string, unknown>();
  return (token) => {
    let payload = verified.get(token);
    if (payload === undefined) {
      if (!canonicalSignature(token)) return undefined;
      try {
        payload = jwt.verify<object>(token);
      } catch {
        return undefined; // malformed, another alg, a bad signature: fast-jwt's TokenError
      }
      if (verified.size >= VERIFIED_TOKENS) verified.clear();
      verified.set(token, payload);
    }
    return payload;
  };
}

/**
 * fast-jwt decodes the signature with Buffer.from(…, "base64"), which ignores the 2 spare bits of
 * the last character of a 32-byte signature, so four spellings of one signature would verify. We
 * accept only the canonical one (its spare bits zero), so one token has exactly one accepted string.
 * Checked before the library's verify, so a variant is never remembered as verified.
 */
function canonicalSignature(token: string): boolean {
  const signature = token.slice(token.lastIndexOf(".") + 1);
  return signature.length === 43 && "AEIMQUYcgkosw048".includes(signature.charAt(42));
}

/**
 * The claims checks, on every use (a cache hit included), against our clock:
 * - types: fast-jwt checks the types only of the claims it validates, and we need these five;
 * - exp - iat ≤ 24 h (4.4): fast-jwt has no such rule, and it means even a leaked secret cannot
 *   mint a token that outlives 24 h;
 * - exp in the future and iat at most 60 s ahead: see `ignoreExpiration` in jwtOptions.
 */
function acceptedClaims(payload: unknown, nowSeconds: number): Claims | undefined {
  const claims = payload as Partial<Record<keyof Claims, unknown>>;
  if (
    typeof claims.session_id !== "string" ||
    typeof claims.project_id !== "string" ||
    typeof claims.key_id !== "string" ||
    !timely(claims, JWT_LIFETIME_SECONDS, nowSeconds)
  ) {
    return undefined;
  }
  return claims as Claims;
}

/** iat and exp are numbers, exp - iat is at most `lifetime`, exp is ahead and iat not too far ahead. */
function timely(claims: { iat?: unknown; exp?: unknown }, lifetime: number, nowSeconds: number): boolean {
  return (
    typeof claims.iat === "number" &&
    typeof claims.exp === "number" &&
    claims.exp - claims.iat <= lifetime &&
    claims.exp > nowSeconds &&
    claims.iat <= nowSeconds + CLOCK_SKEW_SECONDS
  );
}
