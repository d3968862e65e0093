/**
 * The API reference's own Fastify instance (http/docs.ts builds it at the first request under
 * /docs and passes each such request to it): @fastify/swagger, in static mode, holds the very
 * document GET /v2/openapi.yaml serves (L3), and @fastify/swagger-ui serves Swagger UI's page and
 * files from its own package: nothing is fetched from another host, so the reference works
 * offline. Its routes are the plugin's, not operations of openapi.yaml (decision 013): /docs (and
 * /docs/), /docs/static/*, and /docs/json and /docs/yaml, the document as the page reads it.
 */
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import fastifySwagger from "@fastify/swagger";
import fastifySwaggerUi from "@fastify/swagger-ui";
import Fastify, { type FastifyInstance, type FastifyRequest } from "fastify";
import { docsTheme } from "../ui/assets.ts";

/**
 * Swagger UI's files, from the package (not from the bundle: bin/build.js bundles the plugin's
 * code, whose own way to find them, `__dirname`, means nothing in dist/agentmon.mjs).
 */
const swaggerUiFiles = () =>
  join(dirname(createRequire(import.meta.url).resolve("@fastify/swagger-ui/package.json")), "static");

/**
 * The reference's app under `prefix` (/docs), ready. A request it cannot answer (a file it does not have) is its 404; a
 * failure, its error handler's: `failed` gets the error, which http/docs.ts throws again where the
 * main app's error handler makes it a G2 answer, as for any route.
 */
export async function referenceApp(
  prefix: string,
  document: Record<string, unknown>,
  failed: (req: FastifyRequest, error: Error) => void,
): Promise<FastifyInstance> {
  // The main app's longest path parameter, so that the same paths reach the same routes.
  const app = Fastify({ logger: false, routerOptions: { maxParamLength: 256 * 12 } });
  app.setNotFoundHandler((_req, reply) => reply.code(404).send());
  app.setErrorHandler((error, req, reply) => {
    failed(req, error as Error);
    return reply.code(500).send();
  });
  await app.register(async (scope) => {
    scope.addHook("onRoute", (route) => {
      // With baseDir the plugin also serves its folder's files at /docs/<name>, beside
      // /docs/static/<name>; the package's own index.html there would load files from the wrong
      // place. One place for them is enough: that catch-all answers 404.
      if (route.url === `${prefix}/*`) route.handler = (_req, reply) => reply.callNotFound();
      // A folder of /docs/static/ would answer that index.html too: files only.
      if (route.url === `${prefix}/static/*`) {
        const serve = route.handler;
        route.handler = function (this: FastifyInstance, req, reply) {
          const file = (req.params as { "*"?: string })["*"] ?? "";
          return file === "" || file.endsWith("/") ? reply.callNotFound() : serve.call(this, req, reply);
        };
      }
    });
    await scope.register(fastifySwagger, { mode: "static", specification: { document: document as never } });
    const theme = docsTheme();
    await scope.register(fastifySwaggerUi, {
      routePrefix: prefix,
      baseDir: swaggerUiFiles(),
      theme,
      // Shown only by Swagger UI's standalone layout, which this page does not use; given, so
      // that the plugin does not read its own logo through `__dirname` either.
      logo: { type: "image/svg+xml", content: theme.favicon[0]?.content ?? "", href: "/" },
      // Swagger UI would otherwise send the whole document to validator.swagger.io.
      validatorUrl: false,
      uiConfig: {
        // The base layout: no top bar with an address box for loading other documents (ui/docs.js
        // puts the UI's own top bar there).
        layout: "BaseLayout",
        deepLinking: true,
        docExpansion: "list",
        defaultModelsExpandDepth: 0,
        tryItOutEnabled: false,
      },
      // "Try it out" calls the server that serves the page, whatever address it listens on.
      transformSpecificationClone: false,
      transformSpecification: (spec) => ({ ...spec, servers: [{ url: "/", description: "This agentmon server" }] }),
    });
  });
  await app.ready();
  return app;
}
