// Stands in for @seriousme/openapi-schema-validator inside dist/agentmon.mjs. fastify-openapi-glue
// validates the whole document against the OpenAPI meta-schema at every start, a quarter of a
// second of ajv work; `npm test` already validates openapi.yaml with the real validator and
// Redocly (test/openapi.test.ts), and the bundle is rebuilt whenever the file changes, so the
// bundle only resolves the document's $refs, with the real package's own resolver.
import { checkRefs, replaceRefs } from "../../node_modules/@seriousme/openapi-schema-validator/resolve.js";

export class Validator {
  static supportedVersions = new Set(["3.1"]);

  async validate(specification) {
    this.specification = specification;
    this.version = String(specification.openapi ?? "").slice(0, 3);
    return checkRefs(specification);
  }

  resolveRefs() {
    return replaceRefs(this.specification);
  }
}
