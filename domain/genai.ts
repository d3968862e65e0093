/**
 * OpenTelemetry GenAI messages as the contract's E4 messages (otlp.md T15, T3): `prompt` an array
 * of `{ role, content, ... }`, `completion` one such message (or several, kept as an array).
 * Three forms come in:
 * - the current conventions' `gen_ai.input.messages` / `gen_ai.output.messages` (a JSON string or
 *   a structured value): messages made of `parts`; `text` parts become `content`, the others are
 *   kept under `parts`;
 * - GenAI events, as span events or as log records (T3, which the storage adapter applies to a
 *   span's event when its logs arrive after it): `gen_ai.system.message`, `gen_ai.user.message`,
 *   `gen_ai.assistant.message`, `gen_ai.tool.message`, `gen_ai.choice`, the older
 *   `gen_ai.content.prompt` / `gen_ai.content.completion`, and
 *   `gen_ai.client.inference.operation.details`;
 * - flattened attributes (`gen_ai.prompt.0.role`, `llm.input_messages.0.message.content`), made
 *   into objects by `unflatten`.
 * Pure functions on plain JSON values (an OTLP AnyValue is made plain in ingest/otlp/values.ts).
 */
import { jsonTextHasNul } from "./nul.ts";
import type { GenAiEvent, JsonObject, SpanLogRecord } from "./types.ts";

export type { GenAiEvent, SpanLogRecord };

export type Messages = JsonObject[];

const isObject = (value: unknown): value is JsonObject =>
  typeof value === "object" && value !== null && !Array.isArray(value);

/**
 * A JSON text parsed, or the value itself when it is not a string or not JSON. A text whose JSON
 * would give U+0000 (the escape `\u0000`) is not read either: the string itself holds no NUL and
 * is kept, but no value made of it may hold one (decision 017).
 */
function parsed(value: unknown): unknown {
  if (typeof value !== "string") return value;
  const text = value.trim();
  if (!(text.startsWith("[") || text.startsWith("{")) || jsonTextHasNul(text)) return value;
  try {
    return JSON.parse(text);
  } catch {
    return value;
  }
}

/** One GenAI message with `parts` as an E4 message: text parts joined into `content`, others kept. */
export function toE4Message(message: JsonObject): JsonObject {
  if (!Array.isArray(message.parts)) return message;
  const { parts, ...rest } = message;
  const texts: string[] = [];
  const others: unknown[] = [];
  for (const part of parts as unknown[]) {
    if (isObject(part) && part.type === "text" && typeof part.content === "string") texts.push(part.content);
    else others.push(part);
  }
  const out: JsonObject = { ...rest, content: texts.length === 0 ? null : texts.join("") };
  if (others.length > 0) out.parts = others;
  return out;
}

/**
 * `gen_ai.input.messages` or `gen_ai.output.messages` (a JSON string or a structured value) as
 * E4 messages; a single message object counts as a list of one. Anything else: undefined.
 */
export function fromGenAiMessages(value: unknown): Messages | undefined {
  const data = parsed(value);
  const list = Array.isArray(data) ? data : isObject(data) ? [data] : undefined;
  if (!list || list.length === 0 || !list.every(isObject)) return undefined;
  return list.map(toE4Message);
}

/** E4's completion: one message as itself, several as the array. */
export const completionOf = (messages: Messages): JsonObject | Messages =>
  messages.length === 1 ? (messages[0] as JsonObject) : messages;

export interface GenAiMessages {
  prompt?: Messages;
  completion?: Messages;
}

const ROLE_OF_EVENT: Record<string, string> = {
  "gen_ai.system.message": "system",
  "gen_ai.user.message": "user",
  "gen_ai.assistant.message": "assistant",
  "gen_ai.tool.message": "tool",
};

export const isGenAiEventName = (name: string | undefined): name is string =>
  typeof name === "string" && name.startsWith("gen_ai.");

/** The message fields of an event: its body, else `gen_ai.event.content`, else its own attributes. */
function content(event: GenAiEvent): JsonObject {
  if (isObject(event.body)) return event.body;
  if (typeof event.body === "string") return { content: event.body };
  const packed = parsed(event.attributes["gen_ai.event.content"]);
  if (isObject(packed)) return packed;
  const out: JsonObject = {};
  for (const [key, value] of Object.entries(event.attributes)) {
    if (!key.startsWith("gen_ai.") && key !== "event.name") out[key] = value;
  }
  return out;
}

/** What one GenAI event says: prompt messages, completion messages, or nothing it knows. */
export function genAiEventMessages(event: GenAiEvent): GenAiMessages {
  const role = ROLE_OF_EVENT[event.name];
  if (role !== undefined) return { prompt: [toE4Message({ role, ...content(event) })] };
  switch (event.name) {
    case "gen_ai.choice": {
      const { message, ...rest } = content(event);
      const inner = isObject(message) ? message : {};
      return { completion: [toE4Message({ role: "assistant", ...inner, ...rest })] };
    }
    case "gen_ai.content.prompt":
      return sides(event.attributes["gen_ai.prompt"], undefined);
    case "gen_ai.content.completion":
      return sides(undefined, event.attributes["gen_ai.completion"]);
    case "gen_ai.client.inference.operation.details":
      return sides(event.attributes["gen_ai.input.messages"], event.attributes["gen_ai.output.messages"]);
    default:
      return {};
  }
}

