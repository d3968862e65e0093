/**
 * B7 of `npm run bench` and `npm run bench:memory`: OTLP protobuf bodies as an OpenTelemetry SDK
 * sends them, and the load that sends them.
 *
 * One body is 100 spans of 4 traces (25 each), as a BatchSpanProcessor's export mixes the traces
 * that ended together: the resource of the Node.js/Traceloop fixture
 * (test/fixtures/otlp/traceloop-instrumentation-openai-0.27.0, its 20 attributes) and its two
 * scopes (`@traceloop/instrumentation-openai` for the chat spans, the application's for the rest).
 * Each trace is a tree: a root agent span (`invoke_agent`), two sub-agent spans under it, and 22
 * leaves under those, three chat spans in four (12 GenAI attributes: model, tokens, input and
 * output messages of a few hundred bytes) and one tool span in four; children come before their
 * parents, as spans are exported when they end.
 *
 * The body is encoded once, with the generated encoder (test/ingest/decode.helpers.ts
 * encodeTraces over generated/otlp.js); each request is a copy of it with its 4 trace ids
 * rewritten in place (16 bytes at known offsets), so every request opens 4 new sessions and the
 * load generator spends almost nothing per request.
 */
import { randomBytes } from "node:crypto";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import * as grpc from "@grpc/grpc-js";
import autocannon from "autocannon";
import { priceEvent, priceTable } from "../../domain/prices.ts";
import { exportMethod } from "../../http/grpc.ts";
import { decodeTraces } from "../../ingest/otlp/decode.ts";
import { mapTraces } from "../../ingest/otlp/map.ts";
import { nulInTraces } from "../../ingest/otlp/nul.ts";
import type { KeyValue, Resource, Span, TraceRequest } from "../../ingest/otlp/types.ts";
import { acceptSpans } from "../../ingest/otlp/validate.ts";
import { encodeTraces } from "../../test/ingest/decode.helpers.ts";
import { ROOT, type Server } from "../load.ts";

export const SPANS_PER_REQUEST = 100;
const TRACES_PER_REQUEST = 4;
const SPANS_PER_TRACE = SPANS_PER_REQUEST / TRACES_PER_REQUEST;

const FIXTURE = join(
  ROOT,
  "test/fixtures/otlp/traceloop-instrumentation-openai-0.27.0/otlp-proto/01-post-v1-traces.body.otlp.json",
);

const str = (key: string, stringValue: string): KeyValue => ({ key, value: { stringValue } });
const int = (key: string, n: number): KeyValue => ({ key, value: { intValue: String(n) } });

const SYSTEM = "You are a careful assistant that answers questions about the weather and travel. ".repeat(2);
const QUESTION = "What will the weather be like in Lisbon tomorrow afternoon, and should I bring a coat? ".repeat(2);
const INPUT_MESSAGES = JSON.stringify([
  { role: "system", parts: [{ type: "text", content: SYSTEM }] },
  { role: "user", parts: [{ type: "text", content: QUESTION }] },
]);
const OUTPUT_MESSAGES = JSON.stringify([
  {
    role: "assistant",
    finish_reason: "stop",
    parts: [
      {
        type: "text",
        content: "Mild and cloudy tomorrow afternoon, around 17 °C with a light breeze; a light coat is enough.",
      },
    ],
  },
]);

/** 12 GenAI attributes of an OpenAI chat call, as @traceloop/instrumentation-openai sets them. */
const chatAttributes = (n: number): KeyValue[] => [
  str("gen_ai.provider.name", "openai"),
  str("gen_ai.operation.name", "chat"),
  str("gen_ai.request.model", "gpt-4o-mini"),
  int("gen_ai.request.max_tokens", 256),
  { key: "gen_ai.request.temperature", value: { doubleValue: 0.2 } },
  str("gen_ai.input.messages", INPUT_MESSAGES),
  str("gen_ai.response.model", "gpt-4o-mini-2024-07-18"),
  str("gen_ai.response.id", `chatcmpl-bench-${n}`),
  int("gen_ai.usage.input_tokens", 212),
  int("gen_ai.usage.output_tokens", 24),
  { key: "gen_ai.response.finish_reasons", value: { arrayValue: { values: [{ stringValue: "stop" }] } } },
  str("gen_ai.output.messages", OUTPUT_MESSAGES),
];

