/**
 * From a decoded OTLP trace request to what it writes (otlp.md T12-T16): one TraceWrite per trace.
 * Pure: the store does the rest (the session, roots across requests, agents across requests, T17).
 *
 * How the work is split:
 * - conventions/: one table per convention (AgentOps, OpenInference, OpenLLMetry, GenAI,
 *   Langfuse). Each lists, per field, the attribute keys it contributes with their rank in
 *   otlp.md's precedence lists, its kind rules and its message sources; conventions/convention.ts
 *   merges them into ordered lists once, at load. A new convention is one file and a line in
 *   conventions/index.ts. Outside conventions/, only OpenTelemetry's general keys are named
 *   (`service.name`, `exception.*`, `error.type`, the host_env prefixes).
 * - values.ts: OTLP values as plain JSON, nanoseconds as timestamps (string slicing, to the microsecond).
 * - span.ts: one span as its event, its agent and its error events (T14-T16), `extra.otel` (G5).
 * - root.ts: the root's rank and session fields (T13).
 * - export.ts: the way back, events to OTLP/JSON (`format=otlp`).
 * - ids.ts: trace ids and session ids; logs.ts: GenAI log records as their span's messages (T3).
 * Attributes are read from a Map built once per span.
 */
import type { AgentRecord, SpanEventRecord, TraceWrite } from "../../domain/types.ts";
import { traceIdToSessionId } from "./ids.ts";
import { conversationOf, rankOf, rootCandidate } from "./root.ts";
import { type MappedSpan, mapSpan, type SpanContext } from "./span.ts";
import type { TraceRequest } from "./types.ts";
import { attrsOf } from "./values.ts";

export { toOtlp } from "./export.ts";
export { sessionIdToTraceId, traceIdToSessionId } from "./ids.ts";

/**
 * Every event's agent: the nearest agent span at or above its span, within this request; null when
 * the chain of parents leaves the request first (the store finishes it across requests).
 */
function agentResolver(spans: ReadonlyMap<string, MappedSpan>): (spanId: string) => string | null {
  const memo = new Map<string, string | null>();
  return (start) => {
    const path: string[] = [];
    let id: string | null = start;
    let found: string | null = null;
    while (id !== null) {
      const known = memo.get(id);
      if (known !== undefined) {
        found = known;
        break;
      }
      const span = spans.get(id);
      if (!span || path.includes(id)) break; // outside the request, or a loop of parents
      path.push(id);
      if (span.agent) {
        found = span.agent.id;
        break;
      }
      id = span.parentId;
    }
    for (const seen of path) memo.set(seen, found);
    return found;
  };
}

function traceWrite(traceId: string, spans: MappedSpan[]): TraceWrite {
  const byId = new Map(spans.map((span) => [span.span.spanId, span]));
  const agentOf = agentResolver(byId);
  const events: SpanEventRecord[] = [];
  const agents = new Map<string, AgentRecord>();
  let earliest = spans[0] as MappedSpan;
  let root: MappedSpan | undefined;
  let rootRank = "";
  let conversation: string | null = null;
  for (const span of spans) {
    if (span.start.us < earliest.start.us) earliest = span;
    if (span.parentId === null) {
      const rank = rankOf(span);
      if (!root || rank < rootRank) [root, rootRank] = [span, rank];
    }
    conversation ??= conversationOf(span.attrs);
    const agentId = agentOf(span.span.spanId);
    if (span.event) events.push({ ...span.event, agent_id: agentId });
    for (const error of span.errors) events.push({ ...error, agent_id: agentId });
    if (span.agent) {
      const known = agents.get(span.agent.id);
      if (!known) agents.set(span.agent.id, span.agent);
      else if (known.name === null && span.agent.name !== null) agents.set(span.agent.id, span.agent);
    }
  }
  const candidate = root ? rootCandidate(root) : null;
  return {
    session_id: traceIdToSessionId(traceId),
    init_timestamp: earliest.start.iso,
    init_us: earliest.start.us,
    conversation_id: candidate?.fields.conversation_id ?? conversation,
    root: candidate,
    events,
    agents: [...agents.values()],
  };
}

/**
 * One TraceWrite per trace id of the request, in order of first appearance. A span id seen twice
 * in one trace is mapped once: the first copy, as a retry would be (T17). The request is validated
 * already (decode.ts: ids lowercase hex, starts present); a span whose start is still no time is
 * skipped.
 */
export function mapTraces(request: TraceRequest): TraceWrite[] {
  const traces = new Map<string, Map<string, MappedSpan>>();
  for (const resourceSpans of request.resourceSpans ?? []) {
    const resource = resourceSpans.resource ?? { attributes: [] };
    const resourceAttrs = attrsOf(resource.attributes);
    for (const scopeSpans of resourceSpans.scopeSpans ?? []) {
      const context: SpanContext = {
        resource,
        resourceSchemaUrl: resourceSpans.schemaUrl,
        scope: scopeSpans.scope ?? { name: "" },
        schemaUrl: scopeSpans.schemaUrl,
        resourceAttrs,
      };
      for (const span of scopeSpans.spans ?? []) {
        let trace = traces.get(span.traceId);
        if (!trace) {
          trace = new Map();
          traces.set(span.traceId, trace);
        }
        if (trace.has(span.spanId)) continue;
        const mapped = mapSpan(span, context);
        if (mapped) trace.set(span.spanId, mapped);
      }
    }
  }
  const writes: TraceWrite[] = [];
  for (const [traceId, spans] of traces) {
    if (spans.size > 0) writes.push(traceWrite(traceId, [...spans.values()]));
  }
  return writes;
}
