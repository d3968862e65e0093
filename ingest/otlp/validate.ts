/**
 * Which spans of a decoded request can be stored (otlp.md T9): each span is judged on its own, and
 * a refused one never takes its batch with it. The reasons go into the answer's partial_success
 * (T8). The project check of T9 (a trace that is another project's session) needs storage and is
 * not made here.
 */
import type { ScopeSpans, Span, TraceRequest } from "./types.ts";

const TRACE_ID = /^[0-9a-f]{32}$/i;
const SPAN_ID = /^[0-9a-f]{16}$/i;
const ZERO_TRACE_ID = "0".repeat(32);
const ZERO_SPAN_ID = "0".repeat(16);

/** How many refused spans the reasons name: the answer says why "the first few" were (T8). */
const MAX_REASONS = 5;

export interface AcceptedSpans {
  /** The request without its refused spans; empty scopes and resources stay. */
  request: TraceRequest;
  rejected: number;
  /** Why, for at most the first 5 refused spans. */
  reasons: string[];
}

/** A value from the client, shown in a reason: quoted, and cut short so that a reason stays short. */
function shown(value: string): string {
  return JSON.stringify(value.length > 64 ? `${value.slice(0, 64)}…` : value);
}

/** Why the span cannot be stored, or undefined when it can. */
function refusal(span: Span): string | undefined {
  if (!TRACE_ID.test(span.traceId)) return "its traceId is not 32 hex digits (16 bytes)";
  if (span.traceId === ZERO_TRACE_ID) return "its traceId is all zeros";
  if (!SPAN_ID.test(span.spanId)) return "its spanId is not 16 hex digits (8 bytes)";
  if (span.spanId === ZERO_SPAN_ID) return "its spanId is all zeros";
  const parent = span.parentSpanId;
  if (parent && !SPAN_ID.test(parent)) return "its parentSpanId is not 16 hex digits (8 bytes)";
  if (!span.startTimeUnixNano || span.startTimeUnixNano === "0") return "its startTimeUnixNano is missing or zero";
  return undefined;
}

/**
 * The span as it is stored: ids in lowercase (case does not matter in hex, T9, and the JSON
 * reader already lowercases them), and a parent of zeros or "" left out, as a root's is.
 * The span itself is returned when nothing changes, as it is for every span the decoders give
 * except an all-zero parent.
 */
function normalised(span: Span): Span {
  const parent = span.parentSpanId;
  const rootish = parent !== undefined && (parent === "" || parent === ZERO_SPAN_ID);
  const lower =
    span.traceId.toLowerCase() === span.traceId &&
    span.spanId.toLowerCase() === span.spanId &&
    (parent === undefined || parent.toLowerCase() === parent);
  if (!rootish && lower) return span;
  const { parentSpanId, ...rest } = span;
  const out: Span = { ...rest, traceId: span.traceId.toLowerCase(), spanId: span.spanId.toLowerCase() };
  if (parentSpanId && !rootish) out.parentSpanId = parentSpanId.toLowerCase();
  return out;
}

/** The request's spans that T9 accepts, how many it refused, and why the first few were. */
export function acceptSpans(request: TraceRequest): AcceptedSpans {
  let rejected = 0;
  const reasons: string[] = [];
  const resourceSpans = request.resourceSpans.map((rs) => {
    const scopeSpans = rs.scopeSpans.map((ss): ScopeSpans => {
      const spans: Span[] = [];
      for (const span of ss.spans) {
        const why = refusal(span);
        if (why === undefined) {
          spans.push(normalised(span));
          continue;
        }
        rejected++;
        if (reasons.length < MAX_REASONS) {
          const ids = `traceId ${shown(span.traceId)}, spanId ${shown(span.spanId)}`;
          reasons.push(`span ${shown(span.name)} (${ids}) was refused: ${why}`);
        }
      }
      return { ...ss, spans };
    });
    return { ...rs, scopeSpans };
  });
  return { request: { resourceSpans }, rejected, reasons };
}
