import type { Deps, Handler } from "./types.ts";

/** L3: the document the server was built from, byte for byte. */
export const getOpenapiSpec =
  (deps: Deps): Handler<"getOpenapiSpec"> =>
  async (_req, reply) => {
    reply.type("application/yaml; charset=utf-8");
    return deps.specText;
  };
