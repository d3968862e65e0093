/**
 * otlp.md T1-T4 and T8-T10 over HTTP: media types, codings, limits, answers in the request's
 * media type, partial success, google.rpc.Status failures, logs and metrics accepted.
 */
import { deflateSync, gzipSync } from "node:zlib";
import t from "tap";
import { API_KEY, build, MIB } from "./helper.ts";
import { decodeStatus, decodeTraceResponse } from "./otlp.encode.ts";
import { request, SMALL, sendTraces, span, TRACE, TRACE_SESSION } from "./otlp.helpers.ts";

const bearer = { authorization: `Bearer ${API_KEY}` };

t.test("T1: protobuf and JSON, any case, with parameters, on /v1/traces and /v1/traces/", async (t) => {
  const env = await build(t);
  const proto = await sendTraces(env, SMALL, { media: "protobuf" });
  t.equal(proto.statusCode, 200, proto.body);
  t.match(proto.headers["content-type"], /^application\/x-protobuf/);
  t.equal(proto.rawPayload.length, 0, "an empty ExportTraceServiceResponse is zero bytes");

  const json = await sendTraces(env, SMALL, { url: "/v1/traces/" });
  t.equal(json.statusCode, 200, json.body);
  t.match(json.headers["content-type"], /^application\/json/);
  t.strictSame(json.json(), {}, "an empty JSON answer is {}");

  for (const type of ["Application/X-Protobuf", "application/x-protobuf; charset=utf-8"]) {
    const res = await env.inject({
      method: "POST",
      url: "/v1/traces",
      headers: { ...bearer, "content-type": type },
      payload: Buffer.alloc(0),
    });
    t.equal(res.statusCode, 200, `${type} is protobuf`);
  }
  const upper = await env.inject({
    method: "POST",
    url: "/v1/traces",
    headers: { ...bearer, "content-type": "APPLICATION/JSON; charset=UTF-8" },
    payload: "{}",
  });
  t.equal(upper.statusCode, 200, "APPLICATION/JSON is JSON");

  const found = await env.inject({
    method: "GET",
    url: `/v2/sessions/${TRACE_SESSION}`,
    headers: { "x-agentmon-api-key": API_KEY },
  });
  t.equal(found.statusCode, 200, "the trace is a session of the key's project");
});

t.test("T1, T10: other media types are 415 with a JSON google.rpc.Status, nothing stored", async (t) => {
  const env = await build(t);
  for (const type of ["text/plain", "application/protobuf", "application/grpc", "multipart/form-data; boundary=x"]) {
    const res = await env.inject({
      method: "POST",
      url: "/v1/traces",
      headers: { ...bearer, "content-type": type },
      payload: "x",
    });
    t.equal(res.statusCode, 415, type);
    t.match(res.headers["content-type"], /^application\/json/);
    t.match(res.json(), { code: 3, message: /application\/x-protobuf or application\/json/ }, type);
  }
  const none = await env.inject({ method: "POST", url: "/v1/traces", headers: bearer, payload: "x" });
  t.equal(none.statusCode, 415, "no content type");
});

t.test("T2: gzip, deflate and identity; other codings 415; the limit before and after inflation", async (t) => {
  const env = await build(t, { otlpBodyLimit: 64 * 1024 });
  const body = Buffer.from(JSON.stringify(SMALL));
  for (const [coding, payload] of [
    ["gzip", gzipSync(body)],
    ["deflate", deflateSync(body)],
    ["identity", body],
  ] as const) {
    const res = await env.inject({
      method: "POST",
      url: "/v1/traces",
      headers: { ...bearer, "content-type": "application/json", "content-encoding": coding },
      payload,
    });
    t.equal(res.statusCode, 200, `${coding}: ${res.body}`);
  }
  const br = await env.inject({
    method: "POST",
    url: "/v1/traces",
    headers: { ...bearer, "content-type": "application/json", "content-encoding": "br" },
    payload: body,
  });
  t.equal(br.statusCode, 415, "br is not supported");
  t.match(br.json(), { code: 3, message: /Content-Encoding "br"/ });

  // A gzip bomb: 1 MiB of zeros inflates past the 64 KiB limit; the answer is 413, nothing stored.
  const bomb = gzipSync(
    Buffer.concat([Buffer.from('{"resourceSpans":[],"x":"'), Buffer.alloc(MIB, 0x30), Buffer.from('"}')]),
  );
  t.ok(bomb.length < 64 * 1024, "the bomb itself is under the limit");
  const res = await env.inject({
    method: "POST",
    url: "/v1/traces",
    headers: { ...bearer, "content-type": "application/x-protobuf", "content-encoding": "gzip" },
    payload: bomb,
  });
  t.equal(res.statusCode, 413);
  t.match(res.headers["content-type"], /^application\/x-protobuf/, "in the request's media type");
  t.match(decodeStatus(res.rawPayload), { code: 8, message: /larger than 65536 bytes/ });

  const big = await env.inject({
    method: "POST",
    url: "/v1/traces",
    headers: { ...bearer, "content-type": "application/json" },
    payload: Buffer.alloc(70 * 1024, 0x20),
  });
  t.equal(big.statusCode, 413, "an oversize plain body");
  t.equal(big.json().code, 8);
});

