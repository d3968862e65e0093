/**
 * The AgentOps calls that are neither sessions, events nor agents, read into events (openapi.yaml
 * C2, C3): where each field of the body goes, and what is kept as sent (G5). Like records.ts, this
 * trusts ajv's check of the body's named fields.
 */
import { unknownFields } from "./records.ts";
import type { EventInput, JsonObject } from "./types.ts";

const given = (value: unknown) => value !== undefined && value !== null;

const DEVELOPER_ERROR_FIELDS = new Set(["type", "message", "stack_trace", "session_id"]);

/**
 * C2: AgentOps SDK 0.3.x's report of an exception inside the SDK, as an error event. `type` is the
 * exception's class (the event's `error_type`: an event's own `type` is its kind), `message` its
 * details, `stack_trace` its logs; every other field (`sdk_version`, `host_env`…) is kept on the
 * event as sent, even one that names an event field, so that nothing the SDK sent is reinterpreted.
 */
export function developerErrorEvent(raw: JsonObject): EventInput & { type: "error" } {
  const fields: JsonObject = { error_type: raw.type };
  if (given(raw.message)) fields.details = raw.message;
  if (given(raw.stack_trace)) fields.logs = raw.stack_trace;
  return {
    id: undefined,
    type: "error",
    session_id: undefined,
    init: undefined,
    fields,
    aliases: [],
    extra: unknownFields(raw, DEVELOPER_ERROR_FIELDS),
  };
}

/** The session a developer error names, when it names one. */
export const developerErrorSession = (raw: JsonObject): string | undefined =>
  typeof raw.session_id === "string" ? raw.session_id : undefined;

const THREAD_FIELDS = new Set(["id", "agent_id", "session_id"]);

/** C3: the id of the event that records a thread; the prefix keeps it apart from the client's own event ids. */
export const threadEventId = (threadId: string) => `thread:${threadId}`;

/** C3: `{ id, agent_id }` of create_thread as the action event of the agent opening that thread. */
export function threadEvent(raw: JsonObject & { id: string }): EventInput & { type: "action"; id: string } {
  const fields: JsonObject = { action_type: "create_thread", thread_id: raw.id };
  if (given(raw.agent_id)) fields.agent_id = raw.agent_id;
  return {
    id: threadEventId(raw.id),
    type: "action",
    session_id: given(raw.session_id) ? String(raw.session_id) : undefined,
    init: undefined,
    fields,
    aliases: [],
    extra: unknownFields(raw, THREAD_FIELDS),
  };
}
