/**
 * T18 (openapi.yaml, decision 037 "OTLP evaluation results"): `gen_ai.evaluation.result` sent
 * by the real OpenTelemetry JS SDKs over real HTTP, as log records (the logs SDK and its OTLP/HTTP
 * exporter) and as span events (the trace exporter), read back through GET /v2/scores as scores
 * of the right span and session; a result before its span; retries; bad records refused one by
 * one with nothing of them kept; another project's trace refused; score configs obeyed.
 */
import { readdirSync, readFileSync } from "node:fs";
import { request as httpRequest } from "node:http";
import * as grpc from "@grpc/grpc-js";
import { context, trace } from "@opentelemetry/api";
import { OTLPLogExporter as GrpcLogExporter } from "@opentelemetry/exporter-logs-otlp-grpc";
import { OTLPLogExporter } from "@opentelemetry/exporter-logs-otlp-http";
import { OTLPTraceExporter } from "@opentelemetry/exporter-trace-otlp-proto";
import { resourceFromAttributes } from "@opentelemetry/resources";
import {
  InMemoryLogRecordExporter,
  LoggerProvider,
  type ReadableLogRecord,
  SimpleLogRecordProcessor,
} from "@opentelemetry/sdk-logs";
import {
  BasicTracerProvider,
  InMemorySpanExporter,
  type ReadableSpan,
  SimpleSpanProcessor,
} from "@opentelemetry/sdk-trace-base";
import t, { type Test } from "tap";
import { keyPrefix } from "../domain/keys.ts";
import { API_KEY, build, OTHER_PROJECT_KEY, type TestApp } from "./helper.ts";
import { grpcAgentmon } from "./otlp.grpc.helpers.ts";

const sessionOf = (traceId: string) =>
  `${traceId.slice(0, 8)}-${traceId.slice(8, 12)}-${traceId.slice(12, 16)}-${traceId.slice(16, 20)}-${traceId.slice(20)}`;

interface Exporter<T> {
  export(items: T[], done: (result: { code: number; error?: Error }) => void): void;
  shutdown(): Promise<void>;
}

/** Exports the items over the exporter's socket; answers the SDK's result code (0: SUCCESS) and error. */
function exportWith<T>(exporter: Exporter<T>, items: T[]) {
  return new Promise<{ code: number; error?: string }>((resolve) => {
    exporter.export(items, (result) =>
      resolve({ code: result.code, ...(result.error ? { error: String(result.error) } : {}) }),
    );
  });
}

/** agentmon on a real port; the SDK's OTLP/HTTP exporters aimed at it with the key. */
async function agentmon(t: Test) {
  const env = await build(t);
  const base = await env.app.listen({ port: 0, host: "127.0.0.1" });
  const headers = { "x-agentmon-api-key": API_KEY };
  const logs = new OTLPLogExporter({ url: `${base}/v1/logs`, headers });
  const traces = new OTLPTraceExporter({ url: `${base}/v1/traces`, headers });
  t.teardown(async () => {
    await logs.shutdown();
    await traces.shutdown();
  });
  return { env, logs, traces };
}

const get = (api: TestApp, url: string, key = API_KEY) =>
  api.inject({ method: "GET", url, headers: { "x-agentmon-api-key": key } });

const scoresOf = async (api: TestApp, query = "", key = API_KEY) => {
  const res = await get(api, `/v2/scores?limit=100${query}`, key);
  return res.json().scores as Record<string, any>[];
};

/** The key id of API_KEY (the scores' author). */
async function keyId(api: TestApp) {
  const keys = await api.store.listApiKeys();
  return keys.find((key) => key.prefix === keyPrefix(API_KEY))?.id;
}

/**
 * A chat span judged by an evaluator through the logs SDK: a numeric result with a label and an
 * explanation, a categorical one, and a failed evaluation (error.type, no value); plus a span
 * event of the older form on a tool span.
 */
