/**
 * The crash test's OTLP clients (test/crash.test.ts): batches of spans with known ids sent to
 * POST /v1/traces, as protobuf or OTLP/JSON (seeded), spread over a few traces per client, so that
 * batches add spans to sessions already stored and children often come before their parents
 * (otlp.md T12, T17). What a batch must have stored is checked here too (G7, T8, T14).
 */
import type { KeyValue, Span, TraceRequest } from "../../ingest/otlp/types.ts";
import { decodeTraceResponse, encodeTraces } from "../otlp.encode.ts";
import type { Random } from "./batches.ts";
import type { SendNext, Sent } from "./round.ts";

export const OTLP_CLIENTS = 3;
const TRACES_PER_CLIENT = 3;
const SPANS_PER_BATCH = [1, 200] as const;
const REQUEST_TIMEOUT_MS = 30_000;
/** 2026-11-22T05:00:00Z in nanoseconds. */
const NS0 = 1_795_323_600_000_000_000n;

type SpanKind = "llm" | "tool" | "action" | "agent";
/** The event type a span of that kind is stored as (T14: an agent span is an action). */
export const EVENT_TYPE: Record<SpanKind, string> = { llm: "llm", tool: "tool", action: "action", agent: "action" };
const KINDS: readonly SpanKind[] = ["llm", "llm", "llm", "tool", "tool", "action", "agent"];

interface SentSpan {
  trace: number;
  id: string;
  parent: string | null;
  kind: SpanKind;
}

export interface OtlpBatch {
  spans: SentSpan[];
  media: "protobuf" | "json";
  /** The exact request body, kept so that a retry sends the same bytes. */
  body: Uint8Array;
  state: "acked" | "refused" | "unknown";
}

interface Trace {
  hex: string;
  /** The session it is stored as (T12). */
  sessionId: string;
  root: string;
  /** Ids already sent, and ids named as a parent but not sent yet (the root among them at first). */
  sent: string[];
  promised: string[];
}

export interface OtlpClient {
  n: number;
  rng: Random;
  traces: Trace[];
  batches: OtlpBatch[];
  spanCounter: number;
}

// ----------------------------------------------------------------------------- batches

