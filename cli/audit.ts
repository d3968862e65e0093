/**
 * `agentmon audit export` (issue 26 item 6, docs/decisions/035-people.md): the audit trail as
 * NDJSON, one AuditEntry a line, oldest first, read a page at a time, written to a file or
 * standard output, on either engine (cli/storage.ts). Without --project: every record, the
 * instance's acts included; with it: that project's records.
 */
import { once } from "node:events";
import { createWriteStream } from "node:fs";
import type { Writable } from "node:stream";
import { auditLines } from "../services/people.ts";
import { type Config, ConfigError, type Output, SETTING_FLAGS, USAGE } from "./config.ts";
import { openCommandStore } from "./storage.ts";

export interface AuditFlags {
  project?: string | undefined;
  out?: string | undefined;
}

/** The flags `audit export` reads; the settings' flags (--db, --database-url…) are read by loadConfig. */
const OWN_FLAGS = ["project", "out"];

/** Writes a chunk, waiting for 'drain' when the stream's buffer is full. */
async function write(out: Writable, chunk: string) {
  if (!out.write(chunk)) await once(out, "drain");
}

/** A file to write, opened before the store is: a path that cannot be written is one line. */
async function openOut(path: string): Promise<Writable> {
  if (path.trim() === "") throw new ConfigError("--out names a file");
  const out = createWriteStream(path);
  try {
    await once(out, "open");
  } catch (error) {
    throw new ConfigError(`cannot write ${path}: ${(error as Error).message}`);
  }
  return out;
}

export async function audit(
  sub: string | undefined,
  args: string[],
  flags: Record<string, unknown>,
  config: Config,
  io: Output,
  stdout: Writable,
) {
  if (sub !== "export") {
    io.err(USAGE);
    return 2;
  }
  const foreign = Object.keys(flags).filter((f) => !OWN_FLAGS.includes(f) && !SETTING_FLAGS.includes(f));
  if (foreign.length > 0) {
    throw new ConfigError(
      `audit export takes --project NAME and --out FILE (and --db or --database-url), not ${foreign.map((f) => `--${f}`).join(", ")}`,
    );
  }
  if (args.length > 0) throw new ConfigError(`audit export takes no arguments (got "${args.join(" ")}")`);
  const { project, out: path } = flags as AuditFlags;
  if (project !== undefined && project.trim() === "") throw new ConfigError("--project names the project");
  const store = await openCommandStore(config);
  let out: Writable | undefined;
  const counts = { records: 0 };
  try {
    let projectId: string | undefined;
    if (project !== undefined) {
      projectId = (await store.listProjects()).find((p) => p.name === project)?.id;
      if (projectId === undefined) throw new ConfigError(`no project is named "${project}" (agentmon projects list)`);
    }
    out = path === undefined ? stdout : await openOut(path);
    for await (const chunk of auditLines(store, projectId, false, counts)) await write(out, chunk);
  } finally {
    if (out !== undefined && out !== stdout) {
      out.end();
      await once(out, "close");
    }
    await store.close();
  }
  io.err(
    `Exported ${counts.records} audit record${counts.records === 1 ? "" : "s"}${project === undefined ? "" : ` of project "${project}"`}.`,
  );
  return 0;
}
