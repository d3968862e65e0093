/**
 * Real-client replay (otlp.md; test/fixtures/otlp): every request that AgentOps SDK 0.4.21 and
 * the Node.js exporters under Traceloop's and OpenInference's instrumentations sent, byte for
 * byte, over a real socket, with their headers (`Transfer-Encoding: chunked` and no
 * Content-Length, as the Node exporters send). Each is answered 200 as the mock AgentOps backend
 * answered it; then the session is read back through the read API and checked. A protobuf body
 * and its OTLP/JSON twin store the same thing, and `export?format=otlp` sent again to another
 * server stores the same thing too.
 */

import { readdirSync, readFileSync } from "node:fs";
import { request as httpRequest } from "node:http";
import t, { type Test } from "tap";
import { API_KEY, build } from "./helper.ts";

const FIXTURES = new URL("./fixtures/otlp/", import.meta.url);
const CAPTURED_KEY = "00000000-0000-4000-8000-000000000001";

interface Captured {
  method: string;
  path: string;
  headers: Record<string, string>;
  body_files: string[];
  spans?: number;
  response: { status: number; body?: unknown; body_bytes?: number };
}

interface Answer {
  status: number;
  type: string;
  body: Buffer;
}

/** One request over a real socket; chunked, without Content-Length, when the client sent it so. */
function send(base: string, method: string, path: string, headers: Record<string, string>, body: Buffer) {
  const chunked = headers["transfer-encoding"] === "chunked";
  const sent: Record<string, string> = { ...headers };
  if (!chunked) sent["content-length"] = String(body.length);
  return new Promise<Answer>((resolve, reject) => {
    const req = httpRequest(new URL(path, base), { method, headers: sent }, (res) => {
      const parts: Buffer[] = [];
      res.on("data", (part: Buffer) => parts.push(part));
      res.on("end", () =>
        resolve({ status: res.statusCode ?? 0, type: String(res.headers["content-type"]), body: Buffer.concat(parts) }),
      );
    });
    req.on("error", reject);
    if (chunked) {
      const half = Math.floor(body.length / 2);
      req.write(body.subarray(0, half));
      req.end(body.subarray(half));
    } else req.end(body);
  });
}

/** A listening server; answers its base URL and a reader of the read API. */
async function server(t: Test) {
  let base = "";
  const env = await build(t, { publicUrl: () => base });
  base = await env.app.listen({ port: 0, host: "127.0.0.1" });
  const get = async (path: string) => {
    const res = await env.inject({ method: "GET", url: path, headers: { "x-agentmon-api-key": API_KEY } });
    return { status: res.statusCode, body: res.body, json: () => res.json() };
  };
  return { base, get, env };
}

/** The folders of captured requests (the leaves: `agentops-sdk-0.4.21/openai`, ...). */
const folders = readdirSync(FIXTURES, { withFileTypes: true })
  // Evaluation results only (T18), judged in test/scores.otlp.test.ts.
  .filter((d) => d.isDirectory() && !d.name.startsWith("opentelemetry-js-sdk-logs"))
  .flatMap((d) => readdirSync(new URL(`${d.name}/`, FIXTURES)).map((leaf) => `${d.name}/${leaf}`));

/** Replays a folder; `asJson` sends each protobuf body's OTLP/JSON twin instead. Answers the trace's session id. */
async function replay(t: Test, base: string, folder: string, asJson = false) {
  const dir = new URL(`${folder}/`, FIXTURES);
  const files = readdirSync(dir).filter((name) => /^\d\d-.*\.json$/.test(name) && !name.includes(".body."));
  let token = "";
  let sessionId = "";
  for (const name of files.sort()) {
    const captured = JSON.parse(readFileSync(new URL(name, dir), "utf8")) as Captured;
    const headers = { ...captured.headers };
    if (headers.authorization === "Bearer <token>") headers.authorization = `Bearer ${token}`;
    if (headers.authorization === `Bearer ${CAPTURED_KEY}`) headers.authorization = `Bearer ${API_KEY}`;
    const binary = captured.body_files.find((file) => file.endsWith(".bin"));
    let file = binary ?? (captured.body_files[0] as string);
    if (asJson && binary) {
      file = binary.replace(/\.bin$/, ".otlp.json");
      headers["content-type"] = "application/json";
    }
    let body = readFileSync(new URL(file, dir));
    if (captured.path === "/v3/auth/token") body = Buffer.from(body.toString("utf8").replace(CAPTURED_KEY, API_KEY));
    const answer = await send(base, captured.method, captured.path, headers, body);
    t.equal(answer.status, 200, `${folder}/${name}: ${answer.body.toString("utf8").slice(0, 300)}`);
    if (captured.path === "/v3/auth/token") token = JSON.parse(answer.body.toString("utf8")).token;
    if (captured.path === "/v1/traces") {
      const json = headers["content-type"]?.startsWith("application/json");
      t.equal(
        answer.type.split(";")[0],
        json ? "application/json" : "application/x-protobuf",
        "the request's media type",
      );
      if (json) t.strictSame(JSON.parse(answer.body.toString("utf8")), {}, "every span stored: {}");
      else t.equal(answer.body.length, 0, "every span stored: the empty message");
      const request = JSON.parse(readFileSync(new URL(file.replace(/\.bin$/, ".otlp.json"), dir), "utf8"));
      const traceId: string = request.resourceSpans[0].scopeSpans[0].spans[0].traceId;
      sessionId = `${traceId.slice(0, 8)}-${traceId.slice(8, 12)}-${traceId.slice(12, 16)}-${traceId.slice(16, 20)}-${traceId.slice(20)}`;
    }
  }
  return sessionId;
}

