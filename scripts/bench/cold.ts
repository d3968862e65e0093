/**
 * B4, cold start: spawn to the first 200 of POST /v2/create_session, through `npm start`'s own
 * command, on a fresh database file (a new folder each spawn, so the schema is created every time)
 * and on `:memory:`, against a bare Fastify server (floor.mjs). The three are spawned in turn, one
 * round after another, so that the machine's drift moves them together. `npm run bench` runs it
 * as B4; `npm run bench:cold [-- --spawns N]` runs it alone.
 */
import { spawn } from "node:child_process";
import { randomUUID } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { ROOT, START_ARGS } from "../load.ts";

/** Spawn-to-first-200 of POST /v2/create_session, in ms. */
export async function coldStart(
  args: string[],
  env: NodeJS.ProcessEnv,
  body: string,
  headers: Record<string, string>,
): Promise<number> {
  const port = 20_000 + Math.floor(Math.random() * 30_000);
  const started = performance.now();
  const child = spawn(process.execPath, args, { cwd: ROOT, env: { ...env, PORT: String(port) }, stdio: "ignore" });
  try {
    for (;;) {
      try {
        const res = await fetch(`http://127.0.0.1:${port}/v2/create_session`, {
          method: "POST",
          headers: { "content-type": "application/json", ...headers },
          body,
        });
        if (res.status === 200) return performance.now() - started;
      } catch {
        // not listening yet
      }
      if (child.exitCode !== null) throw new Error(`${args.join(" ")} exited with ${child.exitCode}`);
      await new Promise((resolve) => setTimeout(resolve, 2));
    }
  } finally {
    const exited = new Promise((resolve) => child.once("exit", resolve));
    child.kill("SIGKILL");
    await exited;
  }
}

function agentmonEnv(extra: Record<string, string>) {
  const clean = Object.fromEntries(Object.entries(process.env).filter(([name]) => !/^(AGENTMON_|PORT$)/.test(name)));
  return { ...clean, AGENTMON_LOG_LEVEL: "warn", ...extra };
}

export const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2
    ? (s[(s.length - 1) / 2] as number)
    : ((s[s.length / 2 - 1] as number) + (s[s.length / 2] as number)) / 2;
};

export interface ColdStarts {
  /** Medians, in ms. */
  floor: number;
  file: number;
  memory: number;
  samples: { floor: number[]; file: number[]; memory: number[] };
}

/** `spawns` rounds of floor, agentmon on a fresh file, agentmon on :memory:; answers the medians. */
export async function coldStarts(spawns: number): Promise<ColdStarts> {
  const key = randomUUID();
  const agentmon = (db: string) =>
    coldStart(
      START_ARGS,
      agentmonEnv({ AGENTMON_DB: db, AGENTMON_API_KEY: key }),
      JSON.stringify({ session: { id: randomUUID() } }),
      {
        "x-agentmon-api-key": key,
      },
    );
  // One start unmeasured first: it builds dist/ if it is stale, and warms the page cache.
  await agentmon(":memory:");
  const samples = { floor: [] as number[], file: [] as number[], memory: [] as number[] };
  for (let i = 0; i < spawns; i++) {
    samples.floor.push(await coldStart(["scripts/bench/floor.mjs"], process.env, "{}", {}));
    const dir = mkdtempSync(join(tmpdir(), "agentmon-cold-"));
    try {
      samples.file.push(await agentmon(join(dir, "agentmon.db")));
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
    samples.memory.push(await agentmon(":memory:"));
  }
  return { floor: median(samples.floor), file: median(samples.file), memory: median(samples.memory), samples };
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const { values } = parseArgs({ options: { spawns: { type: "string", default: "10" } } });
  const result = await coldStarts(Math.max(1, Number(values.spawns) || 10));
  const line = (name: string, ms: number) =>
    `  ${name.padEnd(22)} ${ms.toFixed(0).padStart(5)} ms  (${(ms / result.floor).toFixed(2)}× bare Fastify)`;
  process.stdout.write(`cold start, spawn to first 200 of create_session, median of ${result.samples.floor.length}\n`);
  process.stdout.write(`${line("bare Fastify", result.floor)}\n`);
  process.stdout.write(`${line("agentmon, fresh file", result.file)}\n`);
  process.stdout.write(`${line("agentmon, :memory:", result.memory)}\n`);
  process.stdout.write(`${JSON.stringify(result.samples)}\n`);
}
