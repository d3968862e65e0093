/**
 * What the load scripts share: agentmon started as a user starts it (`npm start`'s command
 * on a file database in a fresh temporary folder), sessions to send to, realistic event batches
 * with unique ids, autocannon runs, and the server's resident memory.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { randomUUID } from "node:crypto";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import autocannon from "autocannon";

export const ROOT = new URL("..", import.meta.url).pathname;

/** The arguments `npm start` gives node (its node flags, then bin/agentmon.js serve) in the checkout at `root`. */
export const startArgs = (root: string): string[] =>
  JSON.parse(readFileSync(join(root, "package.json"), "utf8"))
    .scripts.start.split(" ")
    .slice(1);

/** This checkout's `npm start` arguments. */
export const START_ARGS: string[] = startArgs(ROOT);

export interface Server {
  url: string;
  /** Where OTLP/gRPC is served (host:port), when AGENTMON_OTLP_GRPC_PORT was set. */
  grpc?: string | undefined;
  key: string;
  child: ChildProcess;
  dir: string;
  /** Resident set size of the server process, in bytes (Linux /proc). */
  rss(): number;
  stop(): Promise<void>;
}

/**
 * With AGENTMON_BENCH_CPU_PROFILE=DIR, every server a benchmark starts writes a V8 CPU profile of
 * each of its threads into DIR when it stops (node --cpu-prof; open them in Chrome's DevTools).
 * The flag changes what is measured (decision 039: a start without cached code), so the figures of
 * such a run are not to be compared with others.
 */
const profiling = (): string[] => {
  const dir = process.env.AGENTMON_BENCH_CPU_PROFILE;
  return dir ? ["--cpu-prof", `--cpu-prof-dir=${dir}`] : [];
};

/**
 * Starts `agentmon serve` on a new database file and waits until it listens; from another
 * checkout of agentmon when `root` is given (bench --against).
 */
