/**
 * One span as agentmon's records (otlp.md T14, T15, T16): its event (none for a root marked as
 * the session), the agent it registers, its error events, and everything it came with under
 * `extra.otel` (G5). Agents are resolved across the request in map.ts, so `agent_id` is null here.
 */
import { type GenAiEvent, isGenAiEventName } from "../../domain/genai.ts";
import type { Timestamp } from "../../domain/timestamps.ts";
import type { AgentRecord, JsonObject, Kind, SpanEventRecord } from "../../domain/types.ts";
import type { KeyRef, SpanView } from "./conventions/convention.ts";
import { RULES } from "./conventions/index.ts";
import { keyOf } from "./conventions/sources.ts";
import type { InstrumentationScope, Resource, Span } from "./types.ts";
import { type Attrs, asCost, asCount, asString, attrsOf, nanosToTimestamp, plainObject } from "./values.ts";

/** Where a span sat in its request: shared by the spans of one scope. */
export interface SpanContext {
  resource: Resource;
  resourceSchemaUrl: string | undefined;
  scope: InstrumentationScope;
  schemaUrl: string | undefined;
  /** The resource's attributes, built once per resource. */
  resourceAttrs: Attrs;
}

export interface MappedSpan {
  span: Span;
  context: SpanContext;
  attrs: Attrs;
  parentId: string | null;
  start: Timestamp;
  end: Timestamp | undefined;
  /** A root marked as the session itself (`agentops.span.kind = session`): no event of its own. */
  sessionRoot: boolean;
  /** What `extra.otel` holds (see otelOf). */
  otel: JsonObject;
  event: SpanEventRecord | null;
  errors: SpanEventRecord[];
  /** The agent this span registers, if it is an agent span. */
  agent: AgentRecord | null;
}

const ZERO_ID = /^0*$/;
/** The detail counts (parts of the prompt and completion counts), set only when a span gives them. */
const DETAILS = ["cache_read_tokens", "cache_creation_tokens", "reasoning_tokens"] as const;
const IDS = new Set(["traceId", "spanId", "parentSpanId"]);

/** The first of these keys (resolved for this span) whose value is given. */
export function firstOf(attrs: Attrs, refs: readonly KeyRef[]): unknown {
  for (const ref of refs) {
    const key = keyOf(ref, attrs);
    const value = key === undefined ? undefined : attrs.get(key);
    if (value !== undefined && value !== null) return value;
  }
  return undefined;
}

/**
 * `extra.otel`: the span as received without its ids (the event's id, its parent_id and its
 * session give them back), with its scope and resource, so that export.ts can rebuild OTLP/JSON
 * from the event alone: `{ name, kind, startTimeUnixNano, endTimeUnixNano, attributes, events,
 * links, status?, traceState?, flags?, dropped*Count?, scope, resource, schemaUrl?,
 * resourceSchemaUrl? }`. `scope` and `resource` are the objects of the request, shared, not copied.
 */
export function otelOf(span: Span, context: SpanContext): JsonObject {
  const otel: JsonObject = {};
  for (const key in span) if (!IDS.has(key)) otel[key] = span[key as keyof Span];
  otel.scope = context.scope;
  otel.resource = context.resource;
  if (context.schemaUrl !== undefined) otel.schemaUrl = context.schemaUrl;
  if (context.resourceSchemaUrl !== undefined) otel.resourceSchemaUrl = context.resourceSchemaUrl;
  return otel;
}

/** T14's kind rules, first match wins; the rule that decides also says whether it is an agent span. */
export function kindOf(attrs: Attrs): { kind: Kind; agent: boolean } {
  for (const rule of RULES.kinds) {
    const value = attrs.get(rule.key);
    if (typeof value === "string") return { kind: rule.kind(value), agent: rule.agent(value) };
  }
  if (firstOf(attrs, RULES.fields.model) !== undefined) return { kind: "llm", agent: false };
  if (firstOf(attrs, RULES.fields.tool_marker) !== undefined) return { kind: "tool", agent: false };
  return { kind: "action", agent: false };
}

function isSessionRoot(attrs: Attrs, parentId: string | null): boolean {
  return parentId === null && RULES.sessionRoots.some(([key, value]) => attrs.get(key) === value);
}

function viewOf(span: Span, attrs: Attrs): SpanView {
  let genAi: GenAiEvent[] | undefined;
  return {
    attrs,
    events: span.events ?? [],
    genAiEvents: () => {
      genAi ??= (span.events ?? [])
        .filter((event) => isGenAiEventName(event.name))
        .map((event) => ({ name: event.name, attributes: plainObject(event.attributes ?? []) }));
      return genAi;
    },
  };
}

/** The first message source that has this side wins (T15); a completion of one message is that message. */
function messages(view: SpanView, side: "prompt" | "completion"): unknown {
  for (const source of RULES.messages) {
    const found = source[side](view);
    if (found === undefined || (Array.isArray(found) && found.length === 0)) continue;
    return side === "completion" && Array.isArray(found) && found.length === 1 ? found[0] : found;
  }
  return undefined;
}

