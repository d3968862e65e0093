/**
 * The `agentmon` command: `serve`, `keys create|list|revoke`, `prices check|import`,
 * `projects list|set-retention`, `sessions delete`, `users`, `members`, `audit export`, `export`, `import`, `rebuild` and `vacuum`. This is the only module that
 * reads the environment and the command line (bin/agentmon.js hands them in); everything else
 * gets its settings passed in.
 */
import type { Writable } from "node:stream";
import { parseArgs } from "node:util";
import { ConfigError, FLAG_OPTIONS, loadConfig, type Output, USAGE } from "./cli/config.ts";
import type { ExportFlags } from "./cli/export.ts";
import type { SessionFlags } from "./cli/sessions.ts";
import { startStorageThread } from "./cli/storage-thread.ts";
import type { UserFlags } from "./cli/users.ts";

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
    // Each command's modules are loaded when it runs (B4, decision 041): a server's start does not
    // read the others, and its storage thread starts before its own modules load.
    if (command === "serve") {
      const config = loadConfig(env, flags);
      const storage = startStorageThread(config);
      const { serve } = await import("./cli/serve.ts");
      return await serve(config, io, storage);
    }
    if (command === "keys")
      return await (await import("./cli/keys.ts")).keys(sub, rest, flags, loadConfig(env, flags), io);
    if (command === "prices")
      return await (await import("./cli/prices.ts")).prices(sub, rest, loadConfig(env, flags), io);
    if (command === "projects") {
      return await (await import("./cli/projects.ts")).projects(sub, rest, loadConfig(env, flags), io);
    }
    if (command === "sessions") {
      return await (await import("./cli/sessions.ts")).sessions(
        sub,
        values as SessionFlags,
        loadConfig(env, flags),
        io,
      );
    }
    if (command === "export") {
      const { exportCommand } = await import("./cli/export.ts");
      return await exportCommand(values as ExportFlags, loadConfig(env, flags), io, stdout);
    }
    if (command === "import") {
      const { importCommand } = await import("./cli/export.ts");
      return await importCommand(sub, values as ExportFlags, loadConfig(env, flags), io);
    }
    if (command === "users") {
      return await (await import("./cli/users.ts")).users(sub, rest, values as UserFlags, loadConfig(env, flags), io);
    }
    if (command === "members") {
      return await (await import("./cli/users.ts")).members(sub, rest, values as UserFlags, loadConfig(env, flags), io);
    }
    if (command === "audit") {
      return await (await import("./cli/audit.ts")).audit(sub, rest, values, loadConfig(env, flags), io, stdout);
    }
    if (command === "vacuum") return await (await import("./cli/vacuum.ts")).vacuum(loadConfig(env, flags), io);
    if (command === "rebuild") {
      return await (await import("./cli/rebuild.ts")).rebuild(loadConfig(env, flags), io, values.resume === true);
    }
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
