/**
 * Keys with scopes (openapi.yaml 4.7): each operation needs the scope its `x-agentmon-scope` names
 * (http/routes.ts), and a credential without it is answered 403, in G3's order: after the
 * credential's 401 and every 413, 415 and 400 the request earns, before any 404 or 409.
 *
 * The 400s of an operation are not all its schema's (ajv, before the handler): timestamps (G6),
 * OTLP bodies (T10), cursors and filters are read by the services. So the scope is not checked
 * before the handler but around it: a request whose credential lacks the scope runs the same
 * operation on dependencies that refuse (refusingDeps: storage, token issuing), which finds every
 * 400 its input has and stops at its first use of them, where the 403 is answered. Nothing is read,
 * written or issued for it, and an operation that needs none of them is still answered 403.
 */
import type { FastifyReply, FastifyRequest } from "fastify";
import type { Store } from "../db/store.ts";
import { missingScope } from "../domain/errors.ts";
import type { Deps } from "../handlers/types.ts";
import type { Routes } from "./routes.ts";

/** What a refusing dependency throws: the operation reached storage (or a token) without the scope. */
class ScopeRefused extends Error {}

const refuse = () => {
  throw new ScopeRefused("refused: the credential lacks the operation's scope");
};

/** A Store every method of which refuses. */
const refusingStore = new Proxy({} as Store, { get: () => refuse });

/** The dependencies of a request that lacks its operation's scope: no storage, no token, nothing counted. */
export const refusingDeps = (deps: Deps): Deps => ({
  ...deps,
  store: refusingStore,
  issueJwt: refuse,
  issueOtlpToken: refuse,
  counts: { ingested: () => undefined, rejected: () => undefined },
});

type RouteHandler = (req: FastifyRequest, reply: FastifyReply) => unknown;

/**
 * The handlers, each of an operation that needs a scope wrapped: a credential with the scope runs
 * `handlers`' own, one without it runs `refusing`'s (the same operations over refusingDeps) and is
 * answered that run's 400, else the 403.
 */
export function scopedHandlers<H extends object>(handlers: H, refusing: H, routes: Routes): H {
  const table = handlers as unknown as Record<string, RouteHandler>;
  const refusingTable = refusing as unknown as Record<string, RouteHandler>;
  const wrapped = Object.entries(table).map(([operationId, handler]) => {
    const needs = routes.scopes.get(operationId);
    const refused = refusingTable[operationId];
    if (needs === undefined || refused === undefined) return [operationId, handler];
    const checked: RouteHandler = async (req, reply) => {
      const has = req.scopes ?? [];
      if (needs.some((scope) => has.includes(scope))) return handler(req, reply);
      try {
        await refused(req, reply);
      } catch (error) {
        if (!(error instanceof ScopeRefused)) throw error;
      }
      throw missingScope(has, needs.join(" or "));
    };
    return [operationId, checked];
  });
  return Object.fromEntries(wrapped) as H;
}
