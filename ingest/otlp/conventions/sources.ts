/** The readers that convention tables build their message sources from (T15's prompt and completion). */
import { fromGenAiMessages, messagesFromGenAiEvents, unflatten } from "../../../domain/genai.ts";
import type { Attrs } from "../values.ts";
import type { KeyRef, MessageReader } from "./convention.ts";

export const keyOf = (ref: KeyRef, attrs: Attrs): string | undefined => (typeof ref === "string" ? ref : ref(attrs));

/** The attribute's plain value as it is (a string stays a string: E4 takes a text prompt). */
export const attrOf =
  (ref: KeyRef): MessageReader =>
  ({ attrs }) => {
    const key = keyOf(ref, attrs);
    const value = key === undefined ? undefined : attrs.get(key);
    return value === null ? undefined : value;
  };

/** A `gen_ai.input.messages`-like attribute: GenAI messages with parts, as E4 messages. */
export const genAiMessagesOf =
  (key: string): MessageReader =>
  ({ attrs }) =>
    attrs.has(key) ? fromGenAiMessages(attrs.get(key)) : undefined;

/** Flattened messages under a prefix (`gen_ai.prompt.`, `llm.input_messages.`). */
export const indexedOf =
  (prefix: string): MessageReader =>
  ({ attrs }) =>
    unflatten(attrs, prefix);

/** The span's GenAI events (gen_ai.user.message, gen_ai.choice, ...), one side. */
export const genAiEventsOf =
  (side: "prompt" | "completion"): MessageReader =>
  (span) =>
    span.events.length === 0 ? undefined : messagesFromGenAiEvents(span.genAiEvents())[side];

/** `agentops.<kind>.<suffix>`, the kind being the span's `agentops.span.kind`. */
export const agentopsKindKey =
  (suffix: string): KeyRef =>
  (attrs) => {
    const kind = attrs.get("agentops.span.kind");
    return typeof kind === "string" ? `agentops.${kind}.${suffix}` : undefined;
  };
