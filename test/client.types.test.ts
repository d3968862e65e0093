/**
 * The TypeScript client's types refuse wrong calls (issue 17): test/client/typecheck.ts, compiled
 * with the project's compiler options, once as written (its `@ts-expect-error` lines are all used
 * and nothing else fails) and once without those comments, where each line they marked must be
 * an error saying what its comment expects. So a type that stopped refusing a wrong field fails
 * here, and in `tsc --noEmit`, which compiles the same file.
 */
import { readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import t from "tap";
import ts from "typescript";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const fixture = join(root, "test/client/typecheck.ts");
const EXPECT = /^\s*\/\/ @ts-expect-error expects: (.*)$/;

function compilerOptions(): ts.CompilerOptions {
  const file = join(root, "tsconfig.json");
  const { config } = ts.readConfigFile(file, ts.sys.readFile);
  return ts.parseJsonConfigFileContent(config, ts.sys, root, undefined, file).options;
}

/** The fixture's diagnostics when its text is `text`, as [line (0-based), message]. */
function diagnose(text: string): [number, string][] {
  const options = compilerOptions();
  const host = ts.createCompilerHost(options);
  const read = host.getSourceFile.bind(host);
  host.getSourceFile = (name, version, ...rest) =>
    name === fixture ? ts.createSourceFile(name, text, version) : read(name, version, ...rest);
  const program = ts.createProgram({ rootNames: [fixture], options, host });
  return ts.getPreEmitDiagnostics(program).map((d): [number, string] => {
    const line = d.file && d.start !== undefined ? d.file.getLineAndCharacterOfPosition(d.start).line : -1;
    return [line, ts.flattenDiagnosticMessageText(d.messageText, "\n")];
  });
}

const source = readFileSync(fixture, "utf8");
const lines = source.split("\n");
const expected = lines.flatMap((line, i) => {
  const match = EXPECT.exec(line);
  return match ? [{ line: i + 1, text: lines[i + 1]?.trim() ?? "", expects: match[1] as string }] : [];
});

t.test("the fixture compiles as written: every @ts-expect-error is used", async (t) => {
  t.ok(expected.length >= 15, `the fixture marks its wrong calls (${expected.length})`);
  t.equal(
    lines.filter((line) => /^\s*\/\/ @ts-expect-error/.test(line)).length,
    expected.length,
    "every @ts-expect-error says what it expects",
  );
  const found = diagnose(source);
  t.same(found, [], "no diagnostics");
});

t.test("without the comments, each marked line is refused for the reason given", async (t) => {
  const stripped = lines.map((line) => (EXPECT.test(line) ? "//" : line)).join("\n");
  const found = diagnose(stripped);
  for (const { line, text, expects } of expected) {
    const messages = found.filter(([at]) => at === line).map(([, message]) => message);
    t.ok(
      messages.some((message) => message.includes(expects)),
      `line ${line + 1} \`${text}\` is refused: ${expects}`,
      { found: messages },
    );
  }
  const marked = new Set(expected.map((e) => e.line));
  t.same(
    found.filter(([at]) => !marked.has(at)),
    [],
    "and nothing else is",
  );
});
