/**
 * `npm run bench -- --against REV [--quick]`: B1 and B2 of this checkout and of another revision
 * (say, the commit before a change), side by side in one run. The revision is exported from git
 * into a temporary folder, shares this checkout's node_modules and is bundled as `npm install`
 * bundles it; each side then runs as a user runs it (`npm start`'s command, a fresh file database).
 *
 * The machine's speed drifts by tens of percent over minutes, so the sides alternate, A B B A
 * then B A A B (`--rounds N` rounds): each side's figure is the mean of its runs, drift that is
 * linear over a round falls on both alike, and neither side always runs first.
 */
import { execFileSync, execSync } from "node:child_process";
import { mkdtempSync, rmSync, symlinkSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ingest, openSessions, ROOT, type Server, startAgentmon } from "../load.ts";

/** The revision's files in a temporary folder, bundled and ready to start; `remove` cleans up. */
function checkout(rev: string) {
  const sha = execFileSync("git", ["rev-parse", "--verify", `${rev}^{commit}`], { cwd: ROOT, encoding: "utf8" }).trim();
  const dir = mkdtempSync(join(tmpdir(), "agentmon-against-"));
  execSync(`git archive ${sha} | tar -x -C ${JSON.stringify(dir)}`, { cwd: ROOT });
  symlinkSync(join(ROOT, "node_modules"), join(dir, "node_modules"), "dir");
  execFileSync(process.execPath, ["bin/build.js"], { cwd: dir, stdio: "inherit" });
  return { sha: sha.slice(0, 7), root: dir, remove: () => rmSync(dir, { recursive: true, force: true }) };
}

interface Options {
  seconds: number;
  warmup: number;
  connections: number;
  /** How many times A B B A is run; each side's figure is the mean of all its runs. */
  rounds: number;
}

/** One run of a scenario on a fresh server of one side: events/s (B1) or requests/s (B2), and p99. */
async function once(root: string, perCall: number, o: Options) {
  const server: Server = await startAgentmon({}, root);
  try {
    const jwts = await openSessions(server, o.connections);
    const run = await ingest(server, jwts, {
      connections: o.connections,
      seconds: o.seconds,
      perCall,
      warmup: o.warmup,
    });
    return { rate: perCall === 1 ? run.rps : run.rps * perCall, p99: run.p99, failed: run.non2xx + run.errors };
  } finally {
    await server.stop();
  }
}

type Run = Awaited<ReturnType<typeof once>>;
const mean = (runs: Run[]) => runs.reduce((sum, run) => sum + run.rate, 0) / runs.length;
const each = (runs: Run[]) => runs.map((run) => `${Math.round(run.rate)}, p99 ${run.p99} ms`).join("; ");

export async function compareAgainst(rev: string, o: Options, log: (line: string) => void) {
  const other = checkout(rev);
  const here = execFileSync("git", ["rev-parse", "--short=7", "HEAD"], { cwd: ROOT, encoding: "utf8" }).trim();
  const dirty = execFileSync("git", ["status", "--porcelain", "--untracked-files=no"], { cwd: ROOT, encoding: "utf8" });
  const name = `this checkout (${here}${dirty ? ", with uncommitted changes" : ""})`;
  const results = [];
  try {
    for (const [id, perCall, unit] of [
      ["B1", 100, "events/s"],
      ["B2", 1, "req/s"],
    ] as const) {
      log(
        `${id}: ${perCall} event${perCall === 1 ? "" : "s"}/call, ${o.connections} connections, A B B A / B A A B × ${o.rounds}`,
      );
      // One unmeasured run of each side first: the first server started after the other side was
      // bundled measured up to 10 % slow, whichever side it was (page cache, CPU clock), and A is first.
      await once(ROOT, perCall, { ...o, seconds: o.warmup + 2 });
      await once(other.root, perCall, { ...o, seconds: o.warmup + 2 });
      const a: Run[] = [];
      const b: Run[] = [];
      // A B B A, then B A A B, and so on: neither side always runs first or last in a round.
      for (let round = 0; round < o.rounds; round++) {
        const [first, second] = round % 2 === 0 ? [a, b] : [b, a];
        const [firstRoot, secondRoot] = round % 2 === 0 ? [ROOT, other.root] : [other.root, ROOT];
        first.push(await once(firstRoot, perCall, o));
        second.push(await once(secondRoot, perCall, o));
        second.push(await once(secondRoot, perCall, o));
        first.push(await once(firstRoot, perCall, o));
      }
      const mine = mean(a);
      const theirs = mean(b);
      log(`  ${name}: ${Math.round(mine)} ${unit} (${each(a)})`);
      log(`  ${other.sha}: ${Math.round(theirs)} ${unit} (${each(b)})`);
      log(`  ratio: ${(mine / theirs).toFixed(3)}×`);
      const failed = [...a, ...b].reduce((sum, run) => sum + run.failed, 0);
      if (failed > 0) log(`  ${failed} calls failed`);
      results.push({ id, unit, here: mine, against: theirs, ratio: mine / theirs, failed });
    }
  } finally {
    other.remove();
  }
  log("\n| id | this checkout | against | ratio |");
  log("|---|---|---|---|");
  for (const r of results) {
    log(
      `| ${r.id} | ${Math.round(r.here)} ${r.unit} | ${other.sha}: ${Math.round(r.against)} ${r.unit} | ${r.ratio.toFixed(3)}× |`,
    );
  }
  return { against: other.sha, here, results };
}
