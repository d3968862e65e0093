/**
 * OTLP over gRPC (docs/decisions/028-otlp-grpc.md), with a grpc-js client over a real socket:
 * the three collector services store (and refuse) exactly what their OTLP/HTTP routes do, with
 * the same credentials (T7, 4.6, O3, 4.7 scopes), body limit (T2, gzip included), memory ceiling
 * (decision 019), NUL refusal (decision 017) and partial success (T8); failures carry the status
 * codes of the OTLP/gRPC specification, RetryInfo when the client should retry, and never
 * INTERNAL for bad input; a stop drains a call in flight.
 */
import { connect } from "node:http2";
import * as grpc from "@grpc/grpc-js";
import t, { type Test } from "tap";
import { StorageFault } from "../db/errors.ts";
import type { Store } from "../db/store.ts";
import { hashApiKey, keyPrefix } from "../domain/keys.ts";
import { opentelemetry } from "../generated/otlp.js";
import type { LogsRequest } from "../ingest/otlp/types.ts";
import { API_KEY, build, defaultStore, leaksNothing, UNKNOWN_KEY } from "./helper.ts";
import { encodeLogs, encodeTraces } from "./otlp.encode.ts";
import { BEARER, exported, gatedStore, grpcAgentmon, type Outcome, type Service } from "./otlp.grpc.helpers.ts";
import { request, SMALL, span, TRACE, TRACE_SESSION } from "./otlp.helpers.ts";

const { status } = grpc;
const ROOT = "00f067aa0ba902b7";
const LLM = "00f067aa0ba902b8";

/** A GenAI log record of SMALL's llm span (T3): kept with that span's event. */
const GENAI_LOGS: LogsRequest = {
  resourceLogs: [
    {
      resource: { attributes: [] },
      scopeLogs: [
        {
          scope: { name: "test" },
          logRecords: [
            {
              attributes: [{ key: "gen_ai.system", value: { stringValue: "openai" } }],
              traceId: TRACE,
              spanId: LLM,
              eventName: "gen_ai.user.message",
              body: { kvlistValue: { values: [{ key: "content", value: { stringValue: "What is 2 + 2?" } }] } },
            },
          ],
        },
      ],
    },
  ],
};

/** The HTTP route of each service. */
const ROUTES: Record<Service, string> = { traces: "/v1/traces", logs: "/v1/logs", metrics: "/v1/metrics" };

/** An OTLP/HTTP protobuf request of the same bytes, for the oracle: its status and body. */
async function overHttp(env: Awaited<ReturnType<typeof build>>, service: Service, body: Uint8Array) {
  const res = await env.inject({
    method: "POST",
    url: ROUTES[service],
    headers: { "content-type": "application/x-protobuf", ...BEARER },
    payload: Buffer.from(body),
  });
  return { status: res.statusCode, body: res.rawPayload };
}

/** The gRPC code an OTLP/HTTP status stands for, in these tests' cases. */
const CODE_OF_HTTP: Record<number, number> = { 200: status.OK, 400: status.INVALID_ARGUMENT };

function isRetryable(t: Test, outcome: Outcome, code: number, seconds: number, what: string) {
  t.equal(outcome.code, code, `${what}: ${status[code]} (${outcome.details})`);
  t.equal(outcome.retryAfter, seconds, `${what}: a RetryInfo of ${seconds} s in grpc-status-details-bin`);
  t.ok(leaksNothing(outcome.details), `${what}: nothing internal in the message`);
}

t.test("traces, GenAI logs and metrics over gRPC are stored as their OTLP/HTTP twins are", async (t) => {
  const grpcSide = await grpcAgentmon(t);
  const httpSide = await build(t);
  const { client } = grpcSide;
  const traces = await client.call("traces", encodeTraces(SMALL), BEARER);
  t.equal(traces.code, status.OK, traces.details);
  t.equal(traces.response?.length, 0, "every span stored: the empty ExportTraceServiceResponse");
  const logs = await client.call("logs", encodeLogs(GENAI_LOGS), BEARER);
  t.equal(logs.code, status.OK, logs.details);
  t.equal(logs.response?.length, 0, "the empty ExportLogsServiceResponse");
  const metrics = await client.call("metrics", new Uint8Array(0), BEARER);
  t.equal(metrics.code, status.OK, "metrics are accepted (T4)");
  t.equal(metrics.response?.length, 0, "the empty ExportMetricsServiceResponse");

  // The same bytes over OTLP/HTTP, to a server of their own.
  t.equal((await overHttp(httpSide, "traces", encodeTraces(SMALL))).status, 200);
  t.equal((await overHttp(httpSide, "logs", encodeLogs(GENAI_LOGS))).status, 200);
  const viaGrpc = await exported(grpcSide.env, TRACE_SESSION);
  const viaHttp = await exported(httpSide, TRACE_SESSION);
  t.equal(viaGrpc.status, 200);
  t.strictSame(viaGrpc.body, viaHttp.body, "the read API gives the same session, events and agents");
  const llm = (viaGrpc.body as { events: { id: string; prompt?: unknown }[] }).events.find((e) => e.id === LLM);
  t.match(JSON.stringify(llm?.prompt), /What is 2 \+ 2\?/, "the GenAI log record is kept with its span's event");
});

