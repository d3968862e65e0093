/**
 * The layers gate (`npm run check:layers`, .dependency-cruiser.mjs) can fail: with the project's
 * own rules, a small tree in the target layout passes, and the same tree with a cycle, an upward
 * import or a handler importing another handler is reported under the rule that forbids it.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { cruise, type ICruiseResult } from "dependency-cruiser";
import extractDepcruiseOptions from "dependency-cruiser/config-utl/extract-depcruise-options";
import extractTSConfig from "dependency-cruiser/config-utl/extract-ts-config";
import t, { type Test } from "tap";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const tsConfigFile = join(root, "tsconfig.json");

const CLEAN: Record<string, string> = {
  "lib/paths.ts": 'import { join } from "node:path";\nexport const home = join("/", "x");\n',
  "domain/thing.ts":
    'import { home } from "../lib/paths.ts";\nexport type Thing = { id: string };\nexport const where = home;\n',
  "db/store.ts":
    'import type { Thing } from "../domain/thing.ts";\nexport interface Store { get(id: string): Thing }\n',
  "services/things.ts":
    'import type { Store } from "../db/store.ts";\nimport { where } from "../domain/thing.ts";\nexport const find = (s: Store) => s.get(where);\n',
  "handlers/types.ts": 'import type { Store } from "../db/store.ts";\nexport type Deps = { store: Store };\n',
  "handlers/getThing.ts":
    'import { find } from "../services/things.ts";\nimport type { Deps } from "./types.ts";\nexport const getThing = (d: Deps) => find(d.store);\n',
  "handlers/putThing.ts": 'import type { Deps } from "./types.ts";\nexport const putThing = (d: Deps) => d;\n',
  "handlers/index.ts":
    'import { getThing } from "./getThing.ts";\nimport { putThing } from "./putThing.ts";\nexport const handlers = { getThing, putThing };\n',
  "app.ts": 'import { handlers } from "./handlers/index.ts";\nexport const app = () => handlers;\n',
  "server.ts": 'import { app } from "./app.ts";\napp();\n',
};

/** Writes the tree in a temporary folder and cruises it with the project's rules: "rule: from → to" per violation. */
async function violations(t: Test, changes: Record<string, string>): Promise<string[]> {
  return (await cruiseTree(t, changes)).violations.map((v) => `${v.rule.name}: ${v.from} → ${v.to}`);
}

async function cruiseTree(t: Test, changes: Record<string, string>): Promise<ICruiseResult["summary"]> {
  const dir = mkdtempSync(join(tmpdir(), "agentmon-layers-"));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  for (const [file, text] of Object.entries({ ...CLEAN, ...changes })) {
    mkdirSync(dirname(join(dir, file)), { recursive: true });
    writeFileSync(join(dir, file), text);
  }
  const options = await extractDepcruiseOptions(join(root, ".dependency-cruiser.mjs"));
  const { output } = await cruise(
    ["."],
    { ...options, baseDir: dir, tsConfig: { fileName: tsConfigFile } },
    {},
    { tsConfig: extractTSConfig(tsConfigFile) },
  );
  return (output as ICruiseResult).summary;
}

t.test("a tree laid out in the layers passes", async (t) => {
  const summary = await cruiseTree(t, {});
  t.equal(summary.totalCruised, Object.keys(CLEAN).length + 1, "every file, and node:path");
  t.same(summary.violations, []);
});

t.test("a cycle is reported", async (t) => {
  const found = await violations(t, {
    "domain/rules.ts": 'import { where } from "./thing.ts";\nexport const rule = where;\n',
    "domain/thing.ts":
      'import { rule } from "./rules.ts";\nexport type Thing = { id: string };\nexport const where = rule;\n',
  });
  t.ok(
    found.some((v) => v.startsWith("no-circular: domain/")),
    found.join("\n"),
  );
});

t.test("an upward import is reported, type-only or not", async (t) => {
  const found = await violations(t, {
    "services/y.ts": "export type Y = 1;\nexport const y: Y = 1;\n",
    "domain/x.ts": 'import { y } from "../services/y.ts";\nexport const x = y;\n',
    "domain/z.ts": 'import type { Y } from "../services/y.ts";\nexport const z: Y = 1;\n',
  });
  t.same(found.sort(), [
    "domain-imports-only-domain-lib: domain/x.ts → services/y.ts",
    "domain-imports-only-domain-lib: domain/z.ts → services/y.ts",
  ]);
});

t.test("a handler importing another handler is reported", async (t) => {
  const found = await violations(t, {
    "handlers/putThing.ts":
      'import { getThing } from "./getThing.ts";\nimport type { Deps } from "./types.ts";\nexport const putThing = (d: Deps) => getThing(d);\n',
  });
  t.same(found, ["handler-not-to-other-handler: handlers/putThing.ts → handlers/getThing.ts"]);
});

t.test("the TypeScript client importing the server's code or a Node built-in is reported", async (t) => {
  const found = await violations(t, {
    "clients/typescript/api.ts": "export type Paths = { a: 1 };\n",
    "clients/typescript/index.ts":
      'import type { Paths } from "./api.ts";\nimport type { Thing } from "../../domain/thing.ts";\n' +
      'import { join } from "node:path";\nexport const x = (p: Paths, t: Thing) => join(String(p), t.id);\n',
  });
  t.same(found.sort(), [
    "client-imports-only-its-own-files: clients/typescript/index.ts → domain/thing.ts",
    "client-imports-only-its-own-files: clients/typescript/index.ts → path",
  ]);
});