function recordRun() {
  const spans = new InMemorySpanExporter();
  const records = new InMemoryLogRecordExporter();
  const resource = resourceFromAttributes({ "service.name": "evaluated-agent" });
  const tracer = new BasicTracerProvider({ resource, spanProcessors: [new SimpleSpanProcessor(spans)] }).getTracer(
    "scores-test",
    "1.0.0",
  );
  const logger = new LoggerProvider({
    resource,
    processors: [new SimpleLogRecordProcessor({ exporter: records })],
  }).getLogger("evaluator", "0.1.0");
  const root = tracer.startSpan("invoke_agent weather", {
    attributes: { "gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "weather-agent" },
  });
  const inRoot = trace.setSpan(context.active(), root);
  const chat = tracer.startSpan(
    "chat gpt-4o-mini",
    { attributes: { "gen_ai.operation.name": "chat", "gen_ai.response.id": "chatcmpl-42" } },
    inRoot,
  );
  chat.end();
  const tool = tracer.startSpan(
    "execute_tool get_weather",
    { attributes: { "gen_ai.tool.name": "get_weather" } },
    inRoot,
  );
  tool.addEvent("gen_ai.evaluation.result", {
    "gen_ai.evaluation.name": "tool_correctness",
    "gen_ai.evaluation.score.value": 1,
    "gen_ai.evaluation.score.label": "correct",
  });
  tool.end();
  root.end();
  const inChat = trace.setSpan(context.active(), chat);
  logger.emit({
    eventName: "gen_ai.evaluation.result",
    attributes: {
      "gen_ai.evaluation.name": "relevance",
      "gen_ai.evaluation.score.value": 0.85,
      "gen_ai.evaluation.score.label": "relevant",
      "gen_ai.evaluation.explanation": "It answers the question asked.",
      "gen_ai.response.id": "chatcmpl-42",
    },
    context: inChat,
  });
  logger.emit({
    eventName: "gen_ai.evaluation.result",
    attributes: { "gen_ai.evaluation.name": "tone", "gen_ai.evaluation.score.label": "polite" },
    context: inChat,
  });
  logger.emit({
    eventName: "gen_ai.evaluation.result",
    attributes: { "gen_ai.evaluation.name": "faithfulness", "error.type": "timeout" },
    context: inChat,
  });
  return {
    spans: spans.getFinishedSpans() as ReadableSpan[],
    records: records.getFinishedLogRecords() as ReadableLogRecord[],
    traceId: root.spanContext().traceId,
    chatId: chat.spanContext().spanId,
    toolId: tool.spanContext().spanId,
  };
}

t.test("the logs SDK's evaluation results: scores of their span, before and after it arrives, once", async (t) => {
  const { env, logs, traces } = await agentmon(t);
  const run = recordRun();
  const sessionId = sessionOf(run.traceId);
  const author = { type: "api_key", id: await keyId(env) };

  // The results first: their span has not arrived.
  t.strictSame(await exportWith(logs, run.records), { code: 0 }, "the exporter's export succeeded");
  const early = await scoresOf(env, `&session_id=${sessionId}`);
  t.equal(early.length, 2, "two results with a value or a label; the failed evaluation makes none");
  const relevance = early.find((s) => s.name === "relevance");
  t.match(relevance, {
    data_type: "numeric",
    value: 0.85,
    session_id: sessionId,
    event_id: run.chatId,
    conversation_id: null,
    source: "eval",
    comment: "It answers the question asked.",
    author,
    response_id: "chatcmpl-42",
    metadata: { "gen_ai.evaluation.score.label": "relevant" },
  });
  t.notOk(
    "gen_ai.response.id" in (relevance?.metadata ?? {}),
    "the response id is the score's response_id, not metadata",
  );
  t.match(
    early.find((s) => s.name === "tone"),
    {
      data_type: "categorical",
      value: "polite",
      event_id: run.chatId,
      comment: null,
    },
  );
  const running = await get(env, `/v2/sessions/${sessionId}`);
  t.equal(running.statusCode, 200, "the trace's session was made by its results");
  t.equal(running.json().session.end_state ?? null, null, "running until its root arrives");

  // The spans follow; one of them carries a result as a span event.
  t.strictSame(await exportWith(traces, run.spans), { code: 0 });
  const all = await scoresOf(env, `&session_id=${sessionId}`);
  t.equal(all.length, 3);
  t.match(
    all.find((s) => s.name === "tool_correctness"),
    {
      data_type: "numeric",
      value: 1,
      event_id: run.toolId,
      session_id: sessionId,
      source: "eval",
      author,
      metadata: { "gen_ai.evaluation.score.label": "correct" },
    },
  );
  const session = (await get(env, `/v2/sessions/${sessionId}`)).json().session;
  t.equal(session.end_state, "Success", "the root ended the session");
  const events = (await get(env, `/v2/sessions/${sessionId}/export`)).json().events as Record<string, any>[];
  t.ok(
    events.some((e) => e.id === run.chatId),
    "the scored span is an event of the session",
  );
  t.strictSame((await scoresOf(env, `&event_id=${run.chatId}`)).map((s) => s.name).sort(), ["relevance", "tone"]);

  // Sent again, both: nothing new (G8), the scores as they were.
  t.strictSame(await exportWith(logs, run.records), { code: 0 });
  t.strictSame(await exportWith(traces, run.spans), { code: 0 });
  t.strictSame(await scoresOf(env, `&session_id=${sessionId}`), all, "a retry makes no second score");
});

/** An OTLP/JSON logs request of the given records, all under one scope. */
const logsBody = (records: Record<string, unknown>[]) => ({
  resourceLogs: [{ resource: { attributes: [] }, scopeLogs: [{ scope: { name: "evaluator" }, logRecords: records }] }],
});

const TRACE = "5b8efff798038103d269b633813fc60c";
const SPAN = "eee19b7ec3c1b174";

const attributes = (values: Record<string, string | number | boolean>) =>
  Object.entries(values).map(([key, value]) => ({
    key,
    value:
      typeof value === "string"
        ? { stringValue: value }
        : typeof value === "boolean"
          ? { boolValue: value }
          : Number.isInteger(value)
            ? { intValue: String(value) }
            : { doubleValue: value },
  }));

const evaluation = (
  values: Record<string, string | number | boolean>,
  ids: { traceId?: string; spanId?: string; time?: string } = {},
) => ({
  timeUnixNano: ids.time ?? "1795323600000000000",
  eventName: "gen_ai.evaluation.result",
  traceId: ids.traceId ?? TRACE,
  spanId: ids.spanId ?? SPAN,
  attributes: attributes(values),
});

const postLogs = (api: TestApp, body: unknown, key = API_KEY) =>
  api.inject({
    method: "POST",
    url: "/v1/logs",
    headers: { "content-type": "application/json", "x-agentmon-api-key": key },
    payload: JSON.stringify(body),
  });

t.test(
  "a result naming only its gen_ai.response.id (no trace) scores the span carrying it, in either order",
  async (t) => {
    const { env, logs, traces } = await agentmon(t);
    const spans = new InMemorySpanExporter();
    const records = new InMemoryLogRecordExporter();
    const resource = resourceFromAttributes({ "service.name": "answering-agent" });
    const tracer = new BasicTracerProvider({ resource, spanProcessors: [new SimpleSpanProcessor(spans)] }).getTracer(
      "scores-test",
    );
    // An evaluator of its own (another process, later): no trace context, only the response id.
    const logger = new LoggerProvider({
      resource: resourceFromAttributes({ "service.name": "offline-evaluator" }),
      processors: [new SimpleLogRecordProcessor({ exporter: records })],
    }).getLogger("evaluator");
    const chat = tracer.startSpan("chat gpt-4o", {
      attributes: {
        "gen_ai.operation.name": "chat",
        "gen_ai.request.model": "gpt-4o",
        "gen_ai.response.id": "chatcmpl-77",
      },
    });
    chat.end();
    const judge = (name: string, value: number) =>
      logger.emit({
        eventName: "gen_ai.evaluation.result",
        attributes: {
          "gen_ai.evaluation.name": name,
          "gen_ai.evaluation.score.value": value,
          "gen_ai.response.id": "chatcmpl-77",
        },
      });
    judge("helpfulness", 0.9);
    const first = records.getFinishedLogRecords() as ReadableLogRecord[];
    t.equal(first[0]?.spanContext, undefined, "the SDK sends the record without a trace");
    const sessionId = sessionOf(chat.spanContext().traceId);

    // The result first: kept, waiting for its span; it makes no session.
    t.strictSame(await exportWith(logs, first), { code: 0 }, "accepted");
    const waiting = await scoresOf(env, "&response_id=chatcmpl-77");
    t.match(waiting, [
      { name: "helpfulness", value: 0.9, session_id: null, event_id: null, response_id: "chatcmpl-77", source: "eval" },
    ]);
    t.equal((await get(env, `/v2/sessions/${sessionId}`)).statusCode, 404, "no session is made for it");

    // The span arrives: every answer that follows shows the score as the span's.
    t.strictSame(await exportWith(traces, spans.getFinishedSpans() as ReadableSpan[]), { code: 0 });
    const resolved = await scoresOf(env, "&response_id=chatcmpl-77");
    t.match(resolved, [{ name: "helpfulness", session_id: sessionId, event_id: chat.spanContext().spanId }]);
    t.strictSame(
      (await scoresOf(env, `&session_id=${sessionId}`)).map((s) => s.name),
      ["helpfulness"],
      "a score of the session",
    );
    const page = (await get(env, `/v2/sessions/${sessionId}`)).json();
    t.strictSame(
      page.scores.map((s: Record<string, unknown>) => [s.name, s.event_id]),
      [["helpfulness", chat.spanContext().spanId]],
      "the session's answer lists it with its span",
    );
    const byModel = await get(env, "/v2/analytics/scores/breakdown?name=helpfulness&by=model");
    t.match(byModel.json().items, [{ key: "gpt-4o", count: 1 }], "score analytics count it with the span's model");

    // A result after its span is resolved at once; retries store nothing twice.
    judge("correctness", 1);
    const all = records.getFinishedLogRecords() as ReadableLogRecord[];
    t.strictSame(await exportWith(logs, all), { code: 0 });
    t.strictSame(await exportWith(logs, all), { code: 0 });
    t.strictSame((await scoresOf(env, `&event_id=${chat.spanContext().spanId}`)).map((s) => s.name).sort(), [
      "correctness",
      "helpfulness",
    ]);

    // The same over POST /v2/scores: response_id alone; not with a conversation.
    const post = (score: Record<string, unknown>) =>
      env.inject({
        method: "POST",
        url: "/v2/scores",
        headers: { "x-agentmon-api-key": API_KEY },
        payload: { scores: [score] },
      });
    const rest = await post({ id: "thumbs-1", name: "thumbs", value: true, response_id: "chatcmpl-77" });
    t.equal(rest.statusCode, 200, rest.body);
    t.match((await get(env, "/v2/scores/thumbs-1")).json().score, {
      session_id: sessionId,
      event_id: chat.spanContext().spanId,
      response_id: "chatcmpl-77",
    });
    const both = await post({ name: "thumbs", value: true, response_id: "chatcmpl-77", conversation_id: "c-1" });
    t.equal(both.statusCode, 400);
    t.match(both.json().details, [{ path: "scores[0].response_id" }]);
    const neither = await post({ name: "thumbs", value: true });
    t.equal(neither.statusCode, 400);
    t.match(neither.json().details, [{ path: "scores[0].session_id", message: /or response_id/ }]);
    const long = await post({ name: "thumbs", value: true, response_id: "r".repeat(501) });
    t.equal(long.statusCode, 400, "a response id longer than 500 characters");
    t.equal((await scoresOf(env)).length, 3, "nothing of the refused calls was stored");
  },
);

t.test(
  "results naming only a response: a bad response id is refused alone; a span id without its trace is ignored",
  async (t) => {
    const api = await build(t);
    const noTrace = { traceId: "", spanId: "" };
    const res = await postLogs(
      api,
      logsBody([
        evaluation(
          { "gen_ai.evaluation.name": "r", "gen_ai.evaluation.score.value": 1, "gen_ai.response.id": "x".repeat(501) },
          noTrace,
        ),
        evaluation(
          { "gen_ai.evaluation.name": "r", "gen_ai.evaluation.score.value": 1, "gen_ai.response.id": 7 },
          noTrace,
        ),
        evaluation(
          { "gen_ai.evaluation.name": "r", "gen_ai.evaluation.score.value": 1 },
          {
            traceId: "00000000000000000000000000000000",
            spanId: SPAN,
          },
        ),
        evaluation(
          { "gen_ai.evaluation.name": "r", "gen_ai.evaluation.score.value": 1, "gen_ai.response.id": "resp-9" },
          {
            traceId: "",
            spanId: SPAN,
          },
        ),
      ]),
    );
    t.equal(res.statusCode, 200);
    t.equal(res.json().partialSuccess?.rejectedLogRecords, "3", res.body);
    t.match(res.json().partialSuccess?.errorMessage, /gen_ai\.response\.id is longer than 500 characters/);
    t.match(res.json().partialSuccess?.errorMessage, /names neither a trace nor a gen_ai\.response\.id/);
    t.match(await scoresOf(api), [{ response_id: "resp-9", session_id: null, event_id: null }], "only the good one");
    t.equal((await scoresOf(api)).length, 1);
  },
);

t.test("bad evaluation records are refused one by one; nothing of them is kept", async (t) => {
  const api = await build(t);
  const lone = "0123456789abcdef0123456789abcdef";
  const res = await postLogs(
    api,
    logsBody([
      evaluation({ "gen_ai.evaluation.name": "relevance", "gen_ai.evaluation.score.value": 0.5 }),
      evaluation({ "gen_ai.evaluation.score.value": 0.5 }, { traceId: lone }),
      evaluation({ "gen_ai.evaluation.name": "relevance" }, { traceId: lone }),
      evaluation({ "gen_ai.evaluation.name": "relevance", "gen_ai.evaluation.score.value": "high" }, { traceId: lone }),
      evaluation({ "gen_ai.evaluation.name": "relevance", "gen_ai.evaluation.score.value": 1 }, { traceId: "" }),
      // An event of the same span that is not an evaluation: kept with its span as before (T3).
      { ...evaluation({ "gen_ai.system": "openai" }), eventName: "gen_ai.user.message" },
    ]),
  );
  t.equal(res.statusCode, 200);
  const answer = res.json();
  t.equal(answer.partialSuccess?.rejectedLogRecords, "4", res.body);
  t.match(answer.partialSuccess?.errorMessage, /4 log records were refused/);
  t.match(answer.partialSuccess?.errorMessage, /has no gen_ai\.evaluation\.name/);
  t.match(answer.partialSuccess?.errorMessage, /neither gen_ai\.evaluation\.score\.value/);
  t.match(answer.partialSuccess?.errorMessage, /"high" is not a finite number/);
  t.match(answer.partialSuccess?.errorMessage, /names neither a trace nor a gen_ai\.response\.id/);
  const scores = await scoresOf(api);
  t.equal(scores.length, 1, "the good record is a score");
  t.match(scores[0], { name: "relevance", value: 0.5, session_id: sessionOf(TRACE), event_id: SPAN });
  t.equal((await get(api, `/v2/sessions/${sessionOf(lone)}`)).statusCode, 404, "the refused records made no session");

  // The same good record again, with a different place in its request: one score still.
  const again = await postLogs(
    api,
    logsBody([
      { ...evaluation({ "gen_ai.system": "openai" }), eventName: "gen_ai.user.message" },
      evaluation({ "gen_ai.evaluation.name": "relevance", "gen_ai.evaluation.score.value": 0.5 }),
    ]),
  );
  t.strictSame(again.json(), {});
  t.equal((await scoresOf(api)).length, 1);
  // The same evaluation at another time is another result.
  await postLogs(
    api,
    logsBody([
      evaluation(
        { "gen_ai.evaluation.name": "relevance", "gen_ai.evaluation.score.value": 0.5 },
        { time: "1795323700000000000" },
      ),
    ]),
  );
  t.equal((await scoresOf(api)).length, 2);
});

t.test("a result naming its trace and no span scores the session; a failed one makes no score", async (t) => {
  const api = await build(t);
  const res = await postLogs(
    api,
    logsBody([
      evaluation(
        {
          "gen_ai.evaluation.name": "task_success",
          "gen_ai.evaluation.score.label": "pass",
          "gen_ai.response.id": "r-1",
        },
        { spanId: "" },
      ),
      evaluation({ "gen_ai.evaluation.name": "relevance", "error.type": "timeout" }),
    ]),
  );
  t.strictSame(res.json(), {}, res.body);
  const scores = await scoresOf(api);
  t.equal(scores.length, 1);
  t.match(scores[0], {
    name: "task_success",
    data_type: "categorical",
    value: "pass",
    session_id: sessionOf(TRACE),
    event_id: null,
    response_id: "r-1",
    metadata: {},
  });
});

t.test("another project's trace is refused, and nothing of the record is kept", async (t) => {
  const api = await build(t);
  const made = await postLogs(
    api,
    logsBody([evaluation({ "gen_ai.evaluation.name": "relevance", "gen_ai.evaluation.score.value": 1 })]),
    OTHER_PROJECT_KEY,
  );
  t.strictSame(made.json(), {}, "the other project's session and score");
  const res = await postLogs(
    api,
    logsBody([
      evaluation({ "gen_ai.evaluation.name": "relevance", "gen_ai.evaluation.score.value": 0 }),
      evaluation(
        { "gen_ai.evaluation.name": "relevance", "gen_ai.evaluation.score.value": 1 },
        { traceId: "1".repeat(32), spanId: "" },
      ),
    ]),
  );
  t.equal(res.json().partialSuccess?.rejectedLogRecords, "1", res.body);
  t.match(res.json().partialSuccess?.errorMessage, /another project \(409\)/);
  const own = await scoresOf(api);
  t.strictSame(
    own.map((s) => s.session_id),
    [sessionOf("1".repeat(32))],
    "only the record of its own trace",
  );
  const theirs = await scoresOf(api, "", OTHER_PROJECT_KEY);
  t.strictSame(
    theirs.map((s) => s.value),
    [1],
    "the other project's score is untouched",
  );
});

t.test("score configs rule evaluation results of their name", async (t) => {
  const api = await build(t);
  const put = (name: string, body: unknown) =>
    api.inject({
      method: "PUT",
      url: `/v2/score-configs/${name}`,
      headers: { "x-agentmon-api-key": API_KEY, "content-type": "application/json" },
      payload: JSON.stringify(body),
    });
  t.equal((await put("relevance", { data_type: "numeric", min: 0, max: 1 })).statusCode, 200);
  t.equal((await put("passed", { data_type: "boolean" })).statusCode, 200);
  t.equal((await put("verdict", { data_type: "categorical", categories: ["right", "wrong"] })).statusCode, 200);
  const res = await postLogs(
    api,
    logsBody([
      evaluation({ "gen_ai.evaluation.name": "relevance", "gen_ai.evaluation.score.value": 5 }),
      evaluation({ "gen_ai.evaluation.name": "passed", "gen_ai.evaluation.score.value": 1 }),
      evaluation({
        "gen_ai.evaluation.name": "verdict",
        "gen_ai.evaluation.score.value": 0.2,
        "gen_ai.evaluation.score.label": "wrong",
      }),
      evaluation({ "gen_ai.evaluation.name": "verdict", "gen_ai.evaluation.score.label": "maybe" }),
    ]),
  );
  t.equal(res.json().partialSuccess?.rejectedLogRecords, "2", res.body);
  t.match(res.json().partialSuccess?.errorMessage, /relevance: value must be between 0 and 1/);
  t.match(res.json().partialSuccess?.errorMessage, /verdict: value must be one of "right", "wrong"/);
  const scores = await scoresOf(api);
  t.match(
    scores.find((s) => s.name === "passed"),
    { data_type: "boolean", value: true },
  );
  t.match(
    scores.find((s) => s.name === "verdict"),
    {
      data_type: "categorical",
      value: "wrong",
      metadata: { "gen_ai.evaluation.score.value": 0.2 },
    },
  );
  t.equal(scores.length, 2);
});

t.test("a bad evaluation span event does not refuse its span: a warning, no score", async (t) => {
  const api = await build(t);
  const span = {
    traceId: TRACE,
    spanId: SPAN,
    name: "chat",
    kind: 1,
    startTimeUnixNano: "1795323600000000000",
    endTimeUnixNano: "1795323601000000000",
    attributes: [],
    events: [
      {
        timeUnixNano: "1795323600500000000",
        name: "gen_ai.evaluation.result",
        attributes: attributes({ "gen_ai.evaluation.score.value": 1 }),
      },
      {
        timeUnixNano: "1795323600600000000",
        name: "gen_ai.evaluation.result",
        attributes: attributes({ "gen_ai.evaluation.name": "ok", "gen_ai.evaluation.score.value": 1 }),
      },
    ],
  };
  const res = await api.inject({
    method: "POST",
    url: "/v1/traces",
    headers: { "content-type": "application/json", "x-agentmon-api-key": API_KEY },
    payload: JSON.stringify({
      resourceSpans: [{ resource: { attributes: [] }, scopeSpans: [{ scope: { name: "x" }, spans: [span] }] }],
    }),
  });
  t.equal(res.statusCode, 200);
  t.equal(res.json().partialSuccess?.rejectedSpans ?? "0", "0", res.body);
  t.match(
    res.json().partialSuccess?.errorMessage,
    /every span was stored; 1 gen_ai\.evaluation\.result span event makes no score/,
  );
  const scores = await scoresOf(api);
  t.strictSame(
    scores.map((s) => [s.name, s.event_id]),
    [["ok", SPAN]],
  );
  const events = (await get(api, `/v2/sessions/${sessionOf(TRACE)}/export`)).json().events as Record<string, any>[];
  t.ok(
    events.some((e) => e.id === SPAN),
    "the span is stored",
  );
});

const FIXTURE = new URL("./fixtures/otlp/opentelemetry-js-sdk-logs-0.223.1/evaluations/", import.meta.url);
const CAPTURED_KEY = "00000000-0000-4000-8000-000000000001";

/** One captured request (of `folder`) sent again over a real socket, chunked as the exporter sent it. */
function replayRequest(base: string, name: string, folder = FIXTURE) {
  const captured = JSON.parse(readFileSync(new URL(name, folder), "utf8"));
  const headers: Record<string, string> = { ...captured.headers };
  if (headers.authorization === `Bearer ${CAPTURED_KEY}`) headers.authorization = `Bearer ${API_KEY}`;
  const body = readFileSync(new URL(captured.body_files[0], folder));
  return new Promise<{ status: number; body: Buffer }>((resolve, reject) => {
    const req = httpRequest(new URL(captured.path, base), { method: captured.method, headers }, (res) => {
      const parts: Buffer[] = [];
      res.on("data", (part: Buffer) => parts.push(part));
      res.on("end", () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(parts) }));
    });
    req.on("error", reject);
    req.end(body);
  });
}

