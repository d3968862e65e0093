/** B4's measure, shared by `npm run bench` and `npm run bench -- --against REV`. */
import { spawn } from "node:child_process";
import { ROOT } from "../load.ts";

/** This process's environment without agentmon's settings, with `extra` (a fresh server's environment). */
export function agentmonEnv(extra: Record<string, string>) {
  const clean = Object.fromEntries(Object.entries(process.env).filter(([name]) => !/^(AGENTMON_|PORT$)/.test(name)));
  return { ...clean, AGENTMON_LOG_LEVEL: "warn", ...extra };
}

/** Spawn-to-first-200 of POST /v2/create_session, in ms; the process runs in `root`. */
export async function coldStart(
  args: string[],
  env: NodeJS.ProcessEnv,
  body: string,
  headers: Record<string, string>,
  root = ROOT,
) {
  const port = 20_000 + Math.floor(Math.random() * 30_000);
  const started = performance.now();
  const child = spawn(process.execPath, args, { cwd: root, env: { ...env, PORT: String(port) }, stdio: "ignore" });
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
