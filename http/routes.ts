/**
 * What the routes of openapi.yaml say beyond their schemas: which credential each operation
 * needs and which scope of its key (`x-agentmon-scope`, 4.7), which methods each path has (for
 * 405 answers), and which media types the responses use.
 */
import { SCOPES } from "../domain/keys.ts";
import { ROLE_NEEDS, type RoleNeed } from "../domain/people.ts";
import type { Scope } from "../domain/types.ts";

export type Security = "apiKey" | "jwt" | "apiKeyOrJwt" | "otlp" | "metrics" | "none";

interface Operation {
  operationId?: string;
  "x-agentmon-scope"?: unknown;
  "x-agentmon-role"?: unknown;
  security?: Record<string, string[]>[];
  requestBody?: unknown;
  responses?: Record<string, { $ref?: string; content?: object }>;
}

export interface Spec {
  paths: Record<string, Record<string, Operation>>;
  components: {
    schemas: Record<string, { properties?: Record<string, Record<string, unknown>> }>;
    responses?: Record<string, { content?: object }>;
  };
}

function securityOf(operation: Operation): Security {
  const schemes = (operation.security ?? []).flatMap((requirement) => Object.keys(requirement));
  if (schemes.includes("metricsToken")) return "metrics";
  if (schemes.includes("otlpBearer")) return "otlp";
  // Scores (issue 25): an API key, or a session's JWT when `Authorization: Bearer` is sent.
  if (schemes.includes("bearerAuth") && schemes.includes("agentmonApiKey")) return "apiKeyOrJwt";
  if (schemes.includes("bearerAuth")) return "jwt";
  if (schemes.includes("agentmonApiKey")) return "apiKey";
  return "none";
}

/**
 * 4.7: the scopes an operation takes, from its `x-agentmon-scope`: one, or a list of which a key
 * needs any (`none`: no API key, so none). An operation that does not say, or says something
 * else, stops the app from being built: no operation can be served without a scope rule.
 */
function scopeOf(operationId: string, operation: Operation): readonly Scope[] | undefined {
  const scope = operation["x-agentmon-scope"];
  if (scope === "none") return undefined;
  const listed = Array.isArray(scope) ? scope : [scope];
  if (listed.length > 0 && listed.every((s) => (SCOPES as readonly unknown[]).includes(s))) return listed as Scope[];
  throw new Error(
    `openapi.yaml: operation ${operationId} needs x-agentmon-scope: ${[...SCOPES, "none"].join(" | ")} or a list of scopes (got ${JSON.stringify(scope)})`,
  );
}

/**
 * Issue 26: the role a person needs for an operation, from its `x-agentmon-role` (decision 035),
 * checked as the scope is: an operation that does not say stops the app from being built.
 */
function roleOf(operationId: string, operation: Operation): RoleNeed {
  const role = operation["x-agentmon-role"];
  if ((ROLE_NEEDS as readonly unknown[]).includes(role)) return role as RoleNeed;
  throw new Error(
    `openapi.yaml: operation ${operationId} needs x-agentmon-role: ${ROLE_NEEDS.join(" | ")} (got ${JSON.stringify(role)})`,
  );
}

/** Whether a person's browser session is among the operation's credentials. */
const takesBrowserSession = (operation: Operation) =>
  (operation.security ?? []).some((requirement) => "browserSession" in requirement);

/** What a route needs of a person: its operation, and the role. */
export interface PersonRule {
  operationId: string;
  role: RoleNeed;
}

export interface Routes {
  /** The credential a route needs, by Fastify's method and URL (`GET /v2/sessions/:session_id`). */
  security(method: string, url: string): Security;
  /** The methods the spec has for a concrete path, templates (`/v2/sessions/{session_id}`) included. */
  allowedOn(path: string): string[] | undefined;
  /** Every media type the spec's responses use. */
  responseMediaTypes: Set<string>;
  /** 4.7: the scopes each operation takes (any one will do), by operationId; absent for `x-agentmon-scope: none`. */
  scopes: Map<string, readonly Scope[]>;
  /** Issue 26: each operation's `x-agentmon-role`, by operationId. */
  roles: Map<string, RoleNeed>;
  /**
   * What a person needs for a route that takes a browser session (by Fastify's method and URL, as
   * `security`); undefined for a route that does not.
   */
  person(method: string, url: string): PersonRule | undefined;
}

export function routesOf(spec: Spec): Routes {
  const security = new Map<string, Security>();
  const methods = new Map<string, { pattern: RegExp; allowed: string[] }>();
  const mediaTypes = new Set<string>();
  const scopes = new Map<string, readonly Scope[]>();
  const roles = new Map<string, RoleNeed>();
  const people = new Map<string, PersonRule>();
  const shared = spec.components.responses ?? {};
  for (const [path, item] of Object.entries(spec.paths)) {
    for (const [method, operation] of Object.entries(item)) {
      security.set(`${method.toUpperCase()} ${path}`, securityOf(operation));
      const operationId = operation.operationId ?? `${method.toUpperCase()} ${path}`;
      const scope = scopeOf(operationId, operation);
      if (scope !== undefined) scopes.set(operationId, scope);
      const role = roleOf(operationId, operation);
      roles.set(operationId, role);
      if (takesBrowserSession(operation)) people.set(`${method.toUpperCase()} ${path}`, { operationId, role });
      const pattern = new RegExp(`^${path.replace(/\{[^}]+\}/g, "[^/]+")}$`);
      methods.set(path, { pattern, allowed: [...(methods.get(path)?.allowed ?? []), method.toUpperCase()] });
      for (const response of Object.values(operation.responses ?? {})) {
        const resolved = response.$ref ? shared[response.$ref.split("/").pop() ?? ""] : response;
        for (const type of Object.keys(resolved?.content ?? {})) mediaTypes.add(type);
      }
    }
  }
  const specKey = (method: string, url: string) =>
    `${method === "HEAD" ? "GET" : method} ${url.replace(/:(\w+)/g, "{$1}")}`;
  return {
    // Routes say `/v2/sessions/:session_id` where the spec says `{session_id}`, and Fastify adds a
    // HEAD route for every GET: both need the GET's credential.
    security: (method, url) => security.get(specKey(method, url)) ?? "none",
    person: (method, url) => people.get(specKey(method, url)),
    allowedOn(path) {
      const allowed = [...methods.values()].filter((m) => m.pattern.test(path)).flatMap((m) => m.allowed);
      return allowed.length > 0 ? [...new Set(allowed)] : undefined;
    },
    responseMediaTypes: mediaTypes,
    scopes,
    roles,
  };
}
