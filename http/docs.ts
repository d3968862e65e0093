/**
 * GET /docs (openapi.yaml L4): the contract as a browsable API reference (http/reference.ts).
 * Its plugins (@fastify/swagger, @fastify/swagger-ui, @fastify/static and theirs) are loaded and
 * registered only when the first request under /docs comes, in an app of their own: at every
 * start they cost about a tenth of a cold start (B4, docs/decisions/034-cold-start.md), and most
 * servers never serve the reference. Each request under /docs is passed to that app and its
 * answer sent as this app's, so that every answer under /docs goes through this app's hooks (the
 * UI's security headers, with the reference's own CSP: ui/assets.ts; the request log and metrics),
 * and its failures are G2 answers like any: a file it does not have is this app's 404, an error
 * this app's error handler's.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import { DOCS_CONTENT_SECURITY_POLICY, UI_HEADERS } from "../ui/assets.ts";

export const DOCS_PREFIX = "/docs";

/** The request header that names a passed request, so that its failure finds its way back. */
const CALL = "x-agentmon-docs-call";

/** Headers of the connection, not of the answer: this app sets its own. */
const HOP_BY_HOP = new Set(["connection", "keep-alive", "transfer-encoding", "content-length", "date"]);

export async function docs(app: FastifyInstance, document: Record<string, unknown>) {
  const failures = new Map<string, Error>();
  let calls = 0;
  let reference: Promise<FastifyInstance> | undefined;
  const load = () => {
    reference ??= import("./reference.ts").then(({ referenceApp }) =>
      referenceApp(DOCS_PREFIX, document, (req, error) => failures.set(String(req.headers[CALL]), error)),
    );
    // A failed load is tried again by the next request.
    reference.catch(() => {
      reference = undefined;
    });
    return reference;
  };

  const pass = async (req: FastifyRequest, reply: FastifyReply) => {
    const referenceApp = await load();
    const call = String(++calls);
    const { [CALL]: _, ...headers } = req.headers;
    const res = await referenceApp.inject({
      method: req.method as "GET" | "HEAD",
      url: req.url,
      headers: { ...headers, [CALL]: call },
    });
    const failure = failures.get(call);
    failures.delete(call);
    if (failure) throw failure;
    if (res.statusCode === 404) return reply.callNotFound();
    for (const [name, value] of Object.entries(res.headers)) {
      if (value !== undefined && !HOP_BY_HOP.has(name)) reply.header(name, value);
    }
    return reply.code(res.statusCode).send(req.method === "HEAD" ? undefined : res.rawPayload);
  };

  await app.register(async (scope) => {
    scope.addHook("onSend", async (_req, reply, payload) => {
      reply.headers({
        "content-security-policy": DOCS_CONTENT_SECURITY_POLICY,
        "cache-control": "no-cache",
        ...UI_HEADERS,
      });
      return payload;
    });
    // The reference's paths (http/reference.ts): the page, with and without its slash, and
    // everything below; HEAD too, as Fastify adds it to every GET.
    for (const url of [DOCS_PREFIX, `${DOCS_PREFIX}/`, `${DOCS_PREFIX}/*`]) scope.get(url, pass);
  });
}
