/**
 * `npm run bench:inflight [-- --calls 1000 --baseline-calls 200 --inflight 192MiB]`: issue 16's
 * ceiling on memory, shown (docs/decisions/019-inflight-memory.md).
 *
 * `agentmon serve` is started as a user starts it (`npm start`'s command, a file database in a
 * fresh temporary folder, scripts/load.ts), with the default AGENTMON_INFLIGHT_BYTES unless
 * --inflight says otherwise. One session per call is opened; then every call is fired at once:
 * a create_events of 1000 events, 5 MiB of JSON (the default body limit, less 1 KiB), each on a
 * connection of its own. Throughout, the server's RSS (/proc/<pid>/status VmRSS) is sampled every
 * 20 ms, its bytes in flight (GET /metrics, agentmon_inflight_bytes) every 100 ms, and GET /healthz
 * is polled on a connection of its own. Then it checks, through the read API (each session's
 * stats): every call answered 200 or 503 with Retry-After; every 200's 1000 events are all
 * stored; every 503's session has none; peak RSS under 600 MB.
 *
 * The baseline is the same run without the ceiling (AGENTMON_INFLIGHT_BYTES=1000GiB) with fewer
 * calls (--baseline-calls; 0 skips it): without a ceiling 1000 such calls need several GB.
 * Connections are kept alive, as SDK clients keep them.
 * Exit status 1 when a check fails.
 */
import { Agent, type IncomingHttpHeaders, request } from "node:http";
import { parseArgs } from "node:util";
import { type Server, startAgentmon } from "./load.ts";

const { values } = parseArgs({
  options: {
    calls: { type: "string", default: "1000" },
    "baseline-calls": { type: "string", default: "200" },
    inflight: { type: "string" },
  },
});
const CALLS = Number(values.calls);
const BASELINE_CALLS = Number(values["baseline-calls"]);
const EVENTS = 1000;
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
}

/**
 * Keep-alive connections, as SDK clients use: a 503 sent before the body was read leaves the
 * connection open while the server reads and drops the rest, so the answer is never lost to a reset.
 * (With `Connection: close`, which `agent: false` sends, Node closes the connection right after
 * the answer, and a client still sending its body may get EPIPE instead of the 503.)
 */
const agent = new Agent({ keepAlive: true, maxSockets: Number.POSITIVE_INFINITY });

/** One request, on a connection of its own while the others are busy. */
/** The sockets that already have the listener below. */
const quietSockets = new WeakSet<object>();

function send(url: string, method: string, headers: Record<string, string | number>, body?: Buffer | string) {
  return new Promise<Answer>((resolve, reject) => {
    let answered = false;
    const req = request(url, { method, headers, agent }, (res) => {
      let text = "";
      res.setEncoding("utf8").on("data", (chunk: string) => {
        text += chunk;
      });
      res.on("end", () => {
        answered = true;
        resolve({ status: res.statusCode ?? 0, headers: res.headers, body: text });
      });
    });
    req.on("error", (error) => {
      if (!answered) reject(error);
    });
    // A server that answered early and then reset the connection while the body was still being
    // written makes the socket emit an error after the request has let go of it (seen once).
    // One listener per socket, however many requests a kept-alive socket carries.
    req.on("socket", (socket) => {
      if (!quietSockets.has(socket)) {
        quietSockets.add(socket);
        socket.on("error", () => {});
      }
    });
    req.end(body);
  });
}

/** 1000 llm events (ids ev-0 … ev-999, so each session's can be counted) in exactly BODY_BYTES of JSON. */
function eventsBody(): Buffer {
  const event = (i: number, content: string) => ({
    id: `ev-${i}`,
    type: "llm",
    model: "gpt-4o-mini",
    init_timestamp: "2026-11-22T05:09:43.640361Z",
    prompt: [
      { role: "system", content: "You are a careful assistant." },
      { role: "user", content },
    ],
    completion: { role: "assistant", content: "Mild and cloudy, around 17 °C." },
    prompt_tokens: 1200,
    completion_tokens: 12,
  });
  const empty = Buffer.byteLength(JSON.stringify({ events: Array.from({ length: EVENTS }, (_, i) => event(i, "")) }));
  const per = Math.floor((BODY_BYTES - empty) / EVENTS);
  const words = "What will the weather be like in Lisbon tomorrow afternoon, and should I bring a coat? ";
  const text = (n: number) => words.repeat(Math.ceil(n / words.length)).slice(0, n);
  const events = Array.from({ length: EVENTS }, (_, i) =>
    event(i, text(i === 0 ? BODY_BYTES - empty - per * 999 : per)),
  );
  const body = Buffer.from(JSON.stringify({ events }));
  if (body.length !== BODY_BYTES) throw new Error(`the body is ${body.length} bytes, not ${BODY_BYTES}`);
  return body;
}

const percentile = (sorted: number[], p: number) =>
  sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))] ?? 0;

