/**
 * A load generator in a process of its own (issue 24 measured "autocannon in its own process"):
 * the client's JSON building and autocannon's bookkeeping then cost the server's process nothing,
 * and a bench that measures latency beside the load (bench:read's second phase) is not slowed
 * by the load's own event loop.
 *
 *   node --import tsx scripts/bench/load-child.ts --url U --key K [--kind events|otlp]
 *        [--per-call 100] [--connections 50] [--seconds 20] [--warmup 3]
 *
 * `events`: create_events calls of `--per-call` events (B1: 100, B2: 1) to `--connections` new
 * sessions, scripts/load.ts's bodies; `otlp`: B7's protobuf bodies to /v1/traces. Prints one JSON
 * line, the run's LoadResult ({"requests", "rps", "p50", "p99", "non2xx", "errors", "statuses"};
 * for otlp {"spansPerS", "requests", "p99", "failed"}). `--seconds 0`: events until SIGTERM (an
 * hour at most), the rate over the time it ran: for a bench that measures beside the load for as
 * long as its figures take (runLoadChild's stop()).
 */
import { spawn } from "node:child_process";
import { parseArgs } from "node:util";
import type { Server } from "../load.ts";

export interface LoadChildOptions {
  url: string;
  key: string;
  kind: "events" | "otlp";
  perCall: number;
  connections: number;
  seconds: number;
  warmup: number;
}

/** A positive whole number from an argument, or a clear error naming the flag. */
function whole(value: string, flag: string, min: number) {
  const n = Number(value);
  if (!Number.isInteger(n) || n < min) throw new Error(`--${flag} must be a whole number ≥ ${min}, not "${value}"`);
  return n;
}

export function parseLoadArgs(args: string[]): LoadChildOptions {
  const { values } = parseArgs({
    args,
    options: {
      url: { type: "string" },
      key: { type: "string" },
      kind: { type: "string", default: "events" },
      "per-call": { type: "string", default: "100" },
      connections: { type: "string", default: "50" },
      seconds: { type: "string", default: "20" },
      warmup: { type: "string", default: "3" },
    },
    strict: true,
  });
  if (!values.url) throw new Error("--url is required (the server's base URL)");
  if (!values.key) throw new Error("--key is required (the server's API key)");
  if (values.kind === "otlp" && values.seconds === "0")
    throw new Error("--seconds 0 (until stopped) is for --kind events");
  if (values.kind !== "events" && values.kind !== "otlp")
    throw new Error(`--kind is events or otlp, not "${values.kind}"`);
  return {
    url: values.url,
    key: values.key,
    kind: values.kind,
    perCall: whole(values["per-call"], "per-call", 1),
    connections: whole(values.connections, "connections", 1),
    seconds: whole(values.seconds, "seconds", 0),
    warmup: whole(values.warmup, "warmup", 0),
  };
}

/** The arguments that make this script run `o` (parseLoadArgs's inverse). */
export function loadArgs(o: LoadChildOptions): string[] {
  return [
    ...["--url", o.url, "--key", o.key, "--kind", o.kind, "--per-call", String(o.perCall)],
    ...["--connections", String(o.connections), "--seconds", String(o.seconds), "--warmup", String(o.warmup)],
  ];
}

/**
 * Runs the load generator in a child process: `result` resolves with its JSON line once it exits;
 * `stop()` ends a run of `seconds: 0` (SIGTERM: the child stops autocannon and still prints its
 * figures). `root` is the checkout whose script runs (this one, so that both sides of bench
 * --against get the same client).
 */
export function runLoadChild<T = Record<string, number>>(o: LoadChildOptions, root: string) {
  const child = spawn(process.execPath, ["--import", "tsx", "scripts/bench/load-child.ts", ...loadArgs(o)], {
    cwd: root,
    stdio: ["ignore", "pipe", "inherit"],
  });
  const kill = () => child.kill("SIGKILL");
  process.once("exit", kill);
  let out = "";
  child.stdout.setEncoding("utf8").on("data", (chunk: string) => {
    out += chunk;
  });
  const result = new Promise<T>((resolve, reject) => {
    child.once("exit", (code) => {
      process.off("exit", kill);
      const last = out.trim().split("\n").pop() ?? "";
      if (code !== 0) return reject(new Error(`the load generator exited with ${code}: ${out.slice(-500)}`));
      try {
        resolve(JSON.parse(last) as T);
      } catch {
        reject(new Error(`the load generator printed no result: ${out.slice(-500)}`));
      }
    });
  });
  return { result, stop: () => child.kill("SIGTERM") };
}

async function main() {
  const o = parseLoadArgs(process.argv.slice(2));
  // Only the url and the key of a Server are used by the load functions.
  const server = { url: o.url, key: o.key } as Server;
  if (o.kind === "otlp") {
    const { otlpIngest } = await import("./otlp.ts");
    const run = await otlpIngest(server, { connections: o.connections, seconds: o.seconds, warmup: o.warmup });
    process.stdout.write(`${JSON.stringify(run)}\n`);
    return;
  }
  const { ingest, openSessions } = await import("../load.ts");
  const stopped = new AbortController();
  if (o.seconds === 0) process.once("SIGTERM", () => stopped.abort());
  const jwts = await openSessions(server, o.connections);
  const run = await ingest(server, jwts, {
    connections: o.connections,
    seconds: o.seconds === 0 ? 3600 : o.seconds,
    perCall: o.perCall,
    warmup: o.warmup,
    ...(o.seconds === 0 ? { signal: stopped.signal } : {}),
  });
  process.stdout.write(`${JSON.stringify(run)}\n`);
}

if (import.meta.url === `file://${process.argv[1]}`) await main();
