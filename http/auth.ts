/**
 * Credentials (contract part 4), checked before the body is read (G3: 401 comes first): the API
 * key of create_session and the read API, the JWT of the session writes. Failed API-key checks
 * are counted per client address (4.6), and each key may be rate limited (O3). What a check
 * finds is left on the request (`req.apiKey`, `req.claims`: handlers/types.ts). JWTs are signed
 * and verified by @fastify/jwt, registered here with the options of http/jwt.ts.
 */
import fastifyJwt from "@fastify/jwt";
import type { FastifyInstance, FastifyRequest } from "fastify";
import type { Store } from "../db/store.ts";
import { type ApiError, invalidApiKey, invalidJwt, tooManyRequests } from "../domain/errors.ts";
import { hashApiKey, isApiKeyShape, isLive } from "../domain/keys.ts";
import type { ApiKeyRecord, Claims, OtlpClaims, Scope } from "../domain/types.ts";
import { jwtOptions, jwtVerifier, otlpVerifier, signJwt, signOtlpToken } from "./jwt.ts";
import { memoryLimits, type RequestLimits } from "./ratelimit.ts";
import type { Routes } from "./routes.ts";

/**
 * 4.7: what a JWT or a T5 token may do. Both are issued only to a key with `ingest` (their
 * operations need it), and a key's scopes never change, so they carry that one scope.
 */
const TOKEN_SCOPES: readonly Scope[] = ["ingest"];

export interface CredentialOptions {
  store: Store;
  jwtSecret: string;
  routes: Routes;
  now: () => number;
  /** Failed API-key checks allowed per address and window (4.6). */
  authFailLimit?: number | undefined;
  authFailWindowMs?: number | undefined;
  /** O3: requests per minute per API key (with the JWTs it obtained); 0 or absent turns it off. */
  rateLimit?: number | undefined;
  /**
   * Where 4.6 and O3 are counted (http/ratelimit-shared.ts: shared by several nodes), closed with
   * the app; default: in this process, with the numbers above.
   */
  limits?: RequestLimits | undefined;
}

/**
 * Sets each route's credential check from the spec (register before the routes), and answers
 * what the error handler should check before any error answer (see review) and how the handlers
 * issue a JWT (issueJwt).
 */