interface Run {
  calls: number;
  ok: number;
  refused: number;
  other: string[];
  idleRss: number;
  peakRss: number;
  peakInflight: number;
  healthMs: number[];
  healthFailures: number;
  seconds: number;
  wrongStored: number;
  missingRetryAfter: number;
}

async function run(calls: number, inflight: string | undefined, body: Buffer): Promise<Run> {
  const server: Server = await startAgentmon({
    AGENTMON_METRICS_TOKEN: TOKEN,
    ...(inflight === undefined ? {} : { AGENTMON_INFLIGHT_BYTES: inflight }),
  });
  try {
    const sessions: { id: string; jwt: string }[] = [];
    for (let i = 0; i < calls; i++) {
      const id = `inflight-${i}`;
      const answer = await send(
        `${server.url}/v2/create_session`,
        "POST",
        { "content-type": "application/json", "x-agentmon-api-key": server.key },
        JSON.stringify({ session: { id } }),
      );
      if (answer.status !== 200) throw new Error(`create_session answered ${answer.status}: ${answer.body}`);
      sessions.push({ id, jwt: JSON.parse(answer.body).jwt });
    }
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
      sessions.map(({ jwt }) =>
        send(
          `${server.url}/v2/create_events`,
          "POST",
          { "content-type": "application/json", authorization: `Bearer ${jwt}`, "content-length": body.length },
          body,
        ).catch((error: Error) => ({ status: 0, headers: {}, body: error.message }) as Answer),
      ),
    );
    const seconds = (performance.now() - started) / 1000;
    loading = false;
    clearInterval(rssTimer);
    await Promise.all([watch, health]);

    let wrongStored = 0;
    for (const [i, { id }] of sessions.entries()) {
      const res = await send(`${server.url}/v2/sessions/${id}/stats`, "GET", { "x-agentmon-api-key": server.key });
      const stored = JSON.parse(res.body).stats.events;
      const expected = answers[i]?.status === 200 ? EVENTS : 0;
      if (stored !== expected) wrongStored++;
    }
    const other = answers
      .filter((a) => a.status !== 200 && a.status !== 503)
      .map((a) => `${a.status} ${a.body.slice(0, 120)}`);
    return {
      calls,
      ok: answers.filter((a) => a.status === 200).length,
      refused: answers.filter((a) => a.status === 503).length,
      other,
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

function report(name: string, r: Run) {
  const h = r.healthMs;
  const perMib = r.peakInflight > 0 ? (r.peakRss - r.idleRss) / r.peakInflight : 0;
  log(`${name}: ${r.calls} concurrent calls of ${mib(BODY_BYTES)} in ${r.seconds.toFixed(1)} s`);
  log(
    `  answered: ${r.ok} × 200, ${r.refused} × 503, ${r.other.length} other${r.other.length ? `: ${r.other.slice(0, 3).join("; ")}` : ""}`,
  );
  log(
    `  RSS: idle ${mb(r.idleRss)}, peak ${mb(r.peakRss)}; peak bytes in flight ${mib(r.peakInflight)}; RSS above idle per byte in flight ${perMib.toFixed(2)}`,
  );
  log(
    `  /healthz: ${h.length} answered 200, ${r.healthFailures} failed; p50 ${percentile(h, 0.5).toFixed(1)} ms, p99 ${percentile(h, 0.99).toFixed(1)} ms, max ${(h.at(-1) ?? 0).toFixed(1)} ms`,
  );
  log(
    `  stored as answered: ${r.calls - r.wrongStored} of ${r.calls} sessions; 503 without Retry-After: ${r.missingRetryAfter}`,
  );
}

const body = eventsBody();
const ceiling = await run(CALLS, values.inflight, body);
report(`ceiling (AGENTMON_INFLIGHT_BYTES ${values.inflight ?? "default"})`, ceiling);
const failures: string[] = [];
if (ceiling.other.length > 0) failures.push(`${ceiling.other.length} calls answered neither 200 nor 503`);
if (ceiling.missingRetryAfter > 0) failures.push(`${ceiling.missingRetryAfter} 503s without Retry-After`);
if (ceiling.wrongStored > 0) failures.push(`${ceiling.wrongStored} sessions stored other than their answer says`);
if (ceiling.peakRss > RSS_CEILING) failures.push(`peak RSS ${mb(ceiling.peakRss)} is over ${mb(RSS_CEILING)}`);
if (ceiling.healthFailures > 0 || ceiling.healthMs.length === 0) failures.push("/healthz did not answer throughout");
if (BASELINE_CALLS > 0)
  report("baseline (no ceiling: AGENTMON_INFLIGHT_BYTES 1000GiB)", await run(BASELINE_CALLS, "1000GiB", body));
for (const failure of failures) log(`FAIL: ${failure}`);
if (failures.length === 0)
  log("PASS: every call 200 or 503 with Retry-After, stored exactly as answered, RSS under 600 MB, /healthz answering");
process.exit(failures.length === 0 ? 0 : 1);
