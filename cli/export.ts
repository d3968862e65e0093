/**
 * `agentmon export` and `agentmon import` (issue 16 part 3, docs/decisions/021-export.md): the
 * bulk export of GET /v2/export written to a file or standard output, and its NDJSON read back,
 * on either engine (cli/storage.ts).
 */

import { once } from "node:events";
import { createReadStream, createWriteStream } from "node:fs";
import { createInterface } from "node:readline";
import type { Writable } from "node:stream";
import type { Store } from "../db/store.ts";
import { timestampFromMillis } from "../domain/timestamps.ts";
import { EXPORT_FORMATS, type ExportCounts, type ExportFormat, exportFilter, exportLines } from "../services/export.ts";
import { ImportError, importSessions } from "../services/import.ts";
import { type Config, ConfigError, DEFAULT_PROJECT, type Output } from "./config.ts";
import { openCommandStore } from "./storage.ts";

export interface ExportFlags {
  project?: string | undefined;
  format?: string | undefined;
  out?: string | undefined;
  tag?: string[] | undefined;
  "end-state"?: string | undefined;
  from?: string | undefined;
  to?: string | undefined;
  "agent-id"?: string | undefined;
  q?: string | undefined;
  "conversation-id"?: string | undefined;
}

async function projectId(store: Store, name: string): Promise<string> {
  const project = (await store.listProjects()).find((p) => p.name === name);
  if (project === undefined) throw new ConfigError(`no project is named "${name}" (agentmon projects list)`);
  return project.id;
}

/** Writes a chunk, waiting for 'drain' when the stream's buffer is full. */
async function write(out: Writable, chunk: string) {
  if (!out.write(chunk)) await once(out, "drain");
}

export async function exportCommand(flags: ExportFlags, config: Config, io: Output, stdout: Writable) {
  const format = (flags.format ?? "ndjson") as ExportFormat;
  if (!EXPORT_FORMATS.includes(format)) throw new ConfigError(`--format must be one of ${EXPORT_FORMATS.join(", ")}`);
  const fields = {
    ...(flags.tag !== undefined && flags.tag.length > 0 ? { tag: flags.tag } : {}),
    ...(flags["end-state"] !== undefined ? { end_state: flags["end-state"] } : {}),
    ...(flags.from !== undefined ? { from: flags.from } : {}),
    ...(flags.to !== undefined ? { to: flags.to } : {}),
    ...(flags["agent-id"] !== undefined ? { agent_id: flags["agent-id"] } : {}),
    ...(flags.q !== undefined ? { q: flags.q } : {}),
    ...(flags["conversation-id"] !== undefined ? { conversation_id: flags["conversation-id"] } : {}),
  };
  for (const name of ["from", "to"] as const) {
    if (fields[name] !== undefined && Number.isNaN(Date.parse(fields[name]))) {
      throw new ConfigError(`--${name} must be a date-time such as 2026-11-01T00:00:00Z`);
    }
  }
  let filter: ReturnType<typeof exportFilter>;
  try {
    filter = exportFilter(fields, "");
  } catch (error) {
    const details = (error as { body?: { details?: { path: string; message: string }[] } }).body?.details;
    throw new ConfigError(
      details?.map((d) => `--${d.path.replaceAll("_", "-")} ${d.message}`).join("; ") ?? String(error),
    );
  }
  const store = await openCommandStore(config);
  const out = flags.out === undefined ? stdout : createWriteStream(flags.out);
  const counts: ExportCounts = { sessions: 0, events: 0 };
  try {
    const id = await projectId(store, flags.project ?? DEFAULT_PROJECT);
    for await (const chunk of exportLines(store, id, filter, format, counts)) await write(out, chunk);
  } finally {
    if (out !== stdout) {
      out.end();
      await once(out, "close");
    }
    await store.close();
  }
  io.err(`Exported ${counts.sessions} sessions and ${counts.events} events (${format}).`);
  return 0;
}

export async function importCommand(file: string | undefined, flags: ExportFlags, config: Config, io: Output) {
  if (file === undefined) throw new ConfigError("import needs a file, an NDJSON export (agentmon export)");
  const input = createReadStream(file);
  const opened = once(input, "open").catch((error: Error) => {
    throw new ConfigError(`cannot read ${file}: ${error.message}`);
  });
  await opened;
  const name = flags.project ?? DEFAULT_PROJECT;
  const store = await openCommandStore(config);
  try {
    const id = await projectId(store, name);
    const lines = createInterface({ input, crlfDelay: Number.POSITIVE_INFINITY });
    const report = await importSessions(store, id, lines, timestampFromMillis(Date.now()));
    io.out(
      `Imported ${report.sessions} sessions into project "${name}" (${report.created} new, ${report.existing} already there${
        report.foreign > 0 ? `, ${report.foreign} skipped: another project's` : ""
      }), ${report.agents} agents, ${report.events} events, ${report.scores} scores.`,
    );
    if (report.trailer === null) {
      io.err("agentmon: the file has no trailer line: the export was cut short; what it held is imported");
      return 1;
    }
    if (report.trailer.sessions !== report.sessions || report.trailer.events !== report.events) {
      io.err(
        `agentmon: the trailer says ${report.trailer.sessions} sessions and ${report.trailer.events} events; the file held ${report.sessions} and ${report.events}`,
      );
      return 1;
    }
    return 0;
  } catch (error) {
    if (error instanceof ImportError) throw new ConfigError(`${file}: ${error.message}`);
    throw error;
  } finally {
    input.destroy();
    await store.close();
  }
}
