// Stands in for fastify-openapi-glue's lib/Parser.js inside dist/agentmon.mjs. The plugin turns
// openapi.yaml into its routes at every start: a copy of the document, every $ref resolved, each
// operation's schemas made; about 35 ms of a cold start (B4, docs/decisions/034-cold-start.md).
// bin/build.js runs the real parser once and keeps its answer in dist/openapi.json, beside the
// parsed document; lib/spec.ts hands it over for the very document it loaded from there. Any
// other document (a copy with another maxItems, AGENTMON_MAX_EVENTS) is parsed as before.

import { parsedRoutes } from "../../lib/spec.ts";
import { Parser as FullParser } from "../../node_modules/fastify-openapi-glue/lib/Parser.js";

export class Parser extends FullParser {
  async parse(specification, options = {}) {
    const parsed = parsedRoutes(specification, options);
    if (parsed === undefined) return super.parse(specification, options);
    this.original = specification;
    return parsed;
  }
}
