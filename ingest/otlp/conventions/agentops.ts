/**
 * AgentOps SDK 0.4 (agentops/semconv): `agentops.span.kind` (session, agent, task, workflow,
 * operation, tool, llm, ...), `agentops.<kind>.input` / `output` from its decorators, the
 * session's tags and end state, and `gen_ai.usage.total_cost` for `@tool(cost=...)`.
 */
import type { Convention } from "./convention.ts";
import { agentopsKindKey, attrOf } from "./sources.ts";

export const agentops: Convention = {
  name: "agentops",
  fields: {
    cost: [[30, "gen_ai.usage.total_cost"]],
    tool_name: [[40, "operation.name"]],
    tool_input: [[40, "agentops.tool.input"]],
    tool_output: [[40, "agentops.tool.output"]],
    action_input: [[30, agentopsKindKey("input")]],
    action_output: [[30, agentopsKindKey("output")]],
    agent_name: [[40, "operation.name"]],
    tags: [[10, "agentops.tags"]],
    end_state: [[10, "agentops.session.end_state"]],
    end_state_reason: [[10, "agentops.legacy.end_state_reason"]],
  },
  kinds: [
    [
      10,
      {
        key: "agentops.span.kind",
        kind: (value) => (value === "llm" ? "llm" : value === "tool" ? "tool" : "action"),
        agent: (value) => value === "agent",
      },
    ],
  ],
  messages: [[70, { prompt: attrOf(agentopsKindKey("input")), completion: attrOf(agentopsKindKey("output")) }]],
  sessionRoots: [["agentops.span.kind", "session"]],
};