export async function credentials(app: FastifyInstance, options: CredentialOptions) {
  const { store, jwtSecret, now } = options;
  await app.register(fastifyJwt, jwtOptions(jwtSecret));
  const verifyJwt = jwtVerifier(app.jwt);
  const limits =
    options.limits ??
    memoryLimits(
      {
        failureLimit: options.authFailLimit ?? 20,
        failureWindowMs: options.authFailWindowMs ?? 60_000,
        ratePerMinute: options.rateLimit ?? 0,
      },
      now,
    );
  app.addHook("onClose", async () => limits.close());
  /** O3: one request taken from the API key's bucket. */
  const throttle = async (keyId: string) => {
    const wait = await limits.takeRequest(keyId);
    if (wait > 0) throw tooManyRequests(wait, "This API key is over its request rate limit");
  };
  /** 4.6: refused while the client address is over its failed checks. */
  const refuseLimitedAddress = async (req: FastifyRequest) => {
    const wait = await limits.failureWait(req.ip);
    if (wait > 0) throw tooManyRequests(wait);
  };

  /** The API key given, checked (4.1), counted when it fails (4.6) and rate limited (O3). */
  async function acceptApiKey(req: FastifyRequest, given: string) {
    await refuseLimitedAddress(req);
    const key = isApiKeyShape(given) ? await store.apiKeyByHash(hashApiKey(given)) : undefined;
    if (!isLive(key)) {
      await limits.recordFailure(req.ip);
      throw invalidApiKey();
    }
    await throttle(key.id);
    req.apiKey = key;
    req.scopes = key.scopes;
  }

  async function checkApiKey(req: FastifyRequest) {
    const header = req.headers["x-agentmon-api-key"] ?? req.headers["x-agentops-api-key"];
    await acceptApiKey(req, typeof header === "string" ? header.trim() : "");
  }

  /**
   * A JWT's signature and lifetime are checked here, before the body is read. Its API key is
   * checked where it cannot go stale (4.3): every JWT operation writes, and the store checks the
   * key inside the write's own transaction (KeyRevoked: 401, nothing stored); any other answer
   * checks it first (review), so a revoked key's 401 still comes before all else (G3).
   */
  async function checkJwt(req: FastifyRequest) {
    const match = /^Bearer +([^ ]+) *$/i.exec(req.headers.authorization ?? "");
    const claims = match?.[1] ? verifyJwt(match[1], Math.floor(now() / 1000)) : undefined;
    if (!claims) throw invalidJwt();
    req.claims = claims;
    req.scopes = TOKEN_SCOPES;
    await throttle(claims.key_id);
  }

  const verifyOtlpToken = otlpVerifier(app.jwt);
  /**
   * otlp.md T7: the OTLP and v4 endpoints take a T5 token or a v2 JWT, an API key as a bearer
   * token, as Basic credentials (the password, else the user) or in the API-key headers, first
   * found first. A failed check counts for 4.6, as a bad API key does. A token's key is checked
   * inside the write, as for a JWT (4.3); an API key is checked here.
   */
  async function checkOtlp(req: FastifyRequest) {
    await refuseLimitedAddress(req);
    const credential = await otlpCredential(req);
    if (!credential) {
      await limits.recordFailure(req.ip);
      throw invalidApiKey();
    }
    await throttle(credential.claims.key_id);
    req.otlp = credential.claims;
    req.scopes = credential.scopes;
  }

  /** The credential's claims, and its scopes: an API key's own, a token's `ingest` (4.7). */
  async function otlpCredential(
    req: FastifyRequest,
  ): Promise<{ claims: OtlpClaims; scopes: readonly Scope[] } | undefined> {
    const [scheme = "", value = ""] = (req.headers.authorization ?? "").trim().split(/ +/, 2);
    let given: string | undefined;
    if (/^bearer$/i.test(scheme)) {
      if (!isApiKeyShape(value)) {
        const claims = verifyOtlpToken(value, Math.floor(now() / 1000));
        return claims && { claims, scopes: TOKEN_SCOPES };
      }
      given = value;
    } else if (/^basic$/i.test(scheme)) {
      const text = Buffer.from(value, "base64").toString("utf8");
      const colon = text.indexOf(":");
      given = colon < 0 ? text : text.slice(colon + 1) || text.slice(0, colon);
    } else {
      const header = req.headers["x-agentmon-api-key"] ?? req.headers["x-agentops-api-key"];
      given = typeof header === "string" ? header : undefined;
    }
    given = given?.trim() ?? "";
    const key = isApiKeyShape(given) ? await store.apiKeyByHash(hashApiKey(given)) : undefined;
    return isLive(key) ? { claims: { project_id: key.project_id, key_id: key.id }, scopes: key.scopes } : undefined;
  }

  /**
   * otlp.md T5: the token call carries its API key in the body (`api_key`), so it is checked once
   * the body is read and validated, with the same 401 and 4.6 count as a bad key header.
   */
  async function checkBodyApiKey(req: FastifyRequest) {
    await acceptApiKey(req, String((req.body as { api_key?: unknown }).api_key ?? "").trim());
  }

  app.addHook("onRoute", (route) => {
    if ((route.config as Record<string, unknown> | undefined)?.credential === "body-api-key") {
      route.preHandler = [...[route.preHandler ?? []].flat(), checkBodyApiKey];
    }
    const kind = options.routes.security(route.method as string, route.url);
    if (kind === "apiKey") route.onRequest = checkApiKey;
    if (kind === "jwt") route.onRequest = checkJwt;
    if (kind === "apiKeyOrJwt") {
      route.onRequest = (req) => (/^Bearer /i.test(req.headers.authorization ?? "") ? checkJwt(req) : checkApiKey(req));
    }
    if (kind === "otlp") route.onRequest = checkOtlp;
  });

  return {
    /** A JWT of these claims, issued now (4.4). */
    issueJwt: (claims: Omit<Claims, "iat" | "exp">) => signJwt(app.jwt, { ...claims, iat: Math.floor(now() / 1000) }),
    /** A T5 token for the OTLP and v4 endpoints, issued now. */
    issueOtlpToken: (claims: OtlpClaims) => signOtlpToken(app.jwt, { ...claims, iat: Math.floor(now() / 1000) }),
    /** An error answer to a JWT request whose key is no longer live is that key's 401 (G3). */
    async review(req: FastifyRequest, error: ApiError): Promise<ApiError> {
      // A token of the OTLP endpoints whose key was revoked (KeyRevoked) is a bad credential there (T7).
      if (!req.claims && req.otlp && error.statusCode === 401) return invalidApiKey();
      const claims = req.claims ?? req.otlp;
      if (!claims || error.statusCode === 401 || error.statusCode >= 500) return error;
      let key: ApiKeyRecord | undefined;
      try {
        key = await store.apiKeyById(claims.key_id);
      } catch {
        return error; // the key cannot be read: the storage fault is answered instead
      }
      if (isLive(key, claims.project_id)) return error;
      return req.claims ? invalidJwt() : invalidApiKey();
    },
  };
}