function sides(prompt: unknown, completion: unknown): GenAiMessages {
  const out: GenAiMessages = {};
  const p = prompt === undefined ? undefined : (fromGenAiMessages(prompt) ?? asText(prompt));
  const c = completion === undefined ? undefined : (fromGenAiMessages(completion) ?? asText(completion));
  if (p) out.prompt = p;
  if (c) out.completion = c;
  return out;
}

/** A plain text prompt or completion as one message without a role. */
const asText = (value: unknown): Messages | undefined =>
  typeof value === "string" && value !== "" ? [{ content: value }] : undefined;

/** The GenAI events of a span (or a span's log records), in order, as prompt and completion messages. */
export function messagesFromGenAiEvents(events: readonly GenAiEvent[]): GenAiMessages {
  const out: GenAiMessages = {};
  for (const event of events) {
    if (!isGenAiEventName(event.name)) continue;
    const found = genAiEventMessages(event);
    if (found.prompt) out.prompt = [...(out.prompt ?? []), ...found.prompt];
    if (found.completion) out.completion = [...(out.completion ?? []), ...found.completion];
  }
  return out;
}

/** Assigned, but a key named `__proto__` is defined, so that it stays plain data. */
function define(node: JsonObject, key: string, value: unknown) {
  if (key === "__proto__") {
    Object.defineProperty(node, key, { value, enumerable: true, writable: true, configurable: true });
  } else node[key] = value;
}

const isIndex = (text: string) =>
  text.length > 0 && text.charCodeAt(0) >= 48 && text.charCodeAt(0) <= 57 && /^\d+$/.test(text);

/** Single-key wrappers that OpenInference puts around each item: `{ message: {...} }`, ... */
const WRAPPERS = new Set(["message", "tool_call", "message_content"]);

function unwrap(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(unwrap);
  if (!isObject(value)) return value;
  const keys = Object.keys(value);
  if (keys.length === 1 && WRAPPERS.has(keys[0] as string)) return unwrap(value[keys[0] as string]);
  const out: JsonObject = {};
  for (const key of keys) define(out, key, unwrap(value[key]));
  return out;
}

/** Objects whose keys are all indexes become arrays, in index order. */
function arrays(value: unknown): unknown {
  if (!isObject(value)) return value;
  const keys = Object.keys(value);
  for (const key of keys) value[key] = arrays(value[key]);
  if (keys.length > 0 && keys.every(isIndex)) {
    return keys.sort((a, b) => Number(a) - Number(b)).map((key) => value[key]);
  }
  return value;
}

/**
 * Flattened messages (`<prefix>N.role`, `<prefix>N.message.tool_calls.0.tool_call.id`, ...) as
 * a list of messages in index order, OpenInference's wrappers removed; none: undefined.
 */
export function unflatten(entries: Iterable<[string, unknown]>, prefix: string): Messages | undefined {
  const root: JsonObject = {};
  let found = false;
  for (const [key, value] of entries) {
    if (!key.startsWith(prefix)) continue;
    const path = key.slice(prefix.length).split(".");
    if (!isIndex(path[0] as string)) continue;
    found = true;
    let node = root;
    for (let i = 0; i < path.length - 1; i++) {
      const segment = path[i] as string;
      const next = Object.hasOwn(node, segment) ? node[segment] : undefined;
      if (!isObject(next)) define(node, segment, {});
      node = node[segment] as JsonObject;
    }
    define(node, path[path.length - 1] as string, value);
  }
  if (!found) return undefined;
  const list = unwrap(arrays(root));
  return Array.isArray(list) ? list.filter(isObject) : undefined;
}

/** The attributes (`extra.otel.attributes`, a KeyValue list) that outrank GenAI events (T15). */
const OUTRANKS: Record<"prompt" | "completion", string> = {
  prompt: "gen_ai.input.messages",
  completion: "gen_ai.output.messages",
};

function hasAttribute(otel: unknown, key: string): boolean {
  const list = isObject(otel) ? otel.attributes : undefined;
  return Array.isArray(list) && list.some((entry) => isObject(entry) && entry.key === key);
}

/**
 * T3: a span's event with its GenAI log records (sorted by time, then digest, so the result does
 * not depend on the order they came in, T17). The records are kept under `otel.log_records`.
 * Their messages are GenAI events, which T15 ranks above every source of prompt and completion
 * but the span's own `gen_ai.input.messages` / `gen_ai.output.messages`: they replace the
 * event's prompt (completion) unless the span carried that attribute. Kinds other than llm keep
 * their fields.
 */
export function withLogRecords<E extends { type: string; fields: JsonObject; extra: JsonObject }>(
  event: E,
  records: readonly SpanLogRecord[],
): E {
  if (records.length === 0) return event;
  const sorted = [...records].sort((a, b) => a.time_us - b.time_us || (a.digest < b.digest ? -1 : 1));
  const otel = isObject(event.extra.otel) ? event.extra.otel : {};
  const extra = { ...event.extra, otel: { ...otel, log_records: sorted.map((record) => record.event) } };
  if (event.type !== "llm") return { ...event, extra };
  const found = messagesFromGenAiEvents(sorted.map((record) => record.event));
  const fields = { ...event.fields };
  for (const side of ["prompt", "completion"] as const) {
    const messages = found[side];
    if (!messages || messages.length === 0 || hasAttribute(otel, OUTRANKS[side])) continue;
    fields[side] = side === "completion" ? completionOf(messages) : messages;
  }
  return { ...event, fields, extra };
}
