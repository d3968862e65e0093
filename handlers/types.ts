/**
 * Handwritten type glue between openapi-typescript's `operations` and Fastify's route generic:
 * `Handlers` has one key per operationId, so leaving one out, or answering a body the spec does
 * not declare, fails `tsc`.
 */
import type { Readable } from "node:stream";
import type {
  FastifyReply,
  FastifyRequest,
  RawReplyDefaultExpression,
  RawRequestDefaultExpression,
  RawServerDefault,
  RouteHandlerMethod,
} from "fastify";
import { internalError } from "../domain/errors.ts";
import type { Person } from "../domain/people.ts";
import type { ApiKeyRecord, Claims, OtlpClaims, Scope } from "../domain/types.ts";
import type { operations } from "../generated/api.ts";
import type { Context } from "../services/context.ts";
import type { Mailer } from "../services/mail.ts";
import type { Metrics } from "../services/metrics.ts";
import type { Oidc } from "../services/oidc.ts";
import { type Actor, keyActor, type LoginLimits, personActor } from "../services/people.ts";

type Op<K extends keyof operations> = operations[K];
type Content<C> = C extends { content: { "application/x-ndjson": unknown } }
  ? Readable // a streamed answer (exportSessions): its lines are written as they are made
  : C extends { content: { "application/json": infer B } }
    ? B
    : C extends { content: { "application/yaml": infer Y } }
      ? Y
      : C extends { content: { "text/plain": infer T } }
        ? T
        : C extends { content: { "text/plain; version=0.0.4": infer P } }
          ? P
          : never;

export type OperationId = keyof operations;

/** A part of an operation's parameters (`path`, `query`), or unknown when it declares none. */
type Parameters<K extends OperationId, Part extends "path" | "query"> =
  Op<K> extends {
    parameters: { [P in Part]?: infer T };
  }
    ? [NonNullable<T>] extends [never]
      ? unknown
      : NonNullable<T>
    : unknown;

export type Handler<K extends OperationId> = RouteHandlerMethod<
  RawServerDefault,
  RawRequestDefaultExpression,
  RawReplyDefaultExpression,
  {
    Params: Parameters<K, "path">;
    Querystring: Parameters<K, "query">;
    Body: Content<NonNullable<Op<K>["requestBody"]>>;
    Reply: { [S in keyof Op<K>["responses"]]: Content<Op<K>["responses"][S]> };
  }
>;

export type Handlers = { [K in OperationId]: Handler<K> };

/** What the people operations need beside the services' context (decision 035; http/people.ts). */
export interface PeopleDeps {
  /** Sign-in throttling per account and per address (shared by every node as the key limits are). */
  limits: LoginLimits;
  /** How long a browser session lives, in hours. */
  sessionHours: number;
  /** Sets the new session's cookie; answers a CSRF token bound to it. */
  startSession(req: FastifyRequest, reply: FastifyReply, sessionId: string): string;
  /** A CSRF token for the request's session. */
  csrfToken(req: FastifyRequest, reply: FastifyReply): string;
  /** Clears the session cookie in the browser. */
  endSession(reply: FastifyReply): void;
  /** OIDC: the flow's cookie, set, read (undefined when absent or forged) and cleared. */
  setOidcFlow(reply: FastifyReply, flow: object): void;
  oidcFlow(req: FastifyRequest): unknown;
  clearOidcFlow(reply: FastifyReply): void;
  /** The identity providers of AGENTMON_OIDC. */
  oidc: Oidc;
  /** AGENTMON_SSO_ONLY: passwords are refused; people sign in through a provider. */
  ssoOnly: boolean;
  /** Mails the one-time links when AGENTMON_SMTP_URL is set (services/mail.ts); else mails nothing. */
  mailer: Mailer;
}

/** What handlers are built from: the services' context, and what the server says of itself. */
export interface Deps extends Context {
  /** Accounts and browser sessions. */
  people: PeopleDeps;
  /** The bytes of openapi.yaml, served by getOpenapiSpec. */
  specText: string;
  /** When the app was built, in milliseconds since the epoch. */
  startedAt: number;
  /** Why the server is refusing new work right now (O2), or undefined when it is not. */
  pressure(): string | undefined;
  /** The app's metrics, served by getMetrics (the services count into it as `counts`). */
  metrics: Metrics;
}

declare module "fastify" {
  interface FastifyRequest {
    /** Set by the API-key check of operations secured by an API key (http/auth.ts). */
    apiKey?: ApiKeyRecord;
    /** Set by the JWT check of operations secured by a bearer token (http/auth.ts). */
    claims?: Claims;
    /** Set by the credential check of the OTLP and v4 endpoints (http/auth.ts, otlp.md T7). */
    otlp?: OtlpClaims;
    /** What the credential may do (4.7): an API key's scopes; `ingest` for a JWT or T5 token (http/auth.ts). */
    scopes?: readonly Scope[];
    /** Set by the browser-session check of operations a person may call (http/people.ts). */
    person?: Person;
  }
}

export function apiKeyOf(req: FastifyRequest): ApiKeyRecord {
  if (!req.apiKey) throw internalError(); // only reachable if the spec lost its security entry
  return req.apiKey;
}

/**
 * The project a read or delete acts in: the API key's, or the one a signed-in person named
 * (X-Agentmon-Project, checked against their role by http/people.ts).
 */
export function projectIdOf(req: FastifyRequest): string {
  const id = req.apiKey?.project_id ?? req.person?.project?.id;
  if (id === undefined) throw internalError();
  return id;
}

/** Who acts, for the audit trail: the signed-in person, else the API key. */
export function actorOf(req: FastifyRequest): Actor {
  if (req.person) return personActor(req.person.user, req.ip);
  return keyActor(apiKeyOf(req), req.ip);
}

/** The signed-in person (routes secured by `browserSession` only). */
export function personOfRequest(req: FastifyRequest): Person {
  if (!req.person) throw internalError();
  return req.person;
}

export function otlpClaimsOf(req: FastifyRequest): OtlpClaims {
  if (!req.otlp) throw internalError();
  return req.otlp;
}

export function claimsOf(req: FastifyRequest): Claims {
  if (!req.claims) throw internalError();
  return req.claims;
}
