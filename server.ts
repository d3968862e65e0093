/**
 * The `agentmon` command: `serve`, `keys create|list|revoke`, `prices check|import`,
 * `projects list|set-retention`, `sessions delete`, `users`, `members`, `audit export`, `export`, `import`, `rebuild` and `vacuum`. This is the only module that
 * reads the environment and the command line (bin/agentmon.js hands them in); everything else
 * gets its settings passed in.
 */
import type { Writable } from "node:stream";
import { parseArgs } from "node:util";
import { audit } from "./cli/audit.ts";
import { ConfigError, FLAG_OPTIONS, loadConfig, type Output, USAGE } from "./cli/config.ts";
import { type ExportFlags, exportCommand, importCommand } from "./cli/export.ts";
import { keys } from "./cli/keys.ts";
import { prices } from "./cli/prices.ts";
import { projects } from "./cli/projects.ts";
import { rebuild } from "./cli/rebuild.ts";
import { serve } from "./cli/serve.ts";
import { type SessionFlags, sessions } from "./cli/sessions.ts";
import { members, type UserFlags, users } from "./cli/users.ts";
import { vacuum } from "./cli/vacuum.ts";

const console_: Output = {
  out: (line) => process.stdout.write(`${line}\n`),
  err: (line) => process.stderr.write(`${line}\n`),
};

/** Runs one command; answers the exit code (serve answers once it listens). */
export async function main(
  argv: string[],
  env: NodeJS.ProcessEnv,
  io: Output = console_,
  stdout: Writable = process.stdout,
): Promise<number> {
  try {
    const options = argv.indexOf("--") === -1 ? argv : argv.slice(0, argv.indexOf("--"));
    if (options.includes("--help") || options.includes("-h")) {
      io.err(USAGE);
      return 0;
    }
    const { values, positionals } = parseArgs({ args: argv, options: FLAG_OPTIONS, allowPositionals: true });
    const flags = values as Record<string, string | undefined>;
    const [command, sub, ...rest] = positionals;
    if (command === "serve") return await serve(loadConfig(env, flags), io);
    if (command === "keys") return await keys(sub, rest, flags, loadConfig(env, flags), io);
    if (command === "prices") return await prices(sub, rest, loadConfig(env, flags), io);
    if (command === "projects") return await projects(sub, rest, loadConfig(env, flags), io);
    if (command === "sessions") return await sessions(sub, values as SessionFlags, loadConfig(env, flags), io);
    if (command === "export") {
      return await exportCommand(values as ExportFlags, loadConfig(env, flags), io, stdout);
    }
    if (command === "import") return await importCommand(sub, values as ExportFlags, loadConfig(env, flags), io);
    if (command === "users") return await users(sub, rest, values as UserFlags, loadConfig(env, flags), io);
    if (command === "members") return await members(sub, rest, values as UserFlags, loadConfig(env, flags), io);
    if (command === "audit") return await audit(sub, rest, values, loadConfig(env, flags), io, stdout);
    if (command === "vacuum") return await vacuum(loadConfig(env, flags), io);
    if (command === "rebuild") return await rebuild(loadConfig(env, flags), io, values.resume === true);
    io.err(USAGE);
    return command === undefined || command === "help" ? 0 : 2;
  } catch (error) {
    if (error instanceof ConfigError || (error as { code?: string }).code?.startsWith("ERR_PARSE_ARGS")) {
      io.err(`agentmon: ${(error as Error).message}`);
      return 1;
    }
    if ((error as { code?: string }).code === "EADDRINUSE") {
      io.err(`agentmon: ${(error as Error).message}; choose another PORT`);
      return 1;
    }
    throw error;
  }
}
