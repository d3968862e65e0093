/**
 * `npm run bench:inflight [-- --calls 1000 --shapes small-events,otlp-protobuf --inflight 192MiB --baseline-calls 0 --client fetch]`:
 * the ceiling on memory, shown for bodies of every shape (docs/decisions/019-inflight-memory.md,
 * 029-inflight-answers-and-cost.md).
 *
 * For each shape, `agentmon serve` is started as a user starts it (`npm start`'s command, a file
 * database in a fresh temporary folder, scripts/load.ts), with the default AGENTMON_INFLIGHT_BYTES
 * unless --inflight says otherwise. Then every call is fired at once, each on a connection of its
 * own: a body of about 5 MiB (the default body limit, less 1 KiB) of that shape:
 *   small-events   create_events, 1000 llm events with prompts of about 5 KB
 *   huge-strings   create_events, 5 tool events with outputs of about 1 MiB
 *   deep-json      create_events, 1000 events whose `output` nests small objects 90 deep
 *   gzip-json      small-events' body gzip-encoded (the 5 MiB are what it inflates to)
 *   otlp-protobuf  /v1/traces, 100 spans with 50 KB attributes, a trace of its own per call
 *   otlp-json      the same as OTLP/JSON
 * Throughout, the server's RSS (/proc/<pid>/status VmRSS) is sampled every 20 ms, its bytes in
 * flight (GET /metrics, agentmon_inflight_bytes) every 100 ms, and GET /healthz is polled on a
 * connection of its own. Then it checks, through the read API (each call's session stats): every
 * call got a status (no EPIPE or ECONNRESET), every 503 with Retry-After; every 200's events all
 * stored, every other call's none; peak RSS under 600 MB.
 *
 * The baseline is the same run without the ceiling (AGENTMON_INFLIGHT_BYTES=1000GiB) with fewer
 * calls (--baseline-calls, default 0), small-events only: without a ceiling 1000 such calls need
 * several GB. Connections are kept alive, as SDK clients keep them.
 * Exit status 1 when a check fails.
 */
import { Agent, type IncomingHttpHeaders, request } from "node:http";
import { parseArgs } from "node:util";
import { gzipSync } from "node:zlib";
import type { KeyValue, Span, TraceRequest } from "../ingest/otlp/types.ts";
import { encodeTraces } from "../test/ingest/decode.helpers.ts";
import { type Server, startAgentmon } from "./load.ts";

const { values } = parseArgs({
  options: {
    calls: { type: "string", default: "1000" },
    "baseline-calls": { type: "string", default: "0" },
    shapes: { type: "string", default: "small-events,huge-strings,deep-json,gzip-json,otlp-protobuf,otlp-json" },
    inflight: { type: "string" },
    /** Who uploads: node:http (a keep-alive agent), or Node's fetch (undici), as many clients send. */
    client: { type: "string", default: "http" },
  },
});
if (values.client !== "http" && values.client !== "fetch") throw new Error("--client is http or fetch");
const CALLS = Number(values.calls);
const BASELINE_CALLS = Number(values["baseline-calls"]);
const BODY_BYTES = 5 * 1024 * 1024 - 1024;
const RSS_CEILING = 600 * 1000 * 1000;
const TOKEN = "bench-inflight-metrics-token";

const log = (line: string) => process.stdout.write(`${line}\n`);
const mb = (bytes: number) => `${(bytes / 1e6).toFixed(0)} MB`;
const mib = (bytes: number) => `${(bytes / 1024 / 1024).toFixed(0)} MiB`;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

interface Answer {
  status: number;
  headers: IncomingHttpHeaders;
  body: string;
  /** The client's error (EPIPE, ECONNRESET…) when no answer came. */
  error?: string;
}

/**
 * Keep-alive connections, as SDK clients use: a 503 sent before the body was read leaves the
 * connection open while the server reads and drops the rest.
 */
const agent = new Agent({ keepAlive: true, maxSockets: Number.POSITIVE_INFINITY });