const toolAttributes = (n: number): KeyValue[] => [
  str("gen_ai.operation.name", "execute_tool"),
  str("gen_ai.tool.name", "get_weather"),
  str("gen_ai.tool.type", "function"),
  str("gen_ai.tool.description", "Current weather and the forecast for the next three days in a city"),
  str("gen_ai.tool.call.id", `call_bench_${n}`),
  str("gen_ai.tool.call.arguments", JSON.stringify({ city: "Lisbon", day: "tomorrow", units: "metric" })),
  str(
    "gen_ai.tool.call.result",
    JSON.stringify({ temp_c: 17, sky: "clouds", wind_kmh: 12, forecast: ["clouds", "sun", "rain"], source: "bench" }),
  ),
];

const agentAttributes = (name: string, id: string): KeyValue[] => [
  str("gen_ai.operation.name", "invoke_agent"),
  str("gen_ai.agent.name", name),
  str("gen_ai.agent.id", id),
  str("gen_ai.conversation.id", "conversation-bench"),
];

/**
 * The canonical request of one body: trace t's id is `markers[t]`; span ids count up within a
 * trace (they only have to be unique within their trace, its session); times count up from now.
 */
function benchRequest(markers: string[]): TraceRequest {
  const fixture = JSON.parse(readFileSync(FIXTURE, "utf8")) as TraceRequest;
  const first = fixture.resourceSpans[0];
  if (!first || first.scopeSpans.length < 2) throw new Error(`${FIXTURE}: expected a resource with two scopes`);
  const resource: Resource = first.resource;
  const [llmScope, appScope] = first.scopeSpans.map((scopeSpans) => scopeSpans.scope);
  const chats: Span[] = [];
  const others: Span[] = [];
  const startNs = BigInt(Date.now()) * 1_000_000n;
  const spanId = (t: number, i: number) => (0x1000_0000_0000_0000n + BigInt(t * 1000 + i + 1)).toString(16);
  markers.forEach((traceId, t) => {
    const times = (i: number) => ({
      startTimeUnixNano: String(startNs + BigInt(i) * 40_000_000n),
      // Parents end after their children: the root lasts the whole trace.
      endTimeUnixNano: String(startNs + BigInt(i === 0 ? SPANS_PER_TRACE : i + 1) * 40_000_000n - 1n),
    });
    const span = (i: number, parent: number | undefined, name: string, attributes: KeyValue[]): Span => ({
      traceId,
      spanId: spanId(t, i),
      ...(parent === undefined ? {} : { parentSpanId: spanId(t, parent) }),
      name,
      kind: name.startsWith("chat") ? 3 : 1,
      ...times(i),
      attributes,
      events: [],
      links: [],
      flags: 257,
    });
    // Leaves 3..24 under the two sub-agents (1 and 2), then the sub-agents, then the root (0).
    for (let i = 3; i < SPANS_PER_TRACE; i++) {
      const parent = i < 3 + (SPANS_PER_TRACE - 3) / 2 ? 1 : 2;
      if (i % 4 === 2) others.push(span(i, parent, "execute_tool get_weather", toolAttributes(i)));
      else chats.push(span(i, parent, "chat gpt-4o-mini", chatAttributes(i)));
    }
    others.push(span(1, 0, "invoke_agent planner", agentAttributes("planner", `planner-${t}`)));
    others.push(span(2, 0, "invoke_agent researcher", agentAttributes("researcher", `researcher-${t}`)));
    others.push(span(0, undefined, "invoke_agent weather-agent", agentAttributes("weather-agent", `weather-${t}`)));
  });
  return {
    resourceSpans: [
      {
        resource,
        scopeSpans: [
          { scope: llmScope ?? { name: "" }, spans: chats },
          { scope: appScope ?? { name: "" }, spans: others },
        ],
      },
    ],
  };
}

/** Every offset of `needle` in `haystack`. */
function offsetsOf(haystack: Buffer, needle: Buffer): number[] {
  const found: number[] = [];
  for (let at = haystack.indexOf(needle); at !== -1; at = haystack.indexOf(needle, at + 1)) found.push(at);
  return found;
}

export interface OtlpBodies {
  /** The encoded body with its placeholder trace ids (never sent as it is). */
  template: Buffer;
  spans: number;
  /** A new body: a copy of the template with 4 trace ids never sent before. */
  next(): Buffer;
}

