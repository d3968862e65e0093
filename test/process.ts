/**
 * `agentmon` as a real child process, for the tests that need one (a real port, a real kill):
 * spawn `node bin/agentmon.js <args>`, read its output, wait for a line or for its exit. A child
 * never outlives its test: teardown kills it and waits for it to be gone, and a test process
 * that exits early kills it too.
 */
import { type ChildProcess, spawn } from "node:child_process";
import type { Test } from "tap";

export const ROOT = new URL("..", import.meta.url).pathname;
export const WAIT_MS = 20_000;

/** The line `serve` prints once it accepts connections; group 1 is the base URL. */
export const LISTENING = /agentmon: listening on (https?:\/\/\S+)/;

export interface Exit {
  code: number | null;
  signal: NodeJS.Signals | null;
}

/** The environment of a child: this one's without any agentmon setting, plus `extra`. */
export function childEnv(extra: Record<string, string>): NodeJS.ProcessEnv {
  const env = Object.fromEntries(
    Object.entries(process.env).filter(([name]) => !/^(AGENTMON_|PORT$|HOST$)/.test(name)),
  );
  return { ...env, ...extra };
}

export interface Agentmon {
  child: ChildProcess;
  stdout(): string;
  stderr(): string;
  /** Both outputs, labelled, for failure messages. */
  describe(): string;
  /** The first match of `pattern` in stdout, waiting at most `ms`. */
  waitFor(pattern: RegExp, ms?: number): Promise<RegExpExecArray>;
  /** The exit code and signal, waiting at most `ms`. */
  exited(ms?: number): Promise<Exit>;
}

const running = (child: ChildProcess) => child.exitCode === null && child.signalCode === null;

/** Spawns `node bin/agentmon.js <args>`; at teardown it is killed (if still running) and awaited. */
export function agentmon(t: Pick<Test, "teardown">, args: string[], env: NodeJS.ProcessEnv): Agentmon {
  const child = spawn(process.execPath, ["bin/agentmon.js", ...args], { cwd: ROOT, env, stdio: "pipe" });
  let stdout = "";
  let stderr = "";
  child.stdout.setEncoding("utf8").on("data", (chunk: string) => {
    stdout += chunk;
  });
  child.stderr.setEncoding("utf8").on("data", (chunk: string) => {
    stderr += chunk;
  });
  const closed = new Promise<Exit>((resolve) => child.once("close", (code, signal) => resolve({ code, signal })));

  // Teardown does not run when the test process itself is made to exit (a tap timeout, a throw
  // at top level); the exit hook covers that, synchronously, as exit hooks must be.
  const killOnExit = () => {
    if (running(child)) child.kill("SIGKILL");
  };
  process.once("exit", killOnExit);
  void closed.then(() => process.off("exit", killOnExit));
  t.teardown(async () => {
    killOnExit();
    await closed;
  });

  const describe = () => `\n--- stdout ---\n${stdout.slice(-4000)}\n--- stderr ---\n${stderr.slice(-4000)}`;

  const waitFor = (pattern: RegExp, ms = WAIT_MS) =>
    new Promise<RegExpExecArray>((resolve, reject) => {
      const check = () => {
        const match = pattern.exec(stdout);
        if (!match) return false;
        done();
        resolve(match);
        return true;
      };
      const onExit = () => {
        if (check()) return;
        done();
        reject(new Error(`agentmon exited before printing ${pattern}${describe()}`));
      };
      const timer = setTimeout(() => {
        done();
        reject(new Error(`agentmon did not print ${pattern} within ${ms} ms${describe()}`));
      }, ms);
      const done = () => {
        clearTimeout(timer);
        child.stdout.off("data", check);
        child.off("close", onExit);
      };
      if (check()) return;
      child.stdout.on("data", check);
      child.once("close", onExit);
    });

  const exited = (ms = WAIT_MS) =>
    new Promise<Exit>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`agentmon did not exit within ${ms} ms${describe()}`)), ms);
      void closed.then((result) => {
        clearTimeout(timer);
        resolve(result);
      });
    });

  return { child, stdout: () => stdout, stderr: () => stderr, describe, waitFor, exited };
}
