/**
 * OpenInference (Arize Phoenix): `openinference.span.kind` (LLM, EMBEDDING, TOOL, AGENT, CHAIN,
 * ...), `llm.*` (model, token counts, cost, flattened `llm.input_messages.N.message.*`),
 * `input.value` / `output.value`, `tool.*`, `session.id`, `tag.tags`.
 */
import type { Convention } from "./convention.ts";
import { attrOf, indexedOf } from "./sources.ts";

const LLM = new Set(["LLM", "EMBEDDING"]);

export const openinference: Convention = {
  name: "openinference",
  fields: {
    model: [
      [30, "llm.response.model_name"],
      [40, "llm.model_name"],
      [50, "llm.request.model_name"],
    ],
    prompt_tokens: [[30, "llm.token_count.prompt"]],
    completion_tokens: [[30, "llm.token_count.completion"]],
    // "sub-counts of llm.token_count.prompt" (OpenInference semantic conventions, Token Count Details).
    cache_read_tokens: [[30, "llm.token_count.prompt_details.cache_read"]],
    cache_creation_tokens: [[30, "llm.token_count.prompt_details.cache_write"]],
    reasoning_tokens: [[30, "llm.token_count.completion_details.reasoning"]],
    cost: [[10, "llm.cost.total"]],
    tool_name: [[20, "tool.name"]],
    tool_input: [
      [20, "input.value"],
      [50, "tool.parameters"],
    ],
    tool_output: [
      [20, "output.value"],
      [50, "tool.result"],
    ],
    action_input: [[10, "input.value"]],
    action_output: [[10, "output.value"]],
    tool_marker: [[20, "tool.name"]],
    agent_name: [[20, "agent.name"]],
    conversation_id: [[20, "session.id"]],
    tags: [[20, "tag.tags"]],
  },
  kinds: [
    [
      20,
      {
        key: "openinference.span.kind",
        kind: (value) => {
          const upper = value.toUpperCase();
          return LLM.has(upper) ? "llm" : upper === "TOOL" ? "tool" : "action";
        },
        agent: (value) => value.toUpperCase() === "AGENT",
      },
    ],
  ],
  messages: [
    [30, { prompt: indexedOf("llm.input_messages."), completion: indexedOf("llm.output_messages.") }],
    [50, { prompt: attrOf("input.value"), completion: attrOf("output.value") }],
  ],
};