/** The B7 body, encoded once, and a maker of copies with fresh trace ids. */
export function otlpBodies(): OtlpBodies {
  // Random placeholders: 16 random bytes do not occur by chance in the rest of the body, and the
  // count of each is checked (one per span of its trace).
  const markers = Array.from({ length: TRACES_PER_REQUEST }, () => randomBytes(16));
  const template = Buffer.from(encodeTraces(benchRequest(markers.map((m) => m.toString("hex")))));
  const offsets = markers.map((marker) => {
    const found = offsetsOf(template, marker);
    if (found.length !== SPANS_PER_TRACE)
      throw new Error(`trace id found ${found.length} times, not ${SPANS_PER_TRACE}`);
    return found;
  });
  // A trace id: 8 random bytes of this run, then a counter (never all zeros).
  const id = Buffer.alloc(16);
  randomBytes(8).copy(id, 0);
  let sequence = 0n;
  return {
    template,
    spans: SPANS_PER_REQUEST,
    next() {
      const body = Buffer.from(template);
      for (const at of offsets) {
        id.writeBigUInt64BE(++sequence, 8);
        for (const offset of at) id.copy(body, offset);
      }
      return body;
    },
  };
}

/**
 * The in-process cost per span of what the server does with a body before storage: decodeTraces
 * (protobuf to the canonical form), nulInTraces (decision 017: the request is refused if it holds
 * U+0000), acceptSpans (T9) and mapTraces (to sessions, events and agents), each timed over
 * `rounds` bodies after as many unmeasured ones (JIT). µs per span.
 */
export function decodeCost(bodies: OtlpBodies, rounds = 300) {
  const prices = priceTable();
  const run = (n: number) => {
    const totals = { decode: 0, nul: 0, accept: 0, map: 0, price: 0 };
    let spans = 0;
    for (let i = 0; i < n; i++) {
      const body = bodies.next();
      const t0 = performance.now();
      const request = decodeTraces(body);
      const tn = performance.now();
      if (nulInTraces(request) !== undefined) throw new Error("the B7 body holds U+0000");
      const t1 = performance.now();
      const checked = acceptSpans(request);
      const t2 = performance.now();
      const writes = mapTraces(checked.request);
      const t3 = performance.now();
      // What services/otlp.ts does next, timed apart: not part of the decode cost.
      for (const write of writes) write.events = write.events.map((event) => priceEvent(event, prices) as never);
      const t4 = performance.now();
      totals.decode += tn - t0;
      totals.nul += t1 - tn;
      totals.accept += t2 - t1;
      totals.map += t3 - t2;
      totals.price += t4 - t3;
      for (const write of writes) spans += write.events.length;
    }
    return { totals, spans };
  };
  run(rounds);
  const { totals, spans } = run(rounds);
  const perSpan = (ms: number) => (ms * 1000) / spans;
  return {
    decode_us: perSpan(totals.decode),
    nul_us: perSpan(totals.nul),
    accept_us: perSpan(totals.accept),
    map_us: perSpan(totals.map),
    total_us: perSpan(totals.decode + totals.nul + totals.accept + totals.map),
    price_us: perSpan(totals.price),
  };
}

/** autocannon's request list for B7's load: POST /v1/traces, protobuf, the API key as a bearer token. */
function otlpRequests(server: Server, bodies: OtlpBodies, onResponse?: (status: number) => void): autocannon.Request[] {
  const headers = { "content-type": "application/x-protobuf", authorization: `Bearer ${server.key}` };
  return [
    {
      method: "POST",
      path: "/v1/traces",
      setupRequest: (request) => ({ ...request, headers, body: bodies.next() }),
      ...(onResponse ? { onResponse } : {}),
    },
  ];
}

export interface OtlpLoadResult {
  spansPerS: number;
  requests: number;
  p99: number;
  failed: number;
}

/**
 * B7: `connections` connections sending 100-span bodies for `warmup` + `seconds` seconds, in ONE
 * autocannon run, counting only the answers that arrive after the warm-up. B1 runs its warm-up
 * and its measure as two runs; that does not do here: a B7 request takes seconds to answer on a
 * busy machine (50 × 100 spans in flight), so the measure would start with the warm-up's
 * abandoned requests still queued in the server and its first seconds would count almost
 * nothing. p99 is autocannon's, over the whole run.
 */
export async function otlpIngest(
  server: Server,
  options: { connections: number; seconds: number; warmup?: number },
): Promise<OtlpLoadResult> {
  const bodies = otlpBodies();
  const warmup = options.warmup ?? 0;
  let from = Number.POSITIVE_INFINITY;
  let counted = 0;
  let failed = 0;
  const onResponse = (status: number) => {
    if (performance.now() < from) return;
    if (status === 200) counted++;
    else failed++;
  };
  from = performance.now() + warmup * 1000;
  const result = await autocannon({
    url: server.url,
    connections: options.connections,
    duration: warmup + options.seconds,
    requests: otlpRequests(server, bodies, onResponse),
  });
  const seconds = (performance.now() - from) / 1000;
  return {
    spansPerS: (counted / seconds) * SPANS_PER_REQUEST,
    requests: counted,
    p99: result.latency.p99,
    failed: failed + result.errors, // autocannon's errors already count its timeouts
  };
}

