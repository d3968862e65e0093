/**
 * `npm run bench -- --against REV [--quick] [--rounds N] [--scenarios B1,B2,B4,B7]`: issue 24's
 * scenarios for this checkout and another revision (say, the last commit before a change), side
 * by side in one run, each ratio with both raw values:
 *   B1  100 events a create_events call, 50 connections          events/s (higher is better)
 *   B2  1 event a call, 50 connections                           calls/s
 *   B4  spawn to the first 200 of create_session, a fresh file   ms, median of the spawns (lower is better)
 *   B7  OTLP protobuf /v1/traces, 100 spans a request, 50 conn.  spans/s
 * Each side runs as a user runs it (its own `npm start` command, a fresh file database); the load
 * generator runs in a process of its own (scripts/bench/load-child.ts, this checkout's, so both
 * sides get the same client).
 *
 * The revision is exported from git into a temporary folder (`git archive`, no clone). When its
 * package-lock.json is this checkout's, it shares this checkout's node_modules (a symlink: seconds);
 * only when the lockfiles differ does it get `npm ci` of its own (minutes, said so). Then it is
 * bundled as `npm install` bundles it, and this checkout too when its bundle is stale, before any
 * clock starts (bin/agentmon.js would otherwise rebuild inside the first measured start).
 *
 * The machine's speed drifts by tens of percent over minutes, so the sides alternate, A B B A
 * then B A A B (`--rounds N` rounds): each side's figure is the mean of its runs, drift that is
 * linear over a round falls on both alike, and neither side always runs first.
 */
import { execFileSync, execSync } from "node:child_process";
import { randomUUID } from "node:crypto";
import { mkdtempSync, readFileSync, rmSync, symlinkSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { LoadResult } from "../load.ts";
import { ROOT, type Server, startAgentmon, startArgs } from "../load.ts";
import { agentmonEnv, coldStart } from "./cold.ts";
import { runLoadChild } from "./load-child.ts";

export const SCENARIOS = ["B1", "B2", "B4", "B7"] as const;
export type ScenarioId = (typeof SCENARIOS)[number];

/** `B1,B4` (any case, spaces allowed) into the scenarios to compare, in the run's order. */
export function parseScenarios(text: string | undefined): ScenarioId[] {
  if (text === undefined) return [...SCENARIOS];
  const asked = text
    .split(",")
    .map((s) => s.trim().toUpperCase())
    .filter(Boolean);
  const unknown = asked.filter((s) => !(SCENARIOS as readonly string[]).includes(s));
  if (unknown.length || asked.length === 0)
    throw new Error(`--scenarios takes a list of ${SCENARIOS.join(", ")}; not "${text}"`);
  return SCENARIOS.filter((s) => asked.includes(s));
}

/**
 * The revision's files in a temporary folder, with node_modules and bundled, ready to start;
 * `remove` cleans up.
 */
function checkout(rev: string, log: (line: string) => void) {
  const sha = execFileSync("git", ["rev-parse", "--verify", `${rev}^{commit}`], { cwd: ROOT, encoding: "utf8" }).trim();
  const dir = mkdtempSync(join(tmpdir(), "agentmon-against-"));
  try {
    execSync(`git archive ${sha} | tar -x -C ${JSON.stringify(dir)}`, { cwd: ROOT });
    const theirs = readFileSync(join(dir, "package-lock.json"), "utf8");
    const ours = readFileSync(join(ROOT, "package-lock.json"), "utf8");
    if (theirs === ours) {
      symlinkSync(join(ROOT, "node_modules"), join(dir, "node_modules"), "dir");
      log(`${sha.slice(0, 7)}: same package-lock.json, sharing this checkout's node_modules`);
    } else {
      log(`${sha.slice(0, 7)}: its package-lock.json differs from this checkout's: npm ci of its own (minutes) ...`);
      execFileSync("npm", ["ci", "--no-audit", "--no-fund"], { cwd: dir, stdio: ["ignore", "ignore", "inherit"] });
    }
    execFileSync(process.execPath, ["bin/build.js"], { cwd: dir, stdio: "inherit" });
  } catch (error) {
    rmSync(dir, { recursive: true, force: true });
    throw error;
  }
  return { sha: sha.slice(0, 7), root: dir, remove: () => rmSync(dir, { recursive: true, force: true }) };
}

export interface Options {
  seconds: number;
  warmup: number;
  connections: number;
  /** How many times A B B A is run; each side's figure is the mean of all its runs. */
  rounds: number;
  /** Spawns per B4 run (its figure is their median). */
  spawns: number;
  scenarios: ScenarioId[];
}

interface Run {
  value: number;
  p99?: number;
  failed: number;
}

interface Scenario {
  id: ScenarioId;
  what: string;
  unit: string;
  /** B4 is a time: less is better, and its ratio reads the other way. */
  lowerIsBetter: boolean;
  run(root: string, o: Options, measured: boolean): Promise<Run>;
}

/** A load run from the load generator's own process against a fresh server of one side. */
async function loadRun(root: string, o: Options, kind: "events" | "otlp", perCall: number, seconds: number) {
  const server: Server = await startAgentmon({}, root);
  try {
    const { result } = runLoadChild<LoadResult & { spansPerS?: number; failed?: number }>(
      {
        url: server.url,
        key: server.key,
        kind,
        perCall,
        connections: o.connections,
        seconds,
        warmup: o.warmup,
      },
      ROOT,
    );
    const run = await result;
    if (kind === "otlp") return { value: run.spansPerS ?? 0, p99: run.p99, failed: run.failed ?? 0 };
    return { value: run.rps * perCall, p99: run.p99, failed: run.non2xx + run.errors };
  } finally {
    await server.stop();
  }
}

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  const mid = Math.floor(s.length / 2);
  return s.length % 2 ? (s[mid] as number) : ((s[mid - 1] as number) + (s[mid] as number)) / 2;
};

