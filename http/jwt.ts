/**
 * JWTs (contract 4.4): HS256 with the claims session_id, project_id, key_id, iat and exp, signed
 * and verified by @fastify/jwt (fast-jwt under it), which http/auth.ts registers with these
 * options. What fast-jwt cannot express is checked here, on every call, after (or, for the cheap
 * spelling check, before) its verify; decision 010 says why each part is where it is.
 */
import type { FastifyJWTOptions, JWT } from "@fastify/jwt";
import type { Claims } from "../domain/types.ts";

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
  /**
   * Payloads fast-jwt verified, by the token's exact text: a client sends the same token with
   * every call, and B2 (one small call after another) measured fast-jwt's own cache 5 % slower,
   * since it hashes every token to find it (decision 010). The whole text is the key, so no two
   * tokens can share an entry; the claims, expiry included, are still checked at every use.
   */
  const verified = new Map<string, unknown>();
  return (token, nowSeconds) => {
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
    return acceptedClaims(payload, nowSeconds);
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
    typeof claims.iat !== "number" ||
    typeof claims.exp !== "number" ||
    claims.exp - claims.iat > JWT_LIFETIME_SECONDS ||
    claims.exp <= nowSeconds ||
    claims.iat > nowSeconds + CLOCK_SKEW_SECONDS
  ) {
    return undefined;
  }
  return claims as Claims;
}
