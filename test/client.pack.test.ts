/**
 * The TypeScript client as its users get it (issue 27 item 5; docs/decisions/032-client-package.md):
 * `npm pack` of this checkout's clients/typescript (its prepack builds dist/ with tsc), the tarball
 * installed with npm into a project of its own in a temp dir, offline, and used there against a
 * real agentmon on a real port, from plain JavaScript (`node use.mjs`) and from TypeScript (the
 * repository's tsc checks use.ts against the installed .d.ts files, strict and without
 * skipLibCheck, then the emitted JavaScript runs). The package's dependencies are packed from this
 * repository's node_modules and installed with it: nothing is fetched from a registry.
 *
 * Not in scripts/check.sh's THREAD_TESTS: its subject is the package, not the store.
 */
import { execFile } from "node:child_process";
import { copyFileSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { promisify } from "node:util";
import t, { type Test } from "tap";
import { API_KEY, build, tempDir } from "./helper.ts";
import { ROOT } from "./process.ts";

const run = promisify(execFile);
const CLIENT = join(ROOT, "clients/typescript");
const TSC = join(ROOT, "node_modules/typescript/bin/tsc");

// Building the client (tsc over the 4 000 lines of generated/api.ts) and checking the consumer
// take tens of seconds on a busy machine; .taprc's 120 s would be tight.
t.setTimeout(600_000);

/** npm, without the npm_* settings of an `npm test` around this run (a prefix, a workspace). */
function npmEnv(): NodeJS.ProcessEnv {
  return Object.fromEntries(Object.entries(process.env).filter(([name]) => !/^npm_/i.test(name)));
}

async function npm(cwd: string, args: string[]): Promise<string> {
  const { stdout } = await run("npm", args, { cwd, env: npmEnv(), maxBuffer: 16 * 1024 * 1024 });
  return stdout;
}

interface Manifest {
  name: string;
  version: string;
  private?: boolean;
  type?: string;
  engines?: Record<string, string>;
  exports?: Record<string, unknown>;
  files?: string[];
  scripts?: Record<string, string>;
  dependencies?: Record<string, string>;
}

const manifest = (dir: string) => JSON.parse(readFileSync(join(dir, "package.json"), "utf8")) as Manifest;

/** The client's runtime dependencies and theirs, as installed in this repository's node_modules. */
function dependencyClosure(pkg: Manifest): string[] {
  const found = new Set<string>();
  const visit = (deps: Record<string, string> = {}) => {
    for (const name of Object.keys(deps)) {
      if (found.has(name)) continue;
      found.add(name);
      visit(manifest(join(ROOT, "node_modules", name)).dependencies);
    }
  };
  visit(pkg.dependencies);
  return [...found].sort();
}

interface Packed {
  filename: string;
  files: { path: string }[];
}

/** agentmon listening on 127.0.0.1 port 0, closed at teardown; answers its base URL. */
async function serve(t: Test): Promise<string> {
  const api = await build(t);
  return api.app.listen({ port: 0, host: "127.0.0.1" });
}

/** What both programs do, and print as JSON: a session recorded, then read back with the key. */
const program = (baseUrl: string, id: string) => `
const am = agentmon({ baseUrl: ${JSON.stringify(baseUrl)}, apiKey: ${JSON.stringify(API_KEY)} });
const s = await am.startSession({ id: ${JSON.stringify(id)}, tags: ["packed"] });
await s.registerAgent({ id: "planner", name: "Planner" });
const ids = await s.recordEvents([
  { type: "llm", id: "ev-1", agent_id: "planner", model: "gpt-4o-mini", prompt_tokens: 5, cost: 0.0042 },
  { type: "tool", name: "calculator", input: "2+2", output: "4" },
]);
await s.end("Success");
const read = await am.getSession(s.id);
let refused = "";
try {
  await am.getSession("no-such-session");
} catch (error) {
  if (error instanceof AgentmonError) refused = \`\${error.status} \${error.error}\`;
}
console.log(JSON.stringify({ ids: ids.length, first: ids[0], end_state: read.session.end_state, refused }));
`;

/** What each program prints. */
const EXPECTED = { ids: 2, first: "ev-1", end_state: "Success", refused: "404 Not found" };

/** The consumer's compiler options: strict, and the installed .d.ts files checked too. */
const TSCONFIG = {
  compilerOptions: {
    target: "ES2022",
    lib: ["ES2022", "DOM"],
    module: "NodeNext",
    moduleResolution: "NodeNext",
    types: [],
    strict: true,
    skipLibCheck: false,
    outDir: "out",
  },
  files: ["use.ts"],
};

/** The client packed once (its prepack builds it), for both tests. */
const packDir = tempDir(t);
const packed = npm(CLIENT, ["pack", "--json", "--pack-destination", packDir]).then(
  (stdout) => (JSON.parse(stdout) as Packed[])[0] as Packed,
);

t.test("npm pack: dist with declarations, no sources, an exports map, not private", async (t) => {
  const pkg = manifest(CLIENT);
  t.notOk(pkg.private, "publishable");
  t.match(pkg.version, /^\d+\.\d+\.\d+$/, "a version");
  t.equal(pkg.type, "module");
  t.ok(pkg.engines?.node, "engines.node");
  t.same(pkg.exports?.["."], { types: "./dist/index.d.ts", import: "./dist/index.js" }, "import + types");
  t.match(pkg.scripts, { build: /tsc -p tsconfig\.build\.json/, prepack: /build/ }, "npm pack builds");

  const files = (await packed).files.map((f) => f.path).sort();
  t.ok(files.includes("dist/index.js") && files.includes("dist/index.d.ts"), "the entry point and its types");
  t.ok(files.includes("dist/generated/api.d.ts"), "the contract's types");
  t.ok(files.includes("README.md"), "the README");
  t.same(
    files.filter((f) => !/^dist\/.*\.(js|d\.ts)$/.test(f) && f !== "README.md" && f !== "package.json"),
    [],
    "nothing else: no .ts sources, no tsconfig, no maps",
  );
  // dist/generated/api.d.ts is compiled from generated/api.ts, which npm test keeps equal to
  // openapi-typescript's output for openapi.yaml (scripts/generate.ts --check).
  const built = readFileSync(join(CLIENT, "dist/generated/api.d.ts"), "utf8");
  const sources = readFileSync(join(CLIENT, "generated/api.ts"), "utf8");
  for (const path of [...sources.matchAll(/^ {4}"(\/[^"]*)": \{$/gm)].map((m) => m[1])) {
    if (!built.includes(`"${path}": {`)) t.fail(`dist/generated/api.d.ts lacks ${path}`);
  }
  t.ok(built.includes('"/v2/create_events": {'), "the built types carry the contract's paths");
});

t.test("the tarball installed offline runs from JavaScript and type-checks and runs from TypeScript", async (t) => {
  const dir = tempDir(t);
  const tarballs = join(dir, "tarballs");
  const project = join(dir, "project");
  mkdirSync(tarballs);
  mkdirSync(project);

  const client = await packed;
  copyFileSync(join(packDir, client.filename), join(tarballs, client.filename));
  const deps = dependencyClosure(manifest(CLIENT));
  t.same(deps, ["openapi-fetch", "openapi-typescript-helpers"], "the client's whole dependency tree: two packages");
  const packedDeps = JSON.parse(
    await npm(ROOT, [
      "pack",
      "--json",
      "--ignore-scripts",
      "--pack-destination",
      tarballs,
      ...deps.map((name) => `./node_modules/${name}`),
    ]),
  ) as Packed[];

  writeFileSync(join(project, "package.json"), JSON.stringify({ name: "consumer", private: true, type: "module" }));
  const all = [client, ...packedDeps].map((p) => join(tarballs, p.filename));
  await npm(project, ["install", "--offline", "--no-audit", "--no-fund", "--ignore-scripts", ...all]);
  t.equal(manifest(join(project, "node_modules/@agentmon/client")).name, "@agentmon/client", "installed");

  const baseUrl = await serve(t);

  // Plain JavaScript, ESM.
  writeFileSync(
    join(project, "use.mjs"),
    `import { AgentmonError, agentmon } from "@agentmon/client";\n${program(baseUrl, "from-js")}`,
  );
  const js = await run(process.execPath, ["use.mjs"], { cwd: project });
  t.same(JSON.parse(js.stdout), EXPECTED, "from JavaScript");

  // TypeScript: the types are the contract's, not any (the @ts-expect-error lines must be used).
  writeFileSync(
    join(project, "use.ts"),
    `import { AgentmonError, agentmon, type EventInput } from "@agentmon/client";
${program(baseUrl, "from-ts")}
// @ts-expect-error: end() takes "Success" | "Fail" | "Indeterminate"
export const state: Parameters<typeof s.end>[0] = "Done";
// @ts-expect-error: a field the contract does not name is refused
export const event: EventInput = { type: "llm", prompt_tokns: 5 };
`,
  );
  writeFileSync(join(project, "tsconfig.json"), JSON.stringify(TSCONFIG));
  try {
    await run(process.execPath, [TSC, "-p", project], { cwd: project });
  } catch (error) {
    t.fail(`tsc refused use.ts: ${(error as { stdout?: string }).stdout ?? String(error)}`);
    return;
  }
  t.pass("use.ts type-checks against the installed .d.ts files");
  const ts = await run(process.execPath, ["out/use.js"], { cwd: project });
  t.same(JSON.parse(ts.stdout), EXPECTED, "from TypeScript, compiled");
});
