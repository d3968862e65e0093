/**
 * @agentmon/client: a typed TypeScript client for agentmon, made from its openapi.yaml.
 *
 * ```ts
 * const am = agentmon({ baseUrl: "http://127.0.0.1:3000", apiKey });
 * const s = await am.startSession({ tags: ["demo"] });
 * await s.recordEvents([{ type: "llm", model: "gpt-4o-mini", prompt_tokens: 5 }]);
 * await s.end("Success");
 * ```
 */
export {
  Agentmon,
  type AgentmonClient,
  type AgentmonOptions,
  AgentmonSession,
  agentmon,
  createAgentmonClient,
} from "./client.ts";
export { AgentmonError } from "./errors.ts";
export type { components, operations, paths } from "./generated/api.ts";
export type * from "./types.ts";