/** The named fields of the event's kind (E4), only those found. */
function fieldsOf(kind: Kind, span: Span, attrs: Attrs): JsonObject {
  const fields: JsonObject = {};
  const put = (name: string, value: unknown) => {
    if (value !== undefined && value !== null) fields[name] = value;
  };
  if (kind === "llm") {
    const view = viewOf(span, attrs);
    put("prompt", messages(view, "prompt"));
    put("completion", messages(view, "completion"));
  } else if (kind === "tool") {
    put("name", asString(firstOf(attrs, RULES.fields.tool_name)) ?? span.name);
    put("input", firstOf(attrs, RULES.fields.tool_input));
    put("output", firstOf(attrs, RULES.fields.tool_output));
  } else {
    put("action_type", span.name);
    put("params", firstOf(attrs, RULES.fields.action_input));
    put("returns", firstOf(attrs, RULES.fields.action_output));
  }
  return fields;
}

/** An error event; its fields are the given ones that are not null, and the trigger. */
function errorEvent(id: string, span: MappedSpan, at: Timestamp, given: JsonObject): SpanEventRecord {
  const fields: JsonObject = {};
  for (const key in given) if (given[key] !== null && given[key] !== undefined) fields[key] = given[key];
  fields.trigger_event_id = span.span.spanId;
  return {
    id,
    type: "error",
    parent_id: span.span.spanId,
    init_timestamp: at.iso,
    init_us: at.us,
    end_timestamp: null,
    agent_id: null,
    own_agent_id: null,
    model: null,
    prompt_tokens: null,
    completion_tokens: null,
    cost: null,
    fields,
    aliases: [],
    extra: {},
  };
}

/**
 * T16: one error event per span event named `exception` (`<span>:exception:N`, N counting the
 * exception events only), and one more for status ERROR (`<span>:status`). Both are kept when a
 * span has both, as otlp.md says "a span with status ERROR, and every span event named
 * exception"; so are AgentOps' two identical exception events for one exception (a store cannot
 * tell a repeated event from a second exception, and every event the client sent stays visible).
 * The status one takes its type and details from the span (exception.type, error.type, the status
 * message), else from the span's last exception event.
 */
function errorsOf(mapped: MappedSpan): SpanEventRecord[] {
  const { span, attrs } = mapped;
  const errors: SpanEventRecord[] = [];
  let last: Attrs | undefined;
  for (const event of span.events ?? []) {
    if (event.name !== "exception") continue;
    const a = attrsOf(event.attributes);
    last = a;
    errors.push(
      errorEvent(
        `${span.spanId}:exception:${errors.length}`,
        mapped,
        nanosToTimestamp(event.timeUnixNano) ?? mapped.start,
        {
          error_type: asString(a.get("exception.type")) ?? asString(attrs.get("error.type")),
          details: asString(a.get("exception.message")) ?? span.status?.message,
          logs: asString(a.get("exception.stacktrace")),
        },
      ),
    );
  }
  if (span.status?.code === 2) {
    errors.push(
      errorEvent(`${span.spanId}:status`, mapped, mapped.end ?? mapped.start, {
        error_type:
          asString(attrs.get("exception.type")) ??
          asString(attrs.get("error.type")) ??
          asString(last?.get("exception.type")),
        details:
          span.status.message || (asString(attrs.get("exception.message")) ?? asString(last?.get("exception.message"))),
        logs: asString(attrs.get("exception.stacktrace")),
      }),
    );
  }
  return errors;
}

/** Maps one span; undefined when its start is not a time (the decoder refuses those first, T9). */
export function mapSpan(span: Span, context: SpanContext): MappedSpan | undefined {
  const start = nanosToTimestamp(span.startTimeUnixNano);
  if (!start) return undefined;
  const attrs = attrsOf(span.attributes);
  const parent = span.parentSpanId;
  const parentId = parent === undefined || ZERO_ID.test(parent) ? null : parent;
  const end = nanosToTimestamp(span.endTimeUnixNano);
  const mapped: MappedSpan = {
    span,
    context,
    attrs,
    parentId,
    start,
    end,
    sessionRoot: isSessionRoot(attrs, parentId),
    otel: otelOf(span, context),
    event: null,
    errors: [],
    agent: null,
  };
  if (!mapped.sessionRoot) {
    const { kind, agent } = kindOf(attrs);
    if (agent) {
      const id = asString(firstOf(attrs, RULES.fields.agent_id)) ?? span.spanId;
      mapped.agent = { id, name: asString(firstOf(attrs, RULES.fields.agent_name)), extra: {} };
    }
    const cost = asCost(firstOf(attrs, RULES.fields.cost));
    const details: Partial<SpanEventRecord> = {};
    for (const field of DETAILS) {
      const count = asCount(firstOf(attrs, RULES.fields[field]));
      if (count !== null) details[field] = count;
    }
    mapped.event = {
      id: span.spanId,
      type: kind,
      parent_id: parentId,
      init_timestamp: start.iso,
      init_us: start.us,
      end_timestamp: end?.iso ?? null,
      agent_id: null,
      own_agent_id: mapped.agent?.id ?? null,
      model: asString(firstOf(attrs, RULES.fields.model)),
      prompt_tokens: asCount(firstOf(attrs, RULES.fields.prompt_tokens)),
      completion_tokens: asCount(firstOf(attrs, RULES.fields.completion_tokens)),
      ...details,
      cost,
      fields: fieldsOf(kind, span, attrs),
      aliases: [],
      extra: { otel: mapped.otel },
    };
    // A client's cost is the client's (E4); without one the service prices the event (priceEvent).
    if (cost !== null) mapped.event.cost_source = "client";
  }
  mapped.errors = errorsOf(mapped);
  return mapped;
}