/**
 * B7 over OTLP/gRPC (docs/decisions/028-otlp-grpc.md): the same bodies to the TraceService's
 * Export, from `connections` grpc-js channels of their own (each its own HTTP/2 connection), each
 * with one call in flight at a time as autocannon's connections have; counted as otlpIngest counts
 * (only answers after the warm-up). p99 is over the calls answered after the warm-up.
 */
export async function otlpGrpcIngest(
  server: Server,
  options: { connections: number; seconds: number; warmup?: number },
): Promise<OtlpLoadResult> {
  if (server.grpc === undefined) throw new Error("the server has no OTLP/gRPC port");
  const bodies = otlpBodies();
  const Client = grpc.makeGenericClientConstructor(
    { Export: exportMethod("opentelemetry.proto.collector.trace.v1.TraceService") },
    "TraceService",
  );
  const metadata = new grpc.Metadata();
  metadata.set("authorization", `Bearer ${server.key}`);
  const warmup = options.warmup ?? 0;
  const start = performance.now();
  const from = start + warmup * 1000;
  const until = from + options.seconds * 1000;
  let counted = 0;
  let failed = 0;
  const latencies: number[] = [];
  const clients = Array.from(
    { length: options.connections },
    () =>
      new Client(server.grpc as string, grpc.credentials.createInsecure(), {
        "grpc.use_local_subchannel_pool": 1,
      }) as unknown as grpc.Client & {
        Export(body: Buffer, metadata: grpc.Metadata, done: (error: grpc.ServiceError | null) => void): void;
      },
  );
  const loop = async (client: (typeof clients)[number]) => {
    while (performance.now() < until) {
      const sent = performance.now();
      const error = await new Promise<grpc.ServiceError | null>((resolve) =>
        client.Export(bodies.next(), metadata, resolve),
      );
      const answered = performance.now();
      if (answered < from || answered > until) continue;
      if (error) failed++;
      else {
        counted++;
        latencies.push(answered - sent);
      }
    }
  };
  await Promise.all(clients.map(loop));
  for (const client of clients) client.close();
  latencies.sort((a, b) => a - b);
  return {
    spansPerS: (counted / options.seconds) * SPANS_PER_REQUEST,
    requests: counted,
    p99: Math.round(latencies[Math.floor(latencies.length * 0.99)] ?? 0),
    failed,
  };
}

/**
 * Sends `spans` spans (rounded up to whole requests) as fast as `connections` connections go,
 * until that many were answered 200: a request refused (a 503 while the server lags, a timeout)
 * is sent again, as an exporter would, and counted in `failed`.
 */
export async function otlpSend(server: Server, spans: number, connections: number) {
  const bodies = otlpBodies();
  return untilAccepted(Math.ceil(spans / SPANS_PER_REQUEST), (amount, onResponse) =>
    autocannon({
      url: server.url,
      connections: Math.min(connections, amount), // autocannon refuses more connections than requests
      amount,
      requests: otlpRequests(server, bodies, onResponse),
    }),
  );
}

/**
 * Runs `run(amount, onResponse)` until `wanted` requests were answered 200 (at most 20 runs);
 * answers how many were sent and how many of them failed, by status ("timeout" and "error" for
 * autocannon's own).
 */
export async function untilAccepted(
  wanted: number,
  run: (amount: number, onResponse: (status: number) => void) => Promise<autocannon.Result>,
) {
  let accepted = 0;
  let requests = 0;
  const failed: Record<string, number> = {};
  const count = (status: number) => {
    if (status === 200) accepted++;
    else failed[status] = (failed[status] ?? 0) + 1;
  };
  for (let round = 0; round < 20 && accepted < wanted; round++) {
    const result = await run(wanted - accepted, count);
    requests += result.requests.sent;
    if (result.timeouts) failed.timeout = (failed.timeout ?? 0) + result.timeouts;
    if (result.errors > result.timeouts) failed.error = (failed.error ?? 0) + result.errors - result.timeouts;
  }
  if (accepted < wanted)
    throw new Error(`only ${accepted} of ${wanted} requests were answered 200: ${JSON.stringify(failed)}`);
  return { requests, accepted, failed };
}