/** One request, on a connection of its own while the others are busy; its body in pieces (shared buffers). */
/** An upload through Node's fetch (undici): its whole body, its answer, or the error's code. */
async function sendByFetch(url: string, headers: Record<string, string | number>, pieces: Buffer[]): Promise<Answer> {
  try {
    const res = await fetch(url, {
      method: "POST",
      headers: Object.fromEntries(Object.entries(headers).map(([name, value]) => [name, String(value)])),
      body: Buffer.concat(pieces),
    });
    const body = await res.text();
    return { status: res.status, headers: Object.fromEntries(res.headers), body };
  } catch (error) {
    const cause = (error as { cause?: NodeJS.ErrnoException }).cause;
    return { status: 0, headers: {}, body: "", error: cause?.code ?? (error as Error).message };
  }
}

function send(url: string, method: string, headers: Record<string, string | number>, pieces: Buffer[] = []) {
  if (values.client === "fetch" && method === "POST" && pieces.length > 0) return sendByFetch(url, headers, pieces);
  return new Promise<Answer>((resolve) => {
    const length = pieces.reduce((sum, piece) => sum + piece.length, 0);
    const req = request(
      url,
      { method, headers: pieces.length > 0 ? { ...headers, "content-length": length } : headers, agent },
      (res) => {
        let text = "";
        res.setEncoding("utf8").on("data", (chunk: string) => {
          text += chunk;
        });
        res.on("end", () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: text }));
      },
    );
    req.on("error", (error: NodeJS.ErrnoException) =>
      resolve({ status: 0, headers: {}, body: "", error: error.code ?? error.message }),
    );
    for (const piece of pieces) req.write(piece);
    req.end();
  });
}

const words = "What will the weather be like in Lisbon tomorrow afternoon, and should I bring a coat? ";
const text = (n: number) => words.repeat(Math.ceil(n / words.length)).slice(0, n);

/** `make(fill)` as JSON, `fill` chosen so that it is BODY_BYTES long (less what rounding loses, under 4 KiB). */
function sized(make: (fill: number) => unknown): Buffer {
  const empty = Buffer.byteLength(JSON.stringify(make(0)));
  const body = Buffer.from(JSON.stringify(make(BODY_BYTES - empty)));
  if (body.length > BODY_BYTES || body.length < BODY_BYTES - 4096) {
    throw new Error(`the body is ${body.length} bytes, not about ${BODY_BYTES}`);
  }
  return body;
}

/** `n` events (the first `fill` characters spread over them, the rest on the first) made by `event`. */
const spread = (n: number, fill: number, event: (i: number, chars: number) => unknown) => ({
  events: Array.from({ length: n }, (_, i) => event(i, Math.floor(fill / n) + (i === 0 ? fill % n : 0))),
});

const llm = (i: number, chars: number) => ({
  id: `ev-${i}`,
  type: "llm",
  model: "gpt-4o-mini",
  init_timestamp: "2026-11-22T05:09:43.640361Z",
  prompt: [
    { role: "system", content: "You are a careful assistant." },
    { role: "user", content: text(chars) },
  ],
  completion: { role: "assistant", content: "Mild and cloudy, around 17 °C." },
  prompt_tokens: 1200,
  completion_tokens: 12,
});

/** An output nested `depth` objects deep, a short list of small values at each level. */
function nested(depth: number, leaf: string): unknown {
  let value: unknown = { text: leaf };
  for (let d = 0; d < depth; d++) value = { level: d, ok: true, tags: ["a", "b"], next: value };
  return value;
}

