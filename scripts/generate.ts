/**
 * Generates generated/api.ts from openapi.yaml with openapi-typescript, under a header that
 * carries the document's SHA-256, so that ANY change to openapi.yaml (a description, a
 * maxLength) makes the committed file stale. `--check` compares instead of writing and exits 1
 * on a difference; `npm test` runs it.
 */
import { createHash } from "node:crypto";
import { readFileSync, writeFileSync } from "node:fs";
import openapiTS, { astToString, COMMENT_HEADER } from "openapi-typescript";

const SPEC = new URL("../openapi.yaml", import.meta.url);
const TARGET = new URL("../generated/api.ts", import.meta.url);

const spec = readFileSync(SPEC);
const sha256 = createHash("sha256").update(spec).digest("hex");
const ast = await openapiTS(spec.toString("utf8"), { emptyObjectsUnknown: true });
const output = `${COMMENT_HEADER}// Source: openapi.yaml, sha256 ${sha256}. Regenerate with \`npm run generate\`.\n\n${astToString(ast)}`;

if (process.argv.includes("--check")) {
  let current = "";
  try {
    current = readFileSync(TARGET, "utf8");
  } catch {}
  if (current !== output) {
    console.error("generated/api.ts is stale: openapi.yaml changed since it was generated. Run `npm run generate`.");
    process.exit(1);
  }
  console.log(`generated/api.ts is current (openapi.yaml sha256 ${sha256.slice(0, 12)}…)`);
} else {
  writeFileSync(TARGET, output);
  console.log(`generated/api.ts written from openapi.yaml (sha256 ${sha256.slice(0, 12)}…)`);
}