t.test("T7's credentials from the metadata, 4.7's scopes, 4.6's failed-check limit", async (t) => {
  const { env, client } = await grpcAgentmon(t, { authFailLimit: 4 });
  const token = (
    await env.inject({
      method: "POST",
      url: "/v3/auth/token",
      headers: { "content-type": "application/json" },
      payload: JSON.stringify({ api_key: API_KEY }),
    })
  ).json().token as string;
  const accepted: Record<string, Record<string, string>> = {
    "Bearer <api key>": BEARER,
    "Bearer <T5 token>": { authorization: `Bearer ${token}` },
    "Basic user:key": { authorization: `Basic ${Buffer.from(`user:${API_KEY}`).toString("base64")}` },
    "Basic key:": { authorization: `Basic ${Buffer.from(`${API_KEY}:`).toString("base64")}` },
    "x-agentmon-api-key": { "x-agentmon-api-key": API_KEY },
    "x-agentops-api-key": { "x-agentops-api-key": API_KEY },
  };
  for (const [what, metadata] of Object.entries(accepted)) {
    for (const service of ["traces", "logs", "metrics"] as const) {
      const body = service === "traces" ? encodeTraces(SMALL) : new Uint8Array(0);
      const outcome = await client.call(service, body, metadata);
      t.equal(outcome.code, status.OK, `${service}, ${what}: ${outcome.details}`);
    }
  }

  const readOnly = "44444444-4444-4444-8444-444444444444";
  await env.store.createApiKey(hashApiKey(readOnly), keyPrefix(readOnly), "default", new Date().toISOString(), [
    "read",
  ]);
  const denied = await client.call("traces", encodeTraces(SMALL), { authorization: `Bearer ${readOnly}` });
  t.equal(denied.code, status.PERMISSION_DENIED, `a key without ingest: ${denied.details}`);
  t.equal(denied.retryAfter, undefined, "not retryable");

  const refused: Record<string, Record<string, string>> = {
    "no credential": {},
    "an unknown key": { authorization: `Bearer ${UNKNOWN_KEY}` },
    "a forged token": { authorization: `Bearer ${token.slice(0, -4)}AAAA` },
  };
  for (const [what, metadata] of Object.entries(refused)) {
    const outcome = await client.call("traces", encodeTraces(SMALL), metadata);
    t.equal(outcome.code, status.UNAUTHENTICATED, `${what}: ${outcome.details}`);
    t.equal(outcome.retryAfter, undefined, `${what}: not retryable`);
  }
  // Three failures so far; the fourth reaches the limit, and then the address waits (4.6), even with a good key.
  t.equal((await client.call("logs", new Uint8Array(0), {})).code, status.UNAUTHENTICATED);
  const limited = await client.call("traces", encodeTraces(SMALL), BEARER);
  t.equal(limited.code, status.RESOURCE_EXHAUSTED, `over 4.6's limit: ${limited.details}`);
  t.ok((limited.retryAfter ?? 0) > 0, "with a RetryInfo of the window's rest");
  t.strictSame(limited.detailTypes, ["type.googleapis.com/google.rpc.RetryInfo"], "its one detail");
});

t.test("O3: over the per-key rate, RESOURCE_EXHAUSTED with RetryInfo", async (t) => {
  const { client } = await grpcAgentmon(t, { rateLimit: 1 });
  t.equal((await client.call("metrics", new Uint8Array(0), BEARER)).code, status.OK);
  isRetryable(t, await client.call("traces", encodeTraces(SMALL), BEARER), status.RESOURCE_EXHAUSTED, 60, "O3");
});

/** A seeded generator (mulberry32): the same bytes on every run. */
function random(seed: number) {
  let a = seed;
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let x = Math.imul(a ^ (a >>> 15), 1 | a);
    x = (x + Math.imul(x ^ (x >>> 7), 61 | x)) ^ x;
    return ((x ^ (x >>> 14)) >>> 0) / 4294967296;
  };
}

