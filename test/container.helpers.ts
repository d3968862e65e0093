/**
 * What test/container.test.ts reads the Dockerfile and .dockerignore with: a parser of the
 * Dockerfile's instructions by stage, and the build context's filter as Docker applies
 * .dockerignore (patterns in order, the last that matches a path or one of its parent folders
 * wins, `!` lets a path back in, `**` spans folders).
 */

export interface Instruction {
  /** Upper case: FROM, RUN, COPY, ENV, CMD, ... */
  keyword: string;
  /** `--from=build`, `--chown=...`, `--interval=30s`: the leading flags, by name. */
  flags: Record<string, string>;
  /** The rest of the instruction, continuation lines joined. */
  args: string;
  /** 1-based line of the instruction's first line. */
  line: number;
}

export interface Stage {
  /** The `AS` name, or the stage's index. */
  name: string;
  image: string;
  instructions: Instruction[];
}

/** The Dockerfile's stages, each with its instructions (FROM included). */
export function parseDockerfile(text: string): Stage[] {
  const instructions: Instruction[] = [];
  const lines = text.split("\n");
  for (let i = 0; i < lines.length; i++) {
    const first = lines[i] as string;
    if (/^\s*(#|$)/.test(first)) continue;
    const start = i + 1;
    let joined = first;
    // A line ending in a backslash goes on; comment lines inside it are dropped, as Docker does.
    while (/\\\s*$/.test(joined) && i + 1 < lines.length) {
      joined = joined.replace(/\\\s*$/, " ");
      i++;
      const next = lines[i] as string;
      if (!/^\s*#/.test(next)) joined += next;
    }
    const match = /^\s*(\w+)\s*(.*)$/s.exec(joined);
    if (!match) throw new Error(`Dockerfile line ${start}: cannot read "${first}"`);
    let rest = (match[2] as string).trim();
    const flags: Record<string, string> = {};
    for (let flag = /^--([\w-]+)=(\S+)\s*/.exec(rest); flag; flag = /^--([\w-]+)=(\S+)\s*/.exec(rest)) {
      flags[flag[1] as string] = flag[2] as string;
      rest = rest.slice(flag[0].length);
    }
    instructions.push({
      keyword: (match[1] as string).toUpperCase(),
      flags,
      args: rest.replace(/\s+/g, " "),
      line: start,
    });
  }
  const stages: Stage[] = [];
  for (const instruction of instructions) {
    if (instruction.keyword === "FROM") {
      const [image = "", as, name] = instruction.args.split(" ");
      stages.push({ name: as?.toUpperCase() === "AS" && name ? name : String(stages.length), image, instructions: [] });
    }
    const stage = stages.at(-1);
    if (!stage) throw new Error(`Dockerfile line ${instruction.line}: ${instruction.keyword} before any FROM`);
    stage.instructions.push(instruction);
  }
  return stages;
}

/** An exec-form (JSON array) argument list, or undefined for the shell form. */
export function execForm(args: string): string[] | undefined {
  if (!args.startsWith("[")) return undefined;
  const parsed: unknown = JSON.parse(args);
  if (!Array.isArray(parsed) || !parsed.every((a) => typeof a === "string")) return undefined;
  return parsed;
}

/** The sources and destination of a COPY, shell or exec form. */
export function copyArgs(args: string): { sources: string[]; dest: string } {
  const words = execForm(args) ?? args.split(" ");
  return { sources: words.slice(0, -1), dest: words.at(-1) as string };
}

/** ENV's pairs: `ENV A=1 B=2` (values may be double-quoted) or the old `ENV A 1`. */
export function envPairs(args: string): [string, string][] {
  if (!/^[\w.-]+=/.test(args)) {
    const [key = "", ...value] = args.split(" ");
    return [[key, value.join(" ")]];
  }
  return [...args.matchAll(/([\w.-]+)=("(?:[^"\\]|\\.)*"|\S*)/g)].map(([, key, value]) => [
    key as string,
    (value as string).startsWith('"') ? JSON.parse(value as string) : (value as string),
  ]);
}

/** The RUN's commands, split at `&&` (the only way the Dockerfile chains them). */
export function runCommands(args: string): string[] {
  return args
    .split("&&")
    .map((c) => c.trim())
    .filter((c) => c !== "");
}

function globToRegExp(pattern: string): RegExp {
  let source = "";
  for (let i = 0; i < pattern.length; i++) {
    const c = pattern[i] as string;
    if (c === "*" && pattern[i + 1] === "*") {
      // `**/` is any number of folders, none included; a trailing `**` is anything.
      if (pattern[i + 2] === "/") {
        source += "(?:.*/)?";
        i += 2;
      } else {
        source += ".*";
        i += 1;
      }
    } else if (c === "*") source += "[^/]*";
    else if (c === "?") source += "[^/]";
    else source += c.replace(/[.+^${}()|[\]\\]/g, "\\$&");
  }
  return new RegExp(`^${source}$`);
}

/**
 * A predicate for paths of the context (relative, `/`-separated): true when .dockerignore lets the
 * path into the build context.
 */
export function dockerignore(text: string): (path: string) => boolean {
  const rules = text
    .split("\n")
    .map((line) => line.trim())
    .filter((line) => line !== "" && !line.startsWith("#"))
    .map((line) => {
      const negate = line.startsWith("!");
      const pattern = (negate ? line.slice(1) : line).trim().replace(/^\/+/, "").replace(/\/+$/, "");
      return { negate, regexp: globToRegExp(pattern) };
    });
  return (path: string) => {
    const parts = path.replace(/\/+$/, "").split("/");
    // The path and each of its parent folders: a pattern that matches a folder matches what is in it.
    const candidates = parts.map((_, i) => parts.slice(0, i + 1).join("/"));
    let included = true;
    for (const { negate, regexp } of rules) {
      if (candidates.some((candidate) => regexp.test(candidate))) included = negate;
    }
    return included;
  };
}
