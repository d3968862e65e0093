/**
 * Browser sessions (issue 26, docs/decisions/035-people.md): a person signed in through the web
 * UI carries a signed, HttpOnly, SameSite=Strict cookie (@fastify/cookie; Secure when the request
 * came over TLS) holding a random session id. Its row (the id's SHA-256) is read on every
 * request, on every node, so a logout or a disabled person is refused at once. A request made
 * with the cookie that may change state must carry the session's CSRF token
 * (@fastify/csrf-protection, bound to the session) and, when the browser says where it came from
 * (Origin), come from this server's own origin.
 *
 * A route takes a browser session when openapi.yaml lists `browserSession` among its security;
 * the person's role in the project named by X-Agentmon-Project must then allow what the
 * operation's `x-agentmon-role` names (http/routes.ts). An API key still works there, unchanged:
 * a request that sends an API-key header, or no cookie, is checked as before (http/auth.ts).
 * The routes of create_session, create_events and OTLP take no browser session and are not
 * touched here.
 */
import { createHmac } from "node:crypto";
import fastifyCookie from "@fastify/cookie";
import fastifyCsrf from "@fastify/csrf-protection";
import type { FastifyInstance, FastifyReply, FastifyRequest, onRequestHookHandler } from "fastify";
import type { Store } from "../db/store.ts";
import { ApiError, invalidParameters, notFound } from "../domain/errors.ts";
import { SCOPES } from "../domain/keys.ts";
import { hashToken, isProjectRole, mayAct, type Person, type Role } from "../domain/people.ts";
import { personOf } from "../services/people.ts";
import type { PersonRule, Routes } from "./routes.ts";

/** The session cookie's name, and the CSRF secret's. */
export const SESSION_COOKIE = "agentmon_session";
export const CSRF_COOKIE = "agentmon_csrf";

export interface BrowserSessionOptions {
  store: Store;
  routes: Routes;
  now: () => number;
  /** Signs the cookies (AGENTMON_COOKIE_SECRET, else kept in the database). */
  cookieSecret: string;
}

export const notSignedIn = () => new ApiError(401, { error: "Not signed in", message: "Sign in again" });
const csrfRefused = () =>
  new ApiError(403, {
    error: "Forbidden",
    message: "This request needs the session's CSRF token in X-CSRF-Token, sent from this server's own pages",
  });
const roleMissing = (project: string, role: Role | undefined, needs: string) =>
  new ApiError(403, {
    error: "Forbidden",
    message:
      needs === "owner"
        ? "Only the instance owner may do this"
        : `Your role in project "${project}" is ${role ?? "none"}; this operation needs ${needs}`,
  });
export const projectNotFound = (name: string) => notFound(`No project ${name}`);

/** The OIDC flow's cookie: only the callback's path, Lax (see setOidcFlow). */
export const OIDC_COOKIE = "agentmon_oidc";
const OIDC_COOKIE_OPTIONS = {
  path: "/v2/auth/oidc/",
  httpOnly: true,
  sameSite: "lax",
  secure: "auto",
  signed: true,
} as const;

/** Methods that change nothing: no CSRF token is asked of them. */
const SAFE = new Set(["GET", "HEAD", "OPTIONS"]);

/** The cookie's attributes: Secure when the request came over TLS (behind a trusted proxy: X-Forwarded-Proto). */
export const SESSION_COOKIE_OPTIONS = {
  path: "/",
  httpOnly: true,
  sameSite: "strict",
  secure: "auto",
  signed: true,
} as const;

/**
 * Registers the cookie and CSRF plugins and the browser-session check of every route that takes
 * one (register after http/auth.ts credentials, whose API-key check it falls back on).
 */
