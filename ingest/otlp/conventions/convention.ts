/**
 * What a convention table says (one file per convention in this folder), and how the tables are
 * merged into the ordered lists that ingest/otlp/map.ts reads.
 *
 * otlp.md gives, per field, ONE list of attribute keys in precedence order, and that order crosses
 * conventions (model: a GenAI key, then OpenInference's). So every entry of a table carries its
 * `rank`, its position in otlp.md's list for that field, spaced by 10 so that a new convention can
 * slot its keys in between. `assemble` sorts the entries of all the tables by rank (ties: the
 * order of the tables) and keeps the keys. Adding a convention is one file here and its line in
 * index.ts.
 */
import type { GenAiEvent } from "../../../domain/genai.ts";
import type { Kind } from "../../../domain/types.ts";
import type { SpanEvent } from "../types.ts";
import type { Attrs } from "../values.ts";

/** The fields read by "the first present wins" (T13, T15, T14's agent rules). */
export type Field =
  | "model"
  | "prompt_tokens"
  | "completion_tokens"
  /** The parts of prompt_tokens read from and written to the prompt cache, of completion_tokens spent reasoning. */
  | "cache_read_tokens"
  | "cache_creation_tokens"
  | "reasoning_tokens"
  | "cost"
  | "tool_name"
  | "tool_input"
  | "tool_output"
  /** An action's params and returns (not in otlp.md's lists: our choice, see map.ts). */
  | "action_input"
  | "action_output"
  /** Keys whose presence makes a span a tool (T14's sixth rule). */
  | "tool_marker"
  | "agent_id"
  | "agent_name"
  | "conversation_id"
  | "tags"
  | "end_state"
  | "end_state_reason";

/** An attribute key, or a key that depends on the span (`agentops.<kind>.input`). */
export type KeyRef = string | ((attrs: Attrs) => string | undefined);

/** A span as message sources see it: its attributes, its events and their GenAI form (lazy). */
export interface SpanView {
  attrs: Attrs;
  events: readonly SpanEvent[];
  genAiEvents(): readonly GenAiEvent[];
}

/** Reads one side of an llm's messages: E4 messages, a plain string, or undefined (not there). */
export type MessageReader = (span: SpanView) => unknown;

export interface MessageSource {
  prompt: MessageReader;
  completion: MessageReader;
}

/** T14: a kind rule, decided by one attribute's (string) value. */
export interface KindRule {
  key: string;
  kind(value: string): Kind;
  /** Whether this value makes the span an agent span (an action that registers an agent). */
  agent(value: string): boolean;
}

export interface Convention {
  name: string;
  fields?: Partial<Record<Field, [rank: number, key: KeyRef][]>>;
  kinds?: [rank: number, rule: KindRule][];
  messages?: [rank: number, source: MessageSource][];
  /** A root span marked with one of these (key, value) is the session itself, not an event (T14). */
  sessionRoots?: [key: string, value: string][];
}

export interface Rules {
  fields: Record<Field, KeyRef[]>;
  kinds: KindRule[];
  messages: MessageSource[];
  sessionRoots: [string, string][];
}

const FIELDS: Field[] = [
  "model",
  "prompt_tokens",
  "completion_tokens",
  "cache_read_tokens",
  "cache_creation_tokens",
  "reasoning_tokens",
  "cost",
  "tool_name",
  "tool_input",
  "tool_output",
  "action_input",
  "action_output",
  "tool_marker",
  "agent_id",
  "agent_name",
  "conversation_id",
  "tags",
  "end_state",
  "end_state_reason",
];

/** Entries of every table, by rank; Array.prototype.sort is stable, so ties keep table order. */
function ordered<T>(lists: ([number, T][] | undefined)[]): T[] {
  return lists
    .flatMap((list) => list ?? [])
    .sort((a, b) => a[0] - b[0])
    .map(([, value]) => value);
}

export function assemble(conventions: readonly Convention[]): Rules {
  const fields = {} as Record<Field, KeyRef[]>;
  for (const field of FIELDS) fields[field] = ordered(conventions.map((c) => c.fields?.[field]));
  return {
    fields,
    kinds: ordered(conventions.map((c) => c.kinds)),
    messages: ordered(conventions.map((c) => c.messages)),
    sessionRoots: conventions.flatMap((c) => c.sessionRoots ?? []),
  };
}