t.test("bad bodies: gRPC answers what OTLP/HTTP answers the same bytes, never INTERNAL", async (t) => {
  const { env, client } = await grpcAgentmon(t);
  const next = random(27);
  const bodies: [string, Uint8Array][] = [];
  for (let i = 0; i < 60; i++) {
    const bytes = new Uint8Array(Math.floor(next() * 200));
    for (let j = 0; j < bytes.length; j++) bytes[j] = Math.floor(next() * 256);
    bodies.push([`random bytes #${i} (${bytes.length})`, bytes]);
  }
  const whole = encodeTraces(SMALL);
  for (let cut = 1; cut < whole.length; cut += 7) bodies.push([`SMALL cut at ${cut}`, whole.subarray(0, cut)]);
  const logs = encodeLogs(GENAI_LOGS);
  for (let cut = 1; cut < logs.length; cut += 5) bodies.push([`logs cut at ${cut}`, logs.subarray(0, cut)]);
  const seen = new Set<number>();
  for (const [what, body] of bodies) {
    for (const service of ["traces", "logs"] as const) {
      const http = await overHttp(env, service, body);
      const outcome = await client.call(service, body, BEARER);
      seen.add(outcome.code);
      const expected = CODE_OF_HTTP[http.status];
      if (outcome.code !== expected || outcome.code === status.INTERNAL || !leaksNothing(outcome.details)) {
        t.fail(`${service}, ${what}: gRPC ${status[outcome.code]} "${outcome.details}" vs HTTP ${http.status}`);
        continue;
      }
      if (outcome.code === status.OK) {
        t.strictSame(outcome.response, http.body, `${service}, ${what}: the same response`);
      } else {
        t.ok(outcome.details.startsWith("The request body is not a valid"), `${service}, ${what}: T10's message`);
      }
    }
  }
  t.ok(seen.has(status.INVALID_ARGUMENT), "some bodies were refused as INVALID_ARGUMENT");
});

t.test("a NUL anywhere: INVALID_ARGUMENT naming it, nothing stored (decision 017)", async (t) => {
  const { env, client } = await grpcAgentmon(t);
  const nul = request(span(ROOT, undefined, 0, { name: "bad\0name" }));
  const outcome = await client.call("traces", encodeTraces(nul), BEARER);
  t.equal(outcome.code, status.INVALID_ARGUMENT);
  t.match(outcome.details, /U\+0000 \(NUL\) at resourceSpans\[0\]\.scopeSpans\[0\]\.spans\[0\]\.name/);
  t.equal((await exported(env, TRACE_SESSION)).status, 404, "nothing stored");
});

t.test("partial success (T8): ExportTraceServiceResponse.partial_success names the refused spans", async (t) => {
  const { env, client } = await grpcAgentmon(t);
  const mixed = request(span(ROOT, undefined, 0), span("0000000000000000", ROOT, 1), span(LLM, ROOT, 2));
  const outcome = await client.call("traces", encodeTraces(mixed), BEARER);
  t.equal(outcome.code, status.OK);
  const answer = opentelemetry.proto.collector.trace.v1.ExportTraceServiceResponse.decode(
    outcome.response ?? Buffer.alloc(0),
  );
  t.equal(Number(answer.partialSuccess?.rejectedSpans), 1, "one span refused");
  t.match(answer.partialSuccess?.errorMessage, /1 span was refused: .*spanId/);
  const doc = (await exported(env, TRACE_SESSION)).body as { events: { id: string }[] };
  t.strictSame(doc.events.map((e) => e.id).sort(), [ROOT, LLM], "the others are stored");
});

t.test("the body limit (T2), plain and gzip: RESOURCE_EXHAUSTED without RetryInfo", async (t) => {
  const limit = 64 * 1024;
  const { env, client } = await grpcAgentmon(t, { otlpBodyLimit: limit });
  const big = request(span(ROOT, undefined, 0, { name: "x".repeat(limit) }));
  for (const gzip of [false, true]) {
    const outcome = await client.call("traces", encodeTraces(big), BEARER, gzip);
    t.equal(outcome.code, status.RESOURCE_EXHAUSTED, `${gzip ? "gzip, " : ""}over the limit: ${outcome.details}`);
    t.equal(outcome.retryAfter, undefined, "not retryable: the same message would be refused again");
    // The gzip one is a few hundred bytes on the wire: it is refused as it inflates past the limit.
    if (gzip) t.match(outcome.details, /decompresses to a size larger than 65536/);
  }
  t.equal((await exported(env, TRACE_SESSION)).status, 404, "nothing stored");
  const gzipped = await client.call("traces", encodeTraces(SMALL), BEARER, true);
  t.equal(gzipped.code, status.OK, "a gzip message under the limit is read (grpc-encoding: gzip)");
  t.equal((await exported(env, TRACE_SESSION)).status, 200, "and stored");
});