export async function browserSessions(app: FastifyInstance, options: BrowserSessionOptions) {
  const { store, routes, now } = options;
  // hook: false: no cookie is parsed on requests that do not ask for a session (the API-key paths).
  await app.register(fastifyCookie, { secret: options.cookieSecret, hook: false });
  await app.register(fastifyCsrf, {
    sessionPlugin: "@fastify/cookie",
    cookieKey: CSRF_COOKIE,
    cookieOpts: { ...SESSION_COOKIE_OPTIONS },
    getToken: (req: FastifyRequest) => {
      const token = req.headers["x-csrf-token"];
      return typeof token === "string" ? token : "";
    },
    // The token is bound to the session: one taken from another session (or before sign-in) fails.
    getUserInfo: (req: FastifyRequest) => req.person?.sessionHash ?? "",
    csrfOpts: { hmacKey: createHmac("sha256", options.cookieSecret).update("agentmon csrf").digest("base64url") },
  });

  /** The cookie's session and person, when the cookie is ours and its session live. */
  async function sessionOf(req: FastifyRequest) {
    const header = req.headers.cookie;
    if (header === undefined) return undefined;
    req.cookies = app.parseCookie(header);
    const raw = req.cookies[SESSION_COOKIE];
    if (raw === undefined) return undefined;
    const { valid, value } = app.unsignCookie(raw);
    if (!valid || value === null || value === "") return undefined;
    const found = await personOf({ store, now }, value);
    return found && { ...found, sessionHash: hashToken(value) };
  }

  /** The CSRF token's check, through the plugin (which answers through `reply.send`: caught here). */
  function csrfValid(req: FastifyRequest, reply: FastifyReply): Promise<boolean> {
    return new Promise((resolve) => {
      const answer = { unsignCookie: (value: string) => reply.unsignCookie(value), send: () => resolve(false) };
      app.csrfProtection(req, answer as unknown as FastifyReply, () => resolve(true));
    });
  }

  /** A request whose Origin (when the browser sends one) is not this server's is refused: defence in depth beside the token. */
  function sameOrigin(req: FastifyRequest) {
    const origin = req.headers.origin;
    if (origin === undefined) return true;
    return origin === `${req.protocol}://${req.host}`;
  }

  async function checkPerson(req: FastifyRequest, reply: FastifyReply, rule: PersonRule) {
    const found = await sessionOf(req);
    if (!found) throw notSignedIn();
    const person: Person = { user: found.user, sessionHash: found.sessionHash };
    req.person = person;
    if (!SAFE.has(req.method) && (!sameOrigin(req) || !(await csrfValid(req, reply)))) throw csrfRefused();
    if (isProjectRole(rule.role)) {
      const given = req.headers["x-agentmon-project"];
      const name = typeof given === "string" ? given.trim() : "";
      if (name === "") {
        throw invalidParameters([{ path: "X-Agentmon-Project", message: "must name the project the request acts in" }]);
      }
      const project = (await store.listProjects()).find((p) => p.name === name);
      const role = project && (await store.membershipsOf(found.user.id)).find((m) => m.project_id === project.id)?.role;
      // Another project's data is answered as if it did not exist, as it is for an API key.
      if (!project || (role === undefined && !found.user.owner)) throw projectNotFound(name);
      person.project = { id: project.id, name: project.name };
      person.role = role;
      if (!mayAct(rule.role, role, found.user.owner)) throw roleMissing(name, role, rule.role);
    } else if (!mayAct(rule.role, undefined, found.user.owner)) {
      throw roleMissing("", undefined, rule.role);
    }
    // A person's operations are allowed by role; the key scopes (4.7) are an API key's.
    req.scopes = SCOPES;
  }

  app.addHook("onRoute", (route) => {
    const rule = routes.person(route.method as string, route.url);
    if (!rule) return;
    const keyCheck = route.onRequest as onRequestHookHandler | undefined;
    route.onRequest = async function personOrKey(this: FastifyInstance, req, reply) {
      const withKey =
        req.headers["x-agentmon-api-key"] !== undefined ||
        req.headers["x-agentops-api-key"] !== undefined ||
        req.headers.authorization !== undefined;
      if (keyCheck && (withKey || req.headers.cookie === undefined)) {
        return (keyCheck as unknown as (req: FastifyRequest, reply: FastifyReply) => unknown).call(this, req, reply);
      }
      return checkPerson(req, reply, rule);
    };
  });

  return {
    /** Sets a new session's cookie and answers a CSRF token bound to it. */
    startSession(req: FastifyRequest, reply: FastifyReply, sessionId: string) {
      reply.setCookie(SESSION_COOKIE, sessionId, SESSION_COOKIE_OPTIONS);
      req.cookies = req.headers.cookie ? app.parseCookie(req.headers.cookie) : {};
      return reply.generateCsrf({ userInfo: hashToken(sessionId) } as never);
    },
    /** A CSRF token for the request's session. */
    csrfToken(req: FastifyRequest, reply: FastifyReply) {
      return reply.generateCsrf({ userInfo: req.person?.sessionHash ?? "" } as never);
    },
    /**
     * OIDC (decision 035): the flow's state, nonce and verifier, in a signed HttpOnly cookie for
     * the callback only. SameSite=Lax: the callback is a top-level navigation from the provider's
     * site, which a Strict cookie would not follow.
     */
    setOidcFlow(reply: FastifyReply, flow: object) {
      reply.setCookie(OIDC_COOKIE, JSON.stringify(flow), { ...OIDC_COOKIE_OPTIONS, maxAge: 600 });
    },
    oidcFlow(req: FastifyRequest): unknown {
      const raw = req.headers.cookie ? app.parseCookie(req.headers.cookie)[OIDC_COOKIE] : undefined;
      if (raw === undefined) return undefined;
      const { valid, value } = app.unsignCookie(raw);
      if (!valid || value === null) return undefined;
      try {
        return JSON.parse(value);
      } catch {
        return undefined;
      }
    },
    clearOidcFlow(reply: FastifyReply) {
      reply.clearCookie(OIDC_COOKIE, { path: OIDC_COOKIE_OPTIONS.path });
    },
    /** Ends the cookie in the browser (the row is removed by the caller). */
    endSession(reply: FastifyReply) {
      reply.clearCookie(SESSION_COOKIE, { path: "/" });
    },
  };
}
