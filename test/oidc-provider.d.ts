/**
 * oidc-provider 8 ships no types (and @types/oidc-provider is not installed): the little the
 * tests use of it (test/oidc.helpers.ts), typed here.
 */
declare module "oidc-provider" {
  import type { IncomingMessage, ServerResponse } from "node:http";
  export default class Provider {
    constructor(issuer: string, configuration: Record<string, unknown>);
    callback(): (req: IncomingMessage, res: ServerResponse) => void;
  }
}