t.test("over the memory ceiling: RESOURCE_EXHAUSTED with RetryInfo, counted in the HTTP routes' budget", async (t) => {
  const gated = gatedStore(await defaultStore(t));
  const { env, client } = await grpcAgentmon(t, { store: gated.store, inflightBytes: 1024 });
  // A call in flight holds its bytes until it is answered (its write waits at the gate) ...
  const first = client.call("traces", encodeTraces(SMALL), BEARER);
  await gated.entered;
  // ... so the next body, over gRPC or over HTTP, does not fit beside it.
  const big = encodeTraces(request(span(ROOT, undefined, 0, { name: "y".repeat(2048) })));
  isRetryable(t, await client.call("traces", big, BEARER), status.RESOURCE_EXHAUSTED, 2, "gRPC, over the ceiling");
  const http = await overHttp(env, "traces", big);
  t.equal(http.status, 503, "HTTP, over the same ceiling");
  gated.open();
  t.equal((await first).code, status.OK, "the call in flight is stored");
  t.equal((await client.call("traces", big, BEARER)).code, status.OK, "once it is answered, the next one fits");
});

t.test("storage unavailable: UNAVAILABLE with RetryInfo, never INTERNAL", async (t) => {
  const store = await defaultStore(t);
  const failing = new Proxy(store, {
    get(target, property, receiver) {
      if (property === "ingestTraces") {
        return async () => {
          throw new StorageFault("unavailable", "the database cannot be reached");
        };
      }
      const value = Reflect.get(target, property, receiver);
      return typeof value === "function" ? value.bind(target) : value;
    },
  }) as Store;
  const { client } = await grpcAgentmon(t, { store: failing });
  const outcome = await client.call("traces", encodeTraces(SMALL), BEARER);
  isRetryable(t, outcome, status.UNAVAILABLE, 5, "storage unavailable");
  t.match(outcome.details, /Storage is unavailable \(the database cannot be reached\); nothing was stored/);
});

t.test("a stop drains the call in flight, then refuses new ones", async (t) => {
  const gated = gatedStore(await defaultStore(t));
  const { env, listener, client } = await grpcAgentmon(t, { store: gated.store });
  const inFlight = client.call("traces", encodeTraces(SMALL), BEARER);
  await gated.entered;
  let closed = false;
  const closing = listener.close(60_000).then(() => {
    closed = true;
  });
  const late = await client.call("metrics", new Uint8Array(0), BEARER);
  t.equal(late.code, status.UNAVAILABLE, `a call after the stop began is refused, retryably: ${late.details}`);
  t.notOk(closed, "the stop waits for the call in flight");
  gated.open();
  t.equal((await inFlight).code, status.OK, "the call in flight is answered OK ...");
  await closing;
  t.ok(closed, "... and then the port is closed");
  t.equal((await exported(env, TRACE_SESSION)).status, 200, "what it sent is stored");
});

t.test("a message whose gzip is corrupt is answered by grpc-js before agentmon reads it", async (t) => {
  const { env, listener } = await grpcAgentmon(t);
  const session = connect(`http://127.0.0.1:${listener.port}`);
  t.teardown(() => session.close());
  const garbage = Buffer.from("this is not gzip at all");
  const frame = Buffer.alloc(5 + garbage.length);
  frame.writeUInt8(1, 0); // compressed
  frame.writeUInt32BE(garbage.length, 1);
  garbage.copy(frame, 5);
  const stream = session.request({
    ":method": "POST",
    ":path": "/opentelemetry.proto.collector.trace.v1.TraceService/Export",
    "content-type": "application/grpc",
    te: "trailers",
    "grpc-encoding": "gzip",
    ...BEARER,
  });
  const trailers = await new Promise<Record<string, unknown>>((resolve) => {
    let headers: Record<string, unknown> = {};
    stream.on("response", (h) => {
      headers = h;
    });
    stream.on("trailers", (h) => resolve({ ...headers, ...h }));
    stream.on("end", () => resolve(headers));
    stream.resume();
    stream.end(frame);
  });
  // gRPC's convention for a message that does not decompress (grpc-js, like grpc core): INTERNAL.
  t.equal(Number(trailers["grpc-status"]), status.INTERNAL, String(trailers["grpc-message"]));
  t.equal(decodeURIComponent(String(trailers["grpc-message"])), "Failed to decompress message", "a fixed message");
  t.equal((await exported(env, TRACE_SESSION)).status, 404, "nothing stored");
});