t.test("T2: the OTLP limit is its own: 16 MiB by default, while v2 keeps 5 MiB", async (t) => {
  const env = await build(t);
  const spans = Array.from({ length: 1 }, (_, i) =>
    span(`00f067aa0ba9${String(i).padStart(4, "0")}`, undefined, 0, {
      attributes: [{ key: "big", value: { stringValue: "x".repeat(6 * MIB) } }],
    }),
  );
  const res = await sendTraces(env, request(...spans), { media: "protobuf" });
  t.equal(res.statusCode, 200, "a 6 MiB protobuf body is under the OTLP limit");
});

t.test("T8, T9: spans refused one by one, the rest stored; the answer says how many and why", async (t) => {
  const env = await build(t);
  const good = span("1111111111111111", undefined, 0);
  const bad = [
    { ...span("2222222222222222", undefined, 0), traceId: "00000000000000000000000000000000" },
    { ...span("3333333333333333", undefined, 0), spanId: "0000000000000000" },
    { ...span("4444444444444444", undefined, 0), spanId: "44444444" },
    { ...span("5555555555555555", "55", 0) },
    { ...span("6666666666666666", undefined, 0), startTimeUnixNano: "0" },
    { ...span("7777777777777777", undefined, 0), traceId: "W46fN3dpRyG0pr0gVvLYbA==" },
  ];
  for (const media of ["json", "protobuf"] as const) {
    const body = request(good, ...(media === "json" ? bad : bad.slice(0, 5)));
    const res = await sendTraces(env, body, { media });
    t.equal(res.statusCode, 200, `${media}: a partial success is a 200`);
    const answer = media === "json" ? res.json() : decodeTraceResponse(res.rawPayload);
    const count = media === "json" ? 6 : 5;
    t.equal(Number(answer.partialSuccess.rejectedSpans), count, `${media}: ${count} spans refused`);
    t.match(answer.partialSuccess.errorMessage, /all zeros/, `${media}: the message says why`);
  }
  const session = await env.inject({
    method: "GET",
    url: `/v2/sessions/${TRACE_SESSION}/events`,
    headers: { "x-agentmon-api-key": API_KEY },
  });
  t.strictSame(
    session.json().events.map((e: { id: string }) => e.id),
    ["1111111111111111"],
    "only the good span is stored (once, though sent twice)",
  );
  const empty = await sendTraces(env, { resourceSpans: [] });
  t.strictSame([empty.statusCode, empty.json()], [200, {}], "an empty request is a 200");
  t.ok(TRACE, "trace id used");
});

t.test("T10: undecodable bodies are 400 in the request's media type, and nothing is stored", async (t) => {
  const env = await build(t);
  const cases: [string, string, Buffer | string][] = [
    ["application/x-protobuf", "truncated protobuf", Buffer.from([0x0a, 0x10, 0x0a])],
    ["application/x-protobuf", "a wrong wire type", Buffer.from([0x0f, 0xff, 0xff])],
    ["application/json", "bad JSON", "{"],
    ["application/json", "JSON that is not an object", "[1,2]"],
    ["application/json", "resourceSpans not an array", '{"resourceSpans":"x"}'],
  ];
  for (const [type, why, payload] of cases) {
    const res = await env.inject({
      method: "POST",
      url: "/v1/traces",
      headers: { ...bearer, "content-type": type },
      payload,
    });
    t.equal(res.statusCode, 400, why);
    t.equal(res.headers["retry-after"], undefined, `${why}: not retryable`);
    const status = type === "application/json" ? res.json() : decodeStatus(res.rawPayload);
    t.equal(status.code, 3, `${why}: INVALID_ARGUMENT`);
    t.type(status.message, "string");
  }
  const list = await env.inject({ method: "GET", url: "/v2/sessions", headers: { "x-agentmon-api-key": API_KEY } });
  t.equal(list.json().sessions.length, 0, "nothing was stored");
});

t.test("T3, T4: logs and metrics are accepted; their answers are empty", async (t) => {
  const env = await build(t);
  for (const url of ["/v1/logs", "/v1/metrics"]) {
    const json = await env.inject({
      method: "POST",
      url,
      headers: { ...bearer, "content-type": "application/json" },
      payload: "{}",
    });
    t.strictSame([json.statusCode, json.json()], [200, {}], `${url} JSON`);
    const proto = await env.inject({
      method: "POST",
      url,
      headers: { ...bearer, "content-type": "application/x-protobuf" },
      payload: Buffer.alloc(0),
    });
    t.strictSame([proto.statusCode, proto.rawPayload.length], [200, 0], `${url} protobuf`);
    const anonymous = await env.inject({
      method: "POST",
      url,
      headers: { "content-type": "application/json" },
      payload: "{}",
    });
    t.equal(anonymous.statusCode, 401, `${url} needs a credential`);
    t.strictSame(anonymous.json(), { code: 16, message: "Please check your API key and try again" });
  }
});