export async function startAgentmon(env: Record<string, string> = {}, root = ROOT): Promise<Server> {
  const dir = mkdtempSync(join(tmpdir(), "agentmon-load-"));
  const key = env.AGENTMON_API_KEY ?? randomUUID();
  const clean = Object.fromEntries(Object.entries(process.env).filter(([name]) => !/^(AGENTMON_|PORT$)/.test(name)));
  const child = spawn(process.execPath, [...profiling(), ...(root === ROOT ? START_ARGS : startArgs(root))], {
    cwd: root,
    env: {
      ...clean,
      PORT: "0",
      AGENTMON_DB: join(dir, "agentmon.db"),
      AGENTMON_API_KEY: key,
      AGENTMON_LOG_LEVEL: "warn",
      ...env,
    },
    stdio: ["ignore", "pipe", "inherit"],
  });
  // A script that dies half-way must not leave a server behind.
  const kill = () => child.kill("SIGKILL");
  process.once("exit", kill);
  child.once("exit", () => process.off("exit", kill));
  let out = "";
  const url = await new Promise<string>((resolve, reject) => {
    child.stdout?.setEncoding("utf8").on("data", (chunk: string) => {
      out += chunk;
      const match = /agentmon: listening on (\S+)/.exec(out);
      if (match?.[1]) resolve(match[1]);
    });
    child.once("exit", (code) => reject(new Error(`agentmon exited with ${code} before listening:\n${out}`)));
  });
  return {
    url,
    grpc: /agentmon: OTLP\/gRPC on http:\/\/(\S+)/.exec(out)?.[1],
    key,
    child,
    dir,
    rss: () => {
      const status = readFileSync(`/proc/${child.pid}/status`, "utf8");
      return Number(/VmRSS:\s+(\d+) kB/.exec(status)?.[1] ?? 0) * 1024;
    },
    stop: async () => {
      if (child.exitCode === null) {
        const exited = new Promise((resolve) => child.once("exit", resolve));
        child.kill("SIGTERM");
        await exited;
      }
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

async function postJson(url: string, body: unknown, headers: Record<string, string>) {
  const res = await fetch(url, {
    method: "POST",
    headers: { "content-type": "application/json", ...headers },
    body: JSON.stringify(body),
  });
  if (res.status !== 200) throw new Error(`${url} answered ${res.status}: ${await res.text()}`);
  return (await res.json()) as Record<string, unknown>;
}

/** Opens `n` sessions and answers their JWTs. */
export async function openSessions(server: Server, n: number): Promise<string[]> {
  const jwts: string[] = [];
  for (let i = 0; i < n; i++) {
    const body = { session: { id: randomUUID(), tags: ["load"], host_env: { OS: { OS: "Linux" } } } };
    const answer = await postJson(`${server.url}/v2/create_session`, body, { "x-agentmon-api-key": server.key });
    jwts.push(String(answer.jwt));
  }
  return jwts;
}

const PROMPT = [
  { role: "system", content: "You are a careful assistant that answers questions about the weather. ".repeat(4) },
  {
    role: "user",
    content: "What will the weather be like in Lisbon tomorrow afternoon, and should I bring a coat? ".repeat(6),
  },
];

let sequence = 0;

/**
 * `n` realistic events with unique ids: llm events with a message-array prompt of about 1 KB,
 * mixed with tool events (one in four).
 */
export function eventBatch(n: number): { events: Record<string, unknown>[] } {
  // Distinct microsecond timestamps, as a real client's events have.
  const millis = new Date().toISOString().slice(0, 23);
  const events = Array.from({ length: n }, (_, i) => {
    const id = `${process.pid}-${++sequence}`;
    const now = `${millis}${String(sequence % 1000).padStart(3, "0")}Z`;
    return i % 4 === 3
      ? {
          id,
          type: "tool",
          name: "get_weather",
          input: { city: "Lisbon", day: "tomorrow" },
          output: { temp_c: 17, sky: "clouds" },
          init_timestamp: now,
          end_timestamp: now,
        }
      : {
          id,
          type: "llm",
          model: "gpt-4o-mini",
          prompt: PROMPT,
          completion: { role: "assistant", content: "Mild and cloudy, around 17 °C; a light coat is enough." },
          prompt_tokens: 212,
          completion_tokens: 18,
          init_timestamp: now,
          end_timestamp: now,
        };
  });
  return { events };
}

/**
 * The JSON text of `eventBatch(n)`, made fast: the batch is serialized once with placeholders,
 * and each call only swaps in a fresh id prefix and the current millisecond. Building and
 * serializing 100 events per request cost the load generator (on the same 2 cores) more CPU than
 * it is worth measuring.
 */
export function batchBody(n: number): () => string {
  const template = JSON.stringify({
    events: eventBatch(n).events.map((event, i) => ({
      ...event,
      id: `@ID@-${i}`,
      init_timestamp: `@MS@${String(i % 1000).padStart(3, "0")}Z`,
      end_timestamp: `@MS@${String(i % 1000).padStart(3, "0")}Z`,
    })),
  }).split("@ID@");
  return () => {
    const body = template.join(`${process.pid}-${++sequence}`);
    return body.split("@MS@").join(new Date().toISOString().slice(0, 23));
  };
}

export interface LoadResult {
  requests: number;
  /** Requests per second over the run. */
  rps: number;
  p50: number;
  p99: number;
  non2xx: number;
  /** Requests without an answer: connection errors and timeouts. */
  errors: number;
  /** Of the errors, those that got no answer within autocannon's 10 s. */
  timeouts?: number;
  /** Answers by status code (autocannon's statusCodeStats), so that failed calls say why. */
  statuses?: Record<string, number>;
}

/**
 * Runs autocannon against create_events with `perCall` new events per request, spreading the
 * requests over the sessions' JWTs. `rate` caps the total requests per second. With `signal`, the
 * run ends when it is aborted (`seconds` is then only a cap) and the rate is over the time it ran.
 */
export async function ingest(
  server: Server,
  jwts: string[],
  options: {
    connections: number;
    seconds: number;
    perCall: number;
    rate?: number;
    warmup?: number;
    signal?: AbortSignal;
  },
): Promise<LoadResult> {
  let turn = 0;
  const body = batchBody(options.perCall);
  const run = (seconds: number) => {
    // Without a callback autocannon answers its tracker, a thenable that also has stop().
    const instance = autocannon({
      url: `${server.url}/v2/create_events`,
      connections: options.connections,
      duration: seconds,
      ...(options.rate ? { overallRate: options.rate } : {}),
      requests,
    }) as Promise<autocannon.Result> & { stop(): void };
    // Stopping a run that has already ended changes nothing, so the listener may outlive it.
    options.signal?.addEventListener("abort", () => instance.stop(), { once: true });
    return instance;
  };
  const requests: autocannon.Request[] = [
    {
      method: "POST",
      setupRequest: (request) => ({
        ...request,
        headers: { "content-type": "application/json", authorization: `Bearer ${jwts[turn++ % jwts.length]}` },
        body: body(),
      }),
    },
  ];
  // The same load first, not counted: JIT compilation and lazily built validators are B4's
  // concern (cold start), not the steady rate's.
  if (options.warmup && !options.signal?.aborted) await run(options.warmup);
  const started = performance.now();
  const result = await run(options.seconds);
  const seconds = options.signal ? (performance.now() - started) / 1000 : options.seconds;
  return {
    requests: result.requests.total,
    rps: result.requests.total / seconds,
    p50: result.latency.p50,
    p99: result.latency.p99,
    non2xx: result.non2xx,
    // autocannon's errors already count its timeouts (no answer within 10 s): not added twice.
    errors: result.errors,
    timeouts: result.timeouts,
    statuses: Object.fromEntries(
      Object.entries(result.statusCodeStats ?? {}).map(([code, stats]) => [code, stats.count ?? 0]),
    ),
  };
}
