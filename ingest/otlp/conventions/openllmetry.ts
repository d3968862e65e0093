/**
 * OpenLLMetry (Traceloop): `traceloop.span.kind` (workflow, task, agent, tool), the entity's
 * name, input and output, the association properties, and the older GenAI attributes it still
 * writes: `gen_ai.prompt.N.*`, `gen_ai.completion.N.*`, `gen_ai.usage.prompt_tokens` /
 * `completion_tokens` and their cache and reasoning parts (the AgentOps SDK's instrumentations
 * write these too).
 */
import type { Convention } from "./convention.ts";
import { attrOf, indexedOf } from "./sources.ts";

export const openllmetry: Convention = {
  name: "openllmetry",
  fields: {
    prompt_tokens: [[20, "gen_ai.usage.prompt_tokens"]],
    completion_tokens: [[20, "gen_ai.usage.completion_tokens"]],
    // semconv_ai's LLM_USAGE_CACHE_*_INPUT_TOKENS and LLM_USAGE_REASONING_TOKENS (AgentOps' too);
    // its Anthropic instrumentation adds the cache counts into prompt_tokens.
    cache_read_tokens: [[20, "gen_ai.usage.cache_read_input_tokens"]],
    cache_creation_tokens: [[20, "gen_ai.usage.cache_creation_input_tokens"]],
    reasoning_tokens: [[20, "gen_ai.usage.reasoning_tokens"]],
    tool_name: [[30, "traceloop.entity.name"]],
    tool_input: [[30, "traceloop.entity.input"]],
    tool_output: [[30, "traceloop.entity.output"]],
    action_input: [[20, "traceloop.entity.input"]],
    action_output: [[20, "traceloop.entity.output"]],
    agent_name: [[30, "traceloop.entity.name"]],
    conversation_id: [[30, "traceloop.association.properties.session_id"]],
  },
  kinds: [
    [
      30,
      {
        key: "traceloop.span.kind",
        kind: (value) => (value === "tool" ? "tool" : "action"),
        agent: (value) => value === "agent",
      },
    ],
  ],
  messages: [
    [40, { prompt: indexedOf("gen_ai.prompt."), completion: indexedOf("gen_ai.completion.") }],
    [60, { prompt: attrOf("traceloop.entity.input"), completion: attrOf("traceloop.entity.output") }],
  ],
};