const TEMPLATE_TRACE = "abcdefabcdefabcdefabcdefabcdef12";
const traceOf = (i: number) => `ab${i.toString(16).padStart(30, "0")}`;
const uuidOf = (hex: string) =>
  `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;

/** 100 spans of one trace (a root and its children), each with a long attribute, about BODY_BYTES in all. */
function traceRequest(fill: number): TraceRequest {
  const spans: Span[] = Array.from({ length: 100 }, (_, i) => {
    const attributes: KeyValue[] = [
      { key: "gen_ai.tool.name", value: { stringValue: "search" } },
      { key: "output.value", value: { stringValue: text(Math.floor(fill / 100)) } },
    ];
    return {
      traceId: TEMPLATE_TRACE,
      spanId: (i + 1).toString(16).padStart(16, "0"),
      ...(i === 0 ? {} : { parentSpanId: "0000000000000001" }),
      name: `span ${i}`,
      kind: 1,
      startTimeUnixNano: String(1_795_323_600_000_000_000n + BigInt(i) * 1_000_000n),
      endTimeUnixNano: String(1_795_323_600_000_000_000n + BigInt(i + 1) * 1_000_000n),
      attributes,
      events: [],
      links: [],
    } as Span;
  });
  return {
    resourceSpans: [
      {
        resource: { attributes: [{ key: "service.name", value: { stringValue: "bench-inflight" } }] },
        scopeSpans: [{ scope: { name: "bench", version: "1.0.0" }, spans }],
      },
    ],
  };
}

/** `template` cut around every occurrence of `marker`, so that each call's body is the pieces with its own marker between. */
function cutAround(template: Buffer, marker: Buffer): (replacement: Buffer) => Buffer[] {
  const cuts: Buffer[] = [];
  let from = 0;
  for (let at = template.indexOf(marker); at >= 0; at = template.indexOf(marker, at + marker.length)) {
    cuts.push(template.subarray(from, at));
    from = at + marker.length;
  }
  cuts.push(template.subarray(from));
  return (replacement) => cuts.flatMap((cut, i) => (i === 0 ? [cut] : [replacement, cut]));
}

interface Shape {
  name: string;
  path: string;
  headers: Record<string, string>;
  /** Events a call stores when it is taken. */
  events: number;
  /** Through a session's JWT (create_events), else the API key (OTLP, a session per trace). */
  otlp: boolean;
  body(i: number): Buffer[];
}

function shapes(): Shape[] {
  const json = { "content-type": "application/json" };
  const smallEvents = sized((fill) => spread(1000, fill, llm));
  const otlpJson = sized((fill) => traceRequest(fill));
  // Protobuf: about the same size (its framing is smaller than JSON's, the text the same).
  const protobuf = Buffer.from(encodeTraces(traceRequest(BODY_BYTES - 12_000)));
  const protobufFor = cutAround(protobuf, Buffer.from(TEMPLATE_TRACE, "hex"));
  const jsonFor = cutAround(otlpJson, Buffer.from(TEMPLATE_TRACE));
  const all: Shape[] = [
    {
      name: "small-events",
      path: "/v2/create_events",
      headers: json,
      events: 1000,
      otlp: false,
      body: () => [smallEvents],
    },
    (() => {
      const body = sized((fill) =>
        spread(5, fill, (i, chars) => ({ id: `ev-${i}`, type: "tool", name: "search", output: text(chars) })),
      );
      return {
        name: "huge-strings",
        path: "/v2/create_events",
        headers: json,
        events: 5,
        otlp: false,
        body: () => [body],
      };
    })(),
    (() => {
      const n = 1000; // E1's most events in one call; each nests 90 deep, the rest of 5 MiB is their leaves' text
      const body = sized((fill) =>
        spread(n, fill, (i, chars) => ({ id: `ev-${i}`, type: "tool", name: "walk", output: nested(90, text(chars)) })),
      );
      return {
        name: "deep-json",
        path: "/v2/create_events",
        headers: json,
        events: n,
        otlp: false,
        body: () => [body],
      };
    })(),
    (() => {
      const gz = gzipSync(smallEvents);
      return {
        name: "gzip-json",
        path: "/v2/create_events",
        headers: { ...json, "content-encoding": "gzip" },
        events: 1000,
        otlp: false,
        body: () => [gz],
      };
    })(),
    {
      name: "otlp-protobuf",
      path: "/v1/traces",
      headers: { "content-type": "application/x-protobuf" },
      events: 100,
      otlp: true,
      body: (i) => protobufFor(Buffer.from(traceOf(i), "hex")),
    },
    {
      name: "otlp-json",
      path: "/v1/traces",
      headers: json,
      events: 100,
      otlp: true,
      body: (i) => jsonFor(Buffer.from(traceOf(i))),
    },
  ];
  const wanted = String(values.shapes).split(",");
  return all.filter((shape) => wanted.includes(shape.name));
}

const percentile = (sorted: number[], p: number) =>
  sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))] ?? 0;

interface Run {
  shape: string;
  bodyBytes: number;
  calls: number;
  statuses: Record<string, number>;
  clientErrors: Record<string, number>;
  idleRss: number;
  peakRss: number;
  peakInflight: number;
  healthMs: number[];
  healthFailures: number;
  seconds: number;
  wrongStored: number;
  missingRetryAfter: number;
}

async function run(calls: number, inflight: string | undefined, shape: Shape): Promise<Run> {
  const server: Server = await startAgentmon({
    AGENTMON_METRICS_TOKEN: TOKEN,
    ...(inflight === undefined ? {} : { AGENTMON_INFLIGHT_BYTES: inflight }),
  });
  try {
    const key = { "x-agentmon-api-key": server.key };
    // Each call's session: opened first for create_events (its JWT), made by the trace for OTLP.
    const sessions: { id: string; auth: Record<string, string> }[] = [];
    for (let i = 0; i < calls; i += 50) {
      const batch = Array.from({ length: Math.min(50, calls - i) }, (_, j) => i + j);
      if (shape.otlp) {
        for (const n of batch) sessions.push({ id: uuidOf(traceOf(n)), auth: key });
        continue;
      }
      const opened = await Promise.all(
        batch.map(async (n) => {
          const id = `inflight-${n}`;
          const answer = await send(
            `${server.url}/v2/create_session`,
            "POST",
            { "content-type": "application/json", ...key },
            [Buffer.from(JSON.stringify({ session: { id } }))],
          );
          if (answer.status !== 200) throw new Error(`create_session answered ${answer.status}: ${answer.body}`);
          return { id, auth: { authorization: `Bearer ${JSON.parse(answer.body).jwt}` } };
        }),
      );
      sessions.push(...opened);
    }
    const bodies = sessions.map((_, i) => shape.body(i));
    await sleep(1000);
    const idleRss = server.rss();

    let loading = true;
    let peakRss = idleRss;
    let peakInflight = 0;
    const healthMs: number[] = [];
    let healthFailures = 0;
    const rssTimer = setInterval(() => {
      peakRss = Math.max(peakRss, server.rss());
    }, 20);
    const watch = (async () => {
      while (loading) {
        const res = await fetch(`${server.url}/metrics`, { headers: { authorization: `Bearer ${TOKEN}` } });
        const bytes = Number(/^agentmon_inflight_bytes (\d+)$/m.exec(await res.text())?.[1] ?? 0);
        peakInflight = Math.max(peakInflight, bytes);
        await sleep(100);
      }
    })();
    const health = (async () => {
      while (loading) {
        const started = performance.now();
        try {
          const res = await fetch(`${server.url}/healthz`, { signal: AbortSignal.timeout(10_000) });
          await res.arrayBuffer();
          if (res.status === 200) healthMs.push(performance.now() - started);
          else healthFailures++;
        } catch {
          healthFailures++;
        }
        await sleep(100);
      }
    })();

    const started = performance.now();
    const answers = await Promise.all(
      sessions.map(({ auth }, i) =>
        send(`${server.url}${shape.path}`, "POST", { ...shape.headers, ...auth }, bodies[i] ?? []),
      ),
    );
    const seconds = (performance.now() - started) / 1000;
    loading = false;
    clearInterval(rssTimer);
    await Promise.all([watch, health]);

    let wrongStored = 0;
    for (const [i, { id }] of sessions.entries()) {
      const res = await send(`${server.url}/v2/sessions/${id}/stats`, "GET", key);
      const stored = res.status === 200 ? JSON.parse(res.body).stats.events : 0;
      const expected = answers[i]?.status === 200 ? shape.events : 0;
      if (stored !== expected) wrongStored++;
    }
    const count = (keys: string[]) => {
      const counts: Record<string, number> = {};
      for (const k of keys) counts[k] = (counts[k] ?? 0) + 1;
      return counts;
    };
    return {
      shape: shape.name,
      bodyBytes: (bodies[0] ?? []).reduce((sum, piece) => sum + piece.length, 0),
      calls,
      statuses: count(answers.filter((a) => a.error === undefined).map((a) => String(a.status))),
      clientErrors: count(answers.flatMap((a) => (a.error === undefined ? [] : [a.error]))),
      idleRss,
      peakRss,
      peakInflight,
      healthMs: healthMs.sort((a, b) => a - b),
      healthFailures,
      seconds,
      wrongStored,
      missingRetryAfter: answers.filter((a) => a.status === 503 && a.headers["retry-after"] === undefined).length,
    };
  } finally {
    await server.stop();
  }
}

const show = (counts: Record<string, number>) =>
  Object.entries(counts)
    .sort()
    .map(([k, n]) => `${n} × ${k}`)
    .join(", ") || "none";

function report(name: string, r: Run) {
  const h = r.healthMs;
  log(
    `${name}: ${r.calls} concurrent calls of ${(r.bodyBytes / 1024 / 1024).toFixed(2)} MiB in ${r.seconds.toFixed(1)} s`,
  );
  log(`  answered: ${show(r.statuses)}; client errors: ${show(r.clientErrors)}`);
  log(`  RSS: idle ${mb(r.idleRss)}, peak ${mb(r.peakRss)}; peak held in flight ${mib(r.peakInflight)}`);
  log(
    `  /healthz: ${h.length} answered 200, ${r.healthFailures} failed; p50 ${percentile(h, 0.5).toFixed(1)} ms, p99 ${percentile(h, 0.99).toFixed(1)} ms, max ${(h.at(-1) ?? 0).toFixed(1)} ms`,
  );
  log(
    `  stored as answered: ${r.calls - r.wrongStored} of ${r.calls} calls; 503 without Retry-After: ${r.missingRetryAfter}`,
  );
}

const failures: string[] = [];
const rows: Run[] = [];
for (const shape of shapes()) {
  const r = await run(CALLS, values.inflight, shape);
  rows.push(r);
  report(`${shape.name} (AGENTMON_INFLIGHT_BYTES ${values.inflight ?? "default"}, client ${values.client})`, r);
  const errors = Object.values(r.clientErrors).reduce((a, b) => a + b, 0);
  if (errors > 0) failures.push(`${shape.name}: ${errors} calls saw no status (${show(r.clientErrors)})`);
  if (r.missingRetryAfter > 0) failures.push(`${shape.name}: ${r.missingRetryAfter} 503s without Retry-After`);
  if (r.wrongStored > 0) failures.push(`${shape.name}: ${r.wrongStored} calls stored other than their answer says`);
  if (r.peakRss > RSS_CEILING) failures.push(`${shape.name}: peak RSS ${mb(r.peakRss)} is over ${mb(RSS_CEILING)}`);
  if (r.healthFailures > 0 || r.healthMs.length === 0)
    failures.push(`${shape.name}: /healthz did not answer throughout`);
}
log("\n| shape | body | peak RSS | idle RSS | peak held | answered | client errors | stored as answered |");
log("|---|---|---|---|---|---|---|---|");
for (const r of rows) {
  log(
    `| ${r.shape} | ${(r.bodyBytes / 1024 / 1024).toFixed(2)} MiB | ${mb(r.peakRss)} | ${mb(r.idleRss)} | ${mib(r.peakInflight)} | ${show(r.statuses)} | ${show(r.clientErrors)} | ${r.calls - r.wrongStored} of ${r.calls} |`,
  );
}
if (BASELINE_CALLS > 0) {
  const [small] = shapes().filter((shape) => shape.name === "small-events");
  if (small)
    report("baseline (no ceiling: AGENTMON_INFLIGHT_BYTES 1000GiB)", await run(BASELINE_CALLS, "1000GiB", small));
}
for (const failure of failures) log(`FAIL: ${failure}`);
if (failures.length === 0)
  log(
    "PASS: every call got a status, 503s with Retry-After, stored exactly as answered, RSS under 600 MB, /healthz answering",
  );
process.exit(failures.length === 0 ? 0 : 1);