t.test(
  "the recorded wire bytes (JS logs SDK 0.223.1): the results, then their spans, are scores of them",
  async (t) => {
    const env = await build(t);
    const base = await env.app.listen({ port: 0, host: "127.0.0.1" });
    const ids = JSON.parse(readFileSync(new URL("ids.json", FIXTURE), "utf8"));
    const sessionId = sessionOf(ids.traceId);
    const files = readdirSync(FIXTURE)
      .filter((name) => /^\d\d-.*\.json$/.test(name) && !name.includes(".body."))
      .sort();
    t.strictSame(files, ["01-post-v1-logs.json", "02-post-v1-traces.json"]);
    for (const round of ["sent", "sent again"]) {
      for (const name of files) {
        const answer = await replayRequest(base, name);
        t.equal(answer.status, 200, `${round}: ${name}`);
        t.ok(answer.body.length === 0 || answer.body.toString("utf8") === "{}", `${name}: nothing refused`);
      }
      const scores = await scoresOf(env, `&session_id=${sessionId}`);
      t.strictSame(
        scores.map((s) => [s.name, s.data_type, s.value, s.event_id, s.source]).sort(),
        [
          ["relevance", "numeric", 0.85, ids.chat, "eval"],
          ["tone", "categorical", "polite", ids.chat, "eval"],
          ["tool_call_accuracy", "numeric", 1, ids.tool, "eval"],
        ],
        `${round}: three scores, of their spans; the failed evaluation makes none`,
      );
      t.match(
        scores.find((s) => s.name === "relevance"),
        {
          session_id: sessionId,
          comment: "The answer gives the weather in Paris, as asked.",
          response_id: "chatcmpl-evals-1",
          metadata: { "gen_ai.evaluation.score.label": "relevant" },
        },
      );
    }
    const events = (await get(env, `/v2/sessions/${sessionId}/export`)).json().events as Record<string, any>[];
    t.ok(
      [ids.chat, ids.tool].every((id: string) => events.some((e) => e.id === id)),
      "both judged spans are events of the session",
    );
    t.equal((await get(env, `/v2/sessions/${sessionId}`)).json().session.end_state, "Success");
  },
);

