/**
 * Shared by test/otlp.clients.test.ts and its child (test/otlp.clients.child.ts): agentmon on a
 * real port with a reader of the export, a fake OpenAI-compatible server, a diag logger that
 * collects errors, and running the child that drives one GenAI instrumentation of `openai`.
 */
import { spawn } from "node:child_process";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import type { DiagLogger } from "@opentelemetry/api";
import type { Test } from "tap";
import { API_KEY, build } from "./helper.ts";

export const ROOT = new URL("..", import.meta.url).pathname;

/** The answer of the fake server: what the instrumentations must report. */
export const REPLY = "It is sunny in Paris.";
export const RESPONSE_MODEL = "gpt-4o-mini-2024-07-18";
export const QUESTION = "What is the weather in Paris?";
export const SYSTEM = "You are a terse weather assistant.";

export type Export = {
  session: Record<string, any>;
  stats: Record<string, any>;
  agents: Record<string, any>[];
  events: Record<string, any>[];
};

/** A trace id (32 hex digits) as the session id agentmon gives it (T12). */
export const sessionOf = (traceId: string) =>
  `${traceId.slice(0, 8)}-${traceId.slice(8, 12)}-${traceId.slice(12, 16)}-${traceId.slice(16, 20)}-${traceId.slice(20)}`;

/**
 * agentmon listening on 127.0.0.1, closed at teardown. `exported(traceId, ready)` reads the
 * trace's session export until `ready` says it is complete, a bounded number of times (no sleep:
 * each attempt waits for the event loop to turn), and answers the last one read.
 */
export async function agentmon(t: Test) {
  const env = await build(t);
  const base = await env.app.listen({ port: 0, host: "127.0.0.1" });
  const exported = async (traceId: string, ready: (doc: Export) => boolean, attempts = 50) => {
    let doc: Export | undefined;
    for (let i = 0; i < attempts; i++) {
      const res = await env.inject({
        method: "GET",
        url: `/v2/sessions/${sessionOf(traceId)}/export`,
        headers: { "x-agentmon-api-key": API_KEY },
      });
      if (res.statusCode === 200) {
        doc = res.json() as Export;
        if (ready(doc)) return doc;
      }
      await new Promise((resolve) => setImmediate(resolve));
    }
    return doc ?? { session: {}, stats: {}, agents: [], events: [] };
  };
  return { base, env, exported };
}

/** The JSON body of a request. */
async function body(req: IncomingMessage): Promise<Record<string, any>> {
  const parts: Buffer[] = [];
  for await (const part of req) parts.push(part as Buffer);
  return JSON.parse(Buffer.concat(parts).toString("utf8"));
}

function chunk(delta: Record<string, unknown>, finish: string | null) {
  const data = {
    id: "chatcmpl-clients-stream",
    object: "chat.completion.chunk",
    created: 1_795_323_600,
    model: RESPONSE_MODEL,
    choices: [{ index: 0, delta, logprobs: null, finish_reason: finish }],
  };
  return `data: ${JSON.stringify(data)}\n\n`;
}

async function answer(req: IncomingMessage, res: ServerResponse, requests: Record<string, any>[]) {
  if (req.method !== "POST" || req.url !== "/v1/chat/completions") {
    res.writeHead(404, { "content-type": "application/json" }).end('{"error":{"message":"not found"}}');
    return;
  }
  const request = await body(req);
  requests.push(request);
  if (request.stream === true) {
    res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" });
    res.write(chunk({ role: "assistant", content: "" }, null));
    for (const word of REPLY.split(/(?<= )/)) res.write(chunk({ content: word }, null));
    res.write(chunk({}, "stop"));
    res.end("data: [DONE]\n\n");
    return;
  }
  res.writeHead(200, { "content-type": "application/json" }).end(
    JSON.stringify({
      id: "chatcmpl-clients",
      object: "chat.completion",
      created: 1_795_323_600,
      model: RESPONSE_MODEL,
      choices: [
        {
          index: 0,
          message: { role: "assistant", content: REPLY, refusal: null },
          logprobs: null,
          finish_reason: "stop",
        },
      ],
      usage: { prompt_tokens: 57, completion_tokens: 17, total_tokens: 74 },
      system_fingerprint: "fp_clients",
    }),
  );
}

/** A fake OpenAI-compatible server on 127.0.0.1 (`POST /v1/chat/completions`), closed at teardown. */
export async function fakeOpenAI(t: Test) {
  const requests: Record<string, any>[] = [];
  const server = createServer((req, res) => {
    answer(req, res, requests).catch((error: Error) => {
      res.writeHead(500).end(String(error));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  t.teardown(
    () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  );
  const { port } = server.address() as AddressInfo;
  return { url: `http://127.0.0.1:${port}/v1`, requests };
}

/** A diag logger that keeps what is logged at ERROR (and WARN, kept apart) and prints nothing. */
export function collectingLogger() {
  const errors: string[] = [];
  const warnings: string[] = [];
  const text = (args: unknown[]) => args.map((a) => (a instanceof Error ? a.stack : String(a))).join(" ");
  const logger: DiagLogger = {
    error: (...args) => void errors.push(text(args)),
    warn: (...args) => void warnings.push(text(args)),
    info: () => {},
    debug: () => {},
    verbose: () => {},
  };
  return { logger, errors, warnings };
}

export const INSTRUMENTATIONS = ["traceloop", "openinference", "opentelemetry"] as const;
export type Instrumentation = (typeof INSTRUMENTATIONS)[number];

/** What the child prints on its last line. */
export interface ChildReport {
  traceId: string;
  rootSpanId: string;
  plainText: string;
  streamedText: string;
  diagErrors: string[];
  traceResults: number[];
  logResults: number[];
}

/**
 * Runs test/otlp.clients.child.ts for one instrumentation in its own process (its patching of
 * `openai` dies with it); killed at teardown if still running. Answers its report.
 */
export function runChild(t: Test, instrumentation: Instrumentation, agentmonUrl: string, openaiUrl: string) {
  const args = JSON.stringify({ instrumentation, agentmon: agentmonUrl, openai: openaiUrl, key: API_KEY });
  const child = spawn(process.execPath, ["--import", "tsx", "test/otlp.clients.child.ts", args], {
    cwd: ROOT,
    env: { ...process.env, OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT: "true" },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let stdout = "";
  let stderr = "";
  child.stdout.setEncoding("utf8").on("data", (part: string) => {
    stdout += part;
  });
  child.stderr.setEncoding("utf8").on("data", (part: string) => {
    stderr += part;
  });
  const closed = new Promise<number | null>((resolve) => child.once("close", (code) => resolve(code)));
  t.teardown(async () => {
    if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
    await closed;
  });
  return closed.then((code) => {
    const line = stdout.trim().split("\n").at(-1) ?? "";
    if (code !== 0 || !line.startsWith("{")) {
      throw new Error(`the ${instrumentation} child exited ${code}\nstdout: ${stdout}\nstderr: ${stderr}`);
    }
    return { report: JSON.parse(line) as ChildReport, stderr };
  });
}
