/** Shared by the OTLP tests: small OTLP/JSON requests, and sending them as protobuf or JSON. */
import { gzipSync } from "node:zlib";
import type { LightMyRequestResponse } from "fastify";
import type { Span, TraceRequest } from "../ingest/otlp/types.ts";
import { API_KEY, type TestApp } from "./helper.ts";
import { encodeTraces } from "./otlp.encode.ts";

export const TRACE = "5b8efff798038103d269b633813fc60c";
export const TRACE_SESSION = "5b8efff7-9803-8103-d269-b633813fc60c";
/** 2026-11-22T05:00:00Z in nanoseconds, as OTLP writes times. */
export const NS0 = 1_795_323_600_000_000_000n;

/** A span of TRACE, `startS` seconds after NS0, lasting one second. */
export function span(spanId: string, parent: string | undefined, startS: number, extra: Partial<Span> = {}): Span {
  return {
    traceId: TRACE,
    spanId,
    ...(parent === undefined ? {} : { parentSpanId: parent }),
    name: `span ${spanId}`,
    kind: 1,
    startTimeUnixNano: String(NS0 + BigInt(startS) * 1_000_000_000n),
    endTimeUnixNano: String(NS0 + BigInt(startS + 1) * 1_000_000_000n),
    attributes: [],
    events: [],
    links: [],
    ...extra,
  };
}

/** One resource, one scope, these spans. */
export const request = (...spans: Span[]): TraceRequest => ({
  resourceSpans: [
    {
      resource: { attributes: [{ key: "service.name", value: { stringValue: "test-agent" } }] },
      scopeSpans: [{ scope: { name: "test", version: "1.0.0" }, spans }],
    },
  ],
});

/** A root and an llm child: the smallest trace worth storing. */
export const SMALL = request(
  span("00f067aa0ba902b7", undefined, 0),
  span("00f067aa0ba902b8", "00f067aa0ba902b7", 1, {
    attributes: [
      { key: "gen_ai.request.model", value: { stringValue: "gpt-4o-mini" } },
      { key: "gen_ai.usage.input_tokens", value: { intValue: "57" } },
      { key: "gen_ai.usage.output_tokens", value: { intValue: "17" } },
    ],
  }),
);

export type Media = "protobuf" | "json";

/** POSTs an OTLP request to `url`, as protobuf or JSON, optionally gzipped, with these headers. */
export function sendTraces(
  env: TestApp,
  body: TraceRequest,
  options: { media?: Media; gzip?: boolean; headers?: Record<string, string>; url?: string } = {},
): Promise<LightMyRequestResponse> {
  const media = options.media ?? "json";
  let payload: Buffer =
    media === "protobuf" ? Buffer.from(encodeTraces(body)) : Buffer.from(JSON.stringify(body), "utf8");
  if (options.gzip) payload = gzipSync(payload);
  return env.inject({
    method: "POST",
    url: options.url ?? "/v1/traces",
    headers: {
      "content-type": media === "protobuf" ? "application/x-protobuf" : "application/json",
      ...(options.gzip ? { "content-encoding": "gzip" } : {}),
      ...(options.headers ?? { authorization: `Bearer ${API_KEY}` }),
    },
    payload,
  });
}
