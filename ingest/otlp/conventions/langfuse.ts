/** Langfuse's OpenTelemetry attributes: the trace's tags and session (T13). */
import type { Convention } from "./convention.ts";

export const langfuse: Convention = {
  name: "langfuse",
  fields: {
    conversation_id: [[40, "langfuse.session.id"]],
    tags: [[30, "langfuse.trace.tags"]],
  },
};