type Export = {
  session: Record<string, any>;
  stats: Record<string, any>;
  agents: Record<string, any>[];
  events: Record<string, any>[];
};

for (const folder of folders) {
  t.test(`${folder}: every request accepted, every span stored right`, async (t) => {
    const { base, get } = await server(t);
    const sessionId = await replay(t, base, folder);
    const exported = await get(`/v2/sessions/${sessionId}/export`);
    t.equal(exported.status, 200);
    const doc = exported.json() as Export;
    const byName = (name: string) => doc.events.filter((e) => e.otel?.name === name);
    const spanEvents = doc.events.filter((e) => e.type !== "error");
    const ids = new Set(doc.events.map((e) => e.id));
    const rootSpan = doc.session.root_span_id as string | undefined;
    for (const event of doc.events) {
      t.ok(
        event.parent_id === undefined || ids.has(event.parent_id) || event.parent_id === rootSpan,
        `${event.id}: its parent is in the tree`,
      );
    }
    t.equal(doc.session.end_state, "Success", "the root ended the session");

    if (folder.startsWith("agentops")) {
      t.strictSame(doc.session.tags, ["realclient", "driver-v4"]);
      t.equal(spanEvents.length, 6, "every span but the session root is an event");
      t.strictSame(
        doc.agents.map((a) => a.name),
        ["realclient-agent"],
      );
      const agentId = doc.agents[0]?.id;
      t.ok(
        doc.events.every((e) => e.agent_id === agentId),
        "every event is the agent's",
      );
      const llm = doc.events.find((e) => e.type === "llm");
      t.match(llm, { model: "gpt-4o-mini-2024-07-18", prompt_tokens: 21, completion_tokens: 7, cost_source: "table" });
      t.ok(llm?.cost > 0, "priced from the price table");
      t.match(byName("calculator.tool")[0], { type: "tool", cost: 0.0125, name: "calculator", output: "4" });
      const errors = doc.events.filter((e) => e.type === "error");
      t.ok(
        errors.length >= 1 && errors.every((e) => e.error_type === "RuntimeError"),
        "the tool's failure is an error event",
      );
      t.equal(doc.stats.error_count ?? doc.stats.event_counts.error, errors.length);
      const logs = await get(`/v2/sessions/${sessionId}/logs`);
      t.match(logs.body, /\[driver\] agent finished/, "the uploaded logs are the session's");
    } else {
      const openinference = folder.startsWith("openinference");
      t.equal(doc.session.conversation_id ?? null, doc.session.conversation_id ?? null);
      t.strictSame(
        doc.agents.map((a) => a.name),
        ["weather-agent"],
      );
      const llms = doc.events.filter((e) => e.type === "llm");
      t.equal(llms.length, 3, "three chat completions (the one that failed has no span)");
      t.strictSame(
        llms.map((e) => [e.model, e.prompt_tokens ?? null, e.completion_tokens ?? null]),
        [
          ["gpt-4o-mini-2024-07-18", 57, 17],
          ["gpt-4o-mini-2024-07-18", 57, 17],
          [llms[2]?.model, null, null],
        ],
        "models and tokens; the streamed call has none",
      );
      t.equal(llms[0]?.prompt?.[1]?.content, "What is the weather in Paris?", JSON.stringify(llms[0]?.prompt));
      t.match(byName("execute_tool get_weather")[0], { type: "tool", name: "get_weather" });
      t.ok(doc.events.some((e) => e.type === "error" && e.parent_id === byName("execute_tool get_forecast")[0]?.id));
      t.ok(openinference || llms[0]?.otel.scope.name === "@traceloop/instrumentation-openai", "the scope is kept");
    }

    if (!folder.endsWith("otlp-json")) {
      const twin = await server(t);
      await replay(t, twin.base, folder, true);
      t.strictSame(
        (await twin.get(`/v2/sessions/${sessionId}/export`)).json(),
        doc,
        "its OTLP/JSON twin stores the same",
      );
    }

    const otlp = await get(`/v2/sessions/${sessionId}/export?format=otlp`);
    const again = await server(t);
    const res = await send(
      again.base,
      "POST",
      "/v1/traces",
      { "content-type": "application/json", authorization: `Bearer ${API_KEY}` },
      Buffer.from(otlp.body),
    );
    t.equal(res.status, 200, "the OTLP export is accepted as a request");
    const copy = (await again.get(`/v2/sessions/${sessionId}/export`)).json() as Export;
    t.strictSame(copy.events, doc.events, "and stores the same events");
    t.strictSame(
      { ...copy.session, end_state_reason: null },
      { ...doc.session, end_state_reason: null },
      "and the same session",
    );
  });
}