/** B4: `spawns` cold starts of one side, each on a new file in a fresh folder; their median. */
async function coldStarts(root: string, spawns: number) {
  const dir = mkdtempSync(join(tmpdir(), "agentmon-b4-"));
  try {
    const key = randomUUID();
    const times: number[] = [];
    for (let i = 0; i < spawns; i++) {
      const { ms } = await coldStart(
        startArgs(root),
        agentmonEnv({ AGENTMON_DB: join(dir, `fresh-${i}.db`), AGENTMON_API_KEY: key }),
        JSON.stringify({ session: { id: randomUUID() } }),
        { "x-agentmon-api-key": key },
        root,
      );
      times.push(ms);
    }
    return { value: median(times), failed: 0 };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

const SCENARIO_RUNS: Record<ScenarioId, Scenario> = {
  B1: {
    id: "B1",
    what: "100 events a call, 50 connections",
    unit: "events/s",
    lowerIsBetter: false,
    run: (root, o, measured) => loadRun(root, o, "events", 100, measured ? o.seconds : 2),
  },
  B2: {
    id: "B2",
    what: "1 event a call, 50 connections",
    unit: "calls/s",
    lowerIsBetter: false,
    run: (root, o, measured) => loadRun(root, o, "events", 1, measured ? o.seconds : 2),
  },
  B4: {
    id: "B4",
    what: "spawn to the first 200 of create_session, fresh file",
    unit: "ms",
    lowerIsBetter: true,
    run: (root, o, measured) => coldStarts(root, measured ? o.spawns : 1),
  },
  B7: {
    id: "B7",
    what: "OTLP protobuf, 100 spans a request, 50 connections",
    unit: "spans/s",
    lowerIsBetter: false,
    run: (root, o, measured) => loadRun(root, o, "otlp", 100, measured ? o.seconds : 2),
  },
};

const mean = (runs: Run[]) => runs.reduce((sum, run) => sum + run.value, 0) / runs.length;
const each = (runs: Run[]) =>
  runs.map((run) => `${Math.round(run.value)}${run.p99 === undefined ? "" : `, p99 ${run.p99} ms`}`).join("; ");

export async function compareAgainst(rev: string, o: Options, log: (line: string) => void) {
  const other = checkout(rev, log);
  // This checkout's bundle, if stale, is rebuilt now rather than by the first measured start.
  execFileSync(process.execPath, ["bin/build.js"], { cwd: ROOT, stdio: "inherit" });
  const here = execFileSync("git", ["rev-parse", "--short=7", "HEAD"], { cwd: ROOT, encoding: "utf8" }).trim();
  const dirty = execFileSync("git", ["status", "--porcelain", "--untracked-files=no"], { cwd: ROOT, encoding: "utf8" });
  const name = `this checkout (${here}${dirty ? ", with uncommitted changes" : ""})`;
  const results = [];
  try {
    for (const id of o.scenarios) {
      const scenario = SCENARIO_RUNS[id];
      log(`\n${id}: ${scenario.what}; A B B A / B A A B × ${o.rounds}`);
      // One unmeasured run of each side first: the first server started after the other side was
      // bundled measured up to 10 % slow, whichever side it was (page cache, CPU clock), and A is first.
      await scenario.run(ROOT, o, false);
      await scenario.run(other.root, o, false);
      const a: Run[] = [];
      const b: Run[] = [];
      // A B B A, then B A A B, and so on: neither side always runs first or last in a round.
      for (let round = 0; round < o.rounds; round++) {
        const [first, second] = round % 2 === 0 ? [a, b] : [b, a];
        const [firstRoot, secondRoot] = round % 2 === 0 ? [ROOT, other.root] : [other.root, ROOT];
        first.push(await scenario.run(firstRoot, o, true));
        second.push(await scenario.run(secondRoot, o, true));
        second.push(await scenario.run(secondRoot, o, true));
        first.push(await scenario.run(firstRoot, o, true));
      }
      const mine = mean(a);
      const theirs = mean(b);
      const better = scenario.lowerIsBetter ? "lower is better" : "higher is better";
      log(`  ${name}: ${Math.round(mine)} ${scenario.unit} (${each(a)})`);
      log(`  ${other.sha}: ${Math.round(theirs)} ${scenario.unit} (${each(b)})`);
      log(`  ratio: ${(mine / theirs).toFixed(3)}× (${better})`);
      const failed = [...a, ...b].reduce((sum, run) => sum + run.failed, 0);
      if (failed > 0) log(`  ${failed} calls failed`);
      results.push({
        id,
        unit: scenario.unit,
        lower_is_better: scenario.lowerIsBetter,
        here: mine,
        against: theirs,
        ratio: mine / theirs,
        runs: { here: a.map((r) => r.value), against: b.map((r) => r.value) },
        failed,
      });
    }
  } finally {
    other.remove();
  }
  log(`\n| id | this checkout (${here}) | ${other.sha} | ratio |`);
  log("|---|---|---|---|");
  for (const r of results) {
    log(
      `| ${r.id} | ${Math.round(r.here)} ${r.unit} | ${Math.round(r.against)} ${r.unit} | ${r.ratio.toFixed(3)}×${r.lower_is_better ? " (lower is better)" : ""} |`,
    );
  }
  return { against: other.sha, here, results };
}