const hex = (rng: Random, digits: number) => Array.from({ length: digits }, () => rng.int(0, 15).toString(16)).join("");
/** T12: the trace id as a UUID, written here independently of the server's code. */
const asUuid = (h: string) => `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;

export function otlpClient(n: number, rng: Random): OtlpClient {
  const client: OtlpClient = { n, rng, traces: [], batches: [], spanCounter: 0 };
  for (let t = 0; t < TRACES_PER_CLIENT; t++) {
    const traceHex = `${hex(rng, 24)}${(0xc000 + n).toString(16)}${(0xa000 + t).toString(16)}`;
    const root = newSpanId(client);
    client.traces.push({ hex: traceHex, sessionId: asUuid(traceHex), root, sent: [], promised: [root] });
  }
  return client;
}

/** Span ids unique over the whole test: the client, then a counter; never zero. */
function newSpanId(client: OtlpClient) {
  client.spanCounter++;
  return `${(0xb000 + client.n).toString(16)}${client.spanCounter.toString(16).padStart(12, "0")}`;
}

const text = (key: string, value: string): KeyValue => ({ key, value: { stringValue: value } });
const int = (key: string, value: number): KeyValue => ({ key, value: { intValue: String(value) } });

function attributes(rng: Random, kind: SpanKind): KeyValue[] {
  switch (kind) {
    case "llm":
      return [
        text("gen_ai.request.model", "gpt-4o-mini"),
        int("gen_ai.usage.input_tokens", rng.int(10, 2000)),
        int("gen_ai.usage.output_tokens", rng.int(1, 500)),
        text("gen_ai.input.messages", JSON.stringify([{ role: "user", content: "plan the step" }])),
      ];
    case "tool":
      return [text("gen_ai.tool.name", "web_search"), text("gen_ai.tool.call.arguments", '{"q":"invoice"}')];
    case "agent":
      return [text("gen_ai.operation.name", "invoke_agent"), text("gen_ai.agent.name", `agent ${rng.int(1, 5)}`)];
    case "action":
      return [text("step.note", "ok")];
  }
}

/** The next span of a trace: a promised one (a parent some child already named), or a new one. */
function nextSpan(client: OtlpClient, traceIndex: number): SentSpan {
  const { rng } = client;
  const trace = client.traces[traceIndex] as Trace;
  const kind = rng.pick(KINDS);
  if (trace.promised.length > 0 && rng.int(0, 3) === 0) {
    const id = trace.promised.splice(rng.int(0, trace.promised.length - 1), 1)[0] as string;
    trace.sent.push(id);
    // a promised span hangs under the root, so that no parent chain loops
    return { trace: traceIndex, id, parent: id === trace.root ? null : trace.root, kind };
  }
  const id = newSpanId(client);
  const choice = rng.int(0, 9);
  let parent: string;
  if (choice < 3 || trace.sent.length === 0)
    parent = trace.root; // sent or not yet
  else if (choice < 7) parent = rng.pick(trace.sent);
  else {
    parent = newSpanId(client); // a parent that will come later: the child first
    trace.promised.push(parent);
  }
  trace.sent.push(id);
  return { trace: traceIndex, id, parent, kind };
}

function toSpan(client: OtlpClient, span: SentSpan): Span {
  const trace = client.traces[span.trace] as Trace;
  const start = NS0 + BigInt(client.rng.int(0, 3_600_000)) * 1_000_000n;
  return {
    traceId: trace.hex,
    spanId: span.id,
    ...(span.parent === null ? {} : { parentSpanId: span.parent }),
    name: span.parent === null ? "crash root" : `${span.kind} step`,
    kind: 1,
    startTimeUnixNano: String(start),
    endTimeUnixNano: String(start + BigInt(client.rng.int(1, 900)) * 1_000_000n),
    attributes: attributes(client.rng, span.kind),
    events: [],
    links: [],
  };
}

/**
 * The client's next request: 1-200 spans (seeded) over its traces, protobuf or OTLP/JSON (seeded),
 * or the media type given (a gRPC client's: protobuf; the seed is drawn all the same).
 */
export function nextOtlpBatch(client: OtlpClient, only?: "protobuf"): OtlpBatch {
  const { rng } = client;
  const size = rng.int(...SPANS_PER_BATCH);
  const spans = Array.from({ length: size }, () => nextSpan(client, rng.int(0, TRACES_PER_CLIENT - 1)));
  const request: TraceRequest = {
    resourceSpans: [
      {
        resource: { attributes: [text("service.name", `crash-otlp-${client.n}`)] },
        scopeSpans: [{ scope: { name: "crash-test", version: "1.0.0" }, spans: spans.map((s) => toSpan(client, s)) }],
      },
    ],
  };
  const media = rng.int(0, 1) === 0 || only === "protobuf" ? "protobuf" : "json";
  const body = media === "protobuf" ? encodeTraces(request) : Buffer.from(JSON.stringify(request), "utf8");
  const batch: OtlpBatch = { spans, media, body, state: "unknown" };
  client.batches.push(batch);
  return batch;
}

// ----------------------------------------------------------------------------- HTTP

/** POSTs the batch; `complete`: a 200 whose answer says nothing was rejected (T8). */
export async function sendOtlp(base: string, apiKey: string, batch: OtlpBatch) {
  try {
    const res = await fetch(`${base}/v1/traces`, {
      method: "POST",
      headers: {
        "content-type": batch.media === "protobuf" ? "application/x-protobuf" : "application/json",
        authorization: `Bearer ${apiKey}`,
      },
      body: batch.body,
      signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
    });
    const bytes = new Uint8Array(await res.arrayBuffer());
    let answer: unknown;
    try {
      answer =
        batch.media === "protobuf" && res.status === 200
          ? decodeTraceResponse(bytes)
          : JSON.parse(Buffer.from(bytes).toString("utf8"));
    } catch {
      if (res.status === 200 || batch.media === "json") return { status: 0, complete: false, answer: undefined };
    }
    const partial = (answer as { partialSuccess?: unknown } | undefined)?.partialSuccess;
    return { status: res.status, complete: res.status === 200 && partial === undefined, answer };
  } catch {
    return { status: 0, complete: false, answer: undefined }; // no answer: refused or reset by the kill
  }
}

const label = (batch: OtlpBatch) => `otlp ${batch.spans[0]?.id} (${batch.media}, ${batch.spans.length} spans)`;
const show = (answer: unknown) => JSON.stringify(answer)?.slice(0, 300);

export const otlpSender =
  (client: OtlpClient, apiKey: string): SendNext =>
  async (base) => {
    const batch = nextOtlpBatch(client);
    const answer = await sendOtlp(base, apiKey, batch);
    const sent: Sent = { status: answer.status, items: batch.spans.length };
    if (answer.status === 0) return sent;
    batch.state = answer.status === 200 ? "acked" : "refused";
    if (answer.status === 200 && !answer.complete) sent.problem = `${label(batch)}: 200 ${show(answer.answer)}`;
    if (answer.status !== 200 && answer.status !== 503) {
      sent.problem = `${label(batch)}: ${answer.status} ${show(answer.answer)}`;
    }
    return sent;
  };