t.test("over OTLP/gRPC, the logs SDK's gRPC exporter: the same scores", async (t) => {
  const { env, listener } = await grpcAgentmon(t);
  const metadata = new grpc.Metadata();
  metadata.set("authorization", `Bearer ${API_KEY}`);
  const logs = new GrpcLogExporter({ url: listener.url, metadata });
  t.teardown(() => logs.shutdown());
  const run = recordRun();
  t.strictSame(await exportWith(logs, run.records), { code: 0 });
  t.strictSame(await exportWith(logs, run.records), { code: 0 }, "and again");
  const scores = await scoresOf(env, `&session_id=${sessionOf(run.traceId)}`);
  t.strictSame(scores.map((s) => [s.name, s.value, s.event_id]).sort(), [
    ["relevance", 0.85, run.chatId],
    ["tone", "polite", run.chatId],
  ]);
});

const BY_RESPONSE = new URL(
  "./fixtures/otlp/opentelemetry-js-sdk-logs-0.223.1/evaluations-by-response/",
  import.meta.url,
);

t.test(
  "the recorded wire bytes of an evaluator that knows only the response id: its span's scores, in either order",
  async (t) => {
    const ids = JSON.parse(readFileSync(new URL("ids.json", BY_RESPONSE), "utf8"));
    const sessionId = sessionOf(ids.traceId);
    const files = readdirSync(BY_RESPONSE)
      .filter((name) => /^\d\d-.*\.json$/.test(name) && !name.includes(".body."))
      .sort();
    t.strictSame(files, ["01-post-v1-logs.json", "02-post-v1-traces.json"]);
    const logs = JSON.parse(readFileSync(new URL("01-post-v1-logs.body.json", BY_RESPONSE), "utf8"));
    t.notOk(
      logs.resourceLogs[0].scopeLogs[0].logRecords.some((r: Record<string, unknown>) => r.traceId),
      "the SDK sent the records without a trace",
    );
    for (const order of [files, [...files].reverse()]) {
      const env = await build(t);
      const base = await env.app.listen({ port: 0, host: "127.0.0.1" });
      for (const round of ["sent", "sent again"]) {
        for (const name of order) {
          const answer = await replayRequest(base, name, BY_RESPONSE);
          t.equal(answer.status, 200, `${order.join(", ")}, ${round}: ${name}`);
          t.ok(answer.body.length === 0 || answer.body.toString("utf8") === "{}", `${name}: nothing refused`);
        }
        t.strictSame(
          (await scoresOf(env, "&response_id=chatcmpl-by-response-1"))
            .map((s) => [s.name, s.value, s.session_id, s.event_id, s.response_id, s.source])
            .sort(),
          [
            ["correctness", "right", sessionId, ids.chat, "chatcmpl-by-response-1", "eval"],
            ["helpfulness", 0.9, sessionId, ids.chat, "chatcmpl-by-response-1", "eval"],
          ],
          `${order[0]} first, ${round}: both results are scores of the chat span, once`,
        );
      }
      t.strictSame((await scoresOf(env, `&session_id=${sessionId}`)).map((s) => s.name).sort(), [
        "correctness",
        "helpfulness",
      ]);
    }
  },
);
