/**
 * The OpenTelemetry GenAI semantic conventions: `gen_ai.operation.name`, the request and response
 * model, `gen_ai.usage.input_tokens` / `output_tokens` and their cache and reasoning parts,
 * `gen_ai.input.messages` /
 * `gen_ai.output.messages`, the GenAI events, `gen_ai.tool.*`, `gen_ai.agent.*`,
 * `gen_ai.conversation.id`. `gen_ai.system` / `gen_ai.provider.name` decide nothing (kept as sent).
 */
import type { Convention } from "./convention.ts";
import { genAiEventsOf, genAiMessagesOf } from "./sources.ts";

const LLM_OPERATIONS = new Set(["chat", "text_completion", "generate_content", "embeddings"]);
const AGENT_OPERATIONS = new Set(["invoke_agent", "create_agent"]);

export const genai: Convention = {
  name: "genai",
  fields: {
    model: [
      [10, "gen_ai.response.model"],
      [20, "gen_ai.request.model"],
    ],
    prompt_tokens: [[10, "gen_ai.usage.input_tokens"]],
    completion_tokens: [[10, "gen_ai.usage.output_tokens"]],
    // Each "SHOULD be included in" input_tokens / output_tokens (semantic conventions, gen-ai registry).
    cache_read_tokens: [[10, "gen_ai.usage.cache_read.input_tokens"]],
    cache_creation_tokens: [[10, "gen_ai.usage.cache_creation.input_tokens"]],
    reasoning_tokens: [[10, "gen_ai.usage.reasoning.output_tokens"]],
    cost: [[20, "gen_ai.usage.cost"]],
    tool_name: [[10, "gen_ai.tool.name"]],
    tool_input: [[10, "gen_ai.tool.call.arguments"]],
    tool_output: [[10, "gen_ai.tool.call.result"]],
    tool_marker: [[10, "gen_ai.tool.name"]],
    agent_id: [[10, "gen_ai.agent.id"]],
    agent_name: [[10, "gen_ai.agent.name"]],
    conversation_id: [[10, "gen_ai.conversation.id"]],
  },
  kinds: [
    [
      40,
      {
        key: "gen_ai.operation.name",
        kind: (value) => (LLM_OPERATIONS.has(value) ? "llm" : value === "execute_tool" ? "tool" : "action"),
        agent: (value) => AGENT_OPERATIONS.has(value),
      },
    ],
  ],
  messages: [
    [10, { prompt: genAiMessagesOf("gen_ai.input.messages"), completion: genAiMessagesOf("gen_ai.output.messages") }],
    [20, { prompt: genAiEventsOf("prompt"), completion: genAiEventsOf("completion") }],
  ],
};
