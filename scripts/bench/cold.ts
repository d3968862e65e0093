/**
 * B4, cold start: spawn to the first 200 of POST /v2/create_session, through `npm start`'s own
 * command, on a fresh database file (a new folder each spawn, so the schema is created every time)
 * and on `:memory:`, against a bare Fastify server (floor.mjs). The three are spawned in turn, one
 * round after another, so that the machine's drift moves them together. `npm run bench` runs it
 * as B4; `npm run bench:cold [-- --spawns N]` runs it alone.
 */
import { spawn } from "node:child_process";
import { randomUUID } from "node:crypto";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { ROOT, START_ARGS } from "../load.ts";

/**
 * CPU time (user + system, all threads) the process `pid` has used, in ms, from Linux's
 * /proc/<pid>/stat (in clock ticks, 10 ms each): on a machine shared with other loads it moves
 * less than the time on the clock. NaN where there is no /proc.
 */
function cpuMs(pid: number | undefined): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    return (Number(fields[11]) + Number(fields[12])) * 10;
  } catch {
    return Number.NaN;
  }
}

/**
 * Spawn-to-first-200 of POST /v2/create_session, in ms, and the CPU time the server used until then.
 * Ports are drawn below Linux's ephemeral range (32768-60999), where the load generator's and this
 * process's own connections take theirs; a start whose port was taken all the same (the server
 * exits saying so) is made again on another port, its clock started again. A server that exits
 * for any other reason fails the run with what it said.
 */
export async function coldStart(
  args: string[],
  env: NodeJS.ProcessEnv,
  body: string,
  headers: Record<string, string>,
  cwd = ROOT,
): Promise<{ ms: number; cpu: number }> {
  for (let attempt = 1; ; attempt++) {
    const result = await startOnce(args, env, body, headers, cwd);
    if (result !== "port taken") return result;
    if (attempt === 3) throw new Error(`${args.join(" ")}: three ports in a row were taken`);
  }
}

async function startOnce(
  args: string[],
  env: NodeJS.ProcessEnv,
  body: string,
  headers: Record<string, string>,
  cwd: string,
): Promise<{ ms: number; cpu: number } | "port taken"> {
  const port = 20_000 + Math.floor(Math.random() * 12_000);
  const started = performance.now();
  const child = spawn(process.execPath, args, {
    cwd,
    env: { ...env, PORT: String(port) },
    stdio: ["ignore", "ignore", "pipe"],
  });
  let said = "";
  child.stderr?.setEncoding("utf8").on("data", (chunk: string) => {
    said += chunk;
  });
  // Listened for from the spawn on: a server that died before answering is seen, not waited for.
  const closed = new Promise<void>((resolve) => child.once("close", () => resolve()));
  try {
    for (;;) {
      try {
        const res = await fetch(`http://127.0.0.1:${port}/v2/create_session`, {
          method: "POST",
          headers: { "content-type": "application/json", ...headers },
          body,
        });
        if (res.status === 200) return { ms: performance.now() - started, cpu: cpuMs(child.pid) };
      } catch {
        // not listening yet
      }
      if (child.exitCode !== null) {
        await closed; // all it wrote is read
        if (/EADDRINUSE|choose another PORT/.test(said)) return "port taken";
        throw new Error(`${args.join(" ")} exited with ${child.exitCode}: ${said.trim()}`);
      }
      await new Promise((resolve) => setTimeout(resolve, 2));
    }
  } finally {
    if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
    await closed;
  }
}

/** This process's environment without agentmon's settings, with `extra` (a fresh server's environment). */
export function agentmonEnv(extra: Record<string, string>) {
  const clean = Object.fromEntries(Object.entries(process.env).filter(([name]) => !/^(AGENTMON_|PORT$)/.test(name)));
  return { ...clean, AGENTMON_LOG_LEVEL: "warn", ...extra };
}

export const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2
    ? (s[(s.length - 1) / 2] as number)
    : ((s[s.length / 2 - 1] as number) + (s[s.length / 2] as number)) / 2;
};

type Starts<T> = { floor: T; file: T; memory: T; before?: T };

export interface ColdStarts extends Starts<number> {
  /** Medians of the CPU time used until the first 200, in ms. */
  cpu: Starts<number>;
  samples: Starts<{ ms: number; cpu: number }[]>;
}

/**
 * `spawns` rounds of floor, agentmon on a fresh file, agentmon on :memory:; answers the medians.
 * With `before`, the folder of another checkout (built), its agentmon on a fresh file joins each round.
 */
export async function coldStarts(spawns: number, before?: string): Promise<ColdStarts> {
  const key = randomUUID();
  const agentmon = (db: string, cwd = ROOT) =>
    coldStart(
      START_ARGS,
      agentmonEnv({ AGENTMON_DB: db, AGENTMON_API_KEY: key }),
      JSON.stringify({ session: { id: randomUUID() } }),
      { "x-agentmon-api-key": key },
      cwd,
    );
  const fresh = async (cwd = ROOT) => {
    const dir = mkdtempSync(join(tmpdir(), "agentmon-cold-"));
    try {
      return await agentmon(join(dir, "agentmon.db"), cwd);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  };
  // One start unmeasured first: it builds dist/ if it is stale, and warms the page cache.
  await agentmon(":memory:");
  if (before !== undefined) await agentmon(":memory:", before);
  const samples: ColdStarts["samples"] = { floor: [], file: [], memory: [], ...(before ? { before: [] } : {}) };
  for (let i = 0; i < spawns; i++) {
    samples.floor.push(await coldStart(["scripts/bench/floor.mjs"], process.env, "{}", {}));
    samples.file.push(await fresh());
    samples.memory.push(await agentmon(":memory:"));
    if (before !== undefined) samples.before?.push(await fresh(before));
  }
  const ms = (runs: { ms: number }[]) => median(runs.map((run) => run.ms));
  const cpu = (runs: { cpu: number }[]) => median(runs.map((run) => run.cpu));
  const result: ColdStarts = {
    floor: ms(samples.floor),
    file: ms(samples.file),
    memory: ms(samples.memory),
    cpu: { floor: cpu(samples.floor), file: cpu(samples.file), memory: cpu(samples.memory) },
    samples,
  };
  if (samples.before) {
    result.before = ms(samples.before);
    result.cpu.before = cpu(samples.before);
  }
  return result;
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const { values } = parseArgs({ options: { spawns: { type: "string", default: "10" }, before: { type: "string" } } });
  const result = await coldStarts(Math.max(1, Number(values.spawns) || 10), values.before);
  const line = (name: string, which: keyof Starts<number>) =>
    `  ${name.padEnd(22)} ${(result[which] ?? 0).toFixed(0).padStart(5)} ms  (${((result[which] ?? 0) / result.floor).toFixed(2)}× bare Fastify)` +
    `   CPU ${(result.cpu[which] ?? 0).toFixed(0).padStart(4)} ms (${((result.cpu[which] ?? 0) / result.cpu.floor).toFixed(2)}×)`;
  process.stdout.write(`cold start, spawn to first 200 of create_session, median of ${result.samples.floor.length}\n`);
  process.stdout.write(`${line("bare Fastify", "floor")}\n`);
  process.stdout.write(`${line("agentmon, fresh file", "file")}\n`);
  process.stdout.write(`${line("agentmon, :memory:", "memory")}\n`);
  if (result.before !== undefined) process.stdout.write(`${line(`--before, fresh file`, "before")}\n`);
  process.stdout.write(`${JSON.stringify(result.samples)}\n`);
}
