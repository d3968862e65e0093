/**
 * openapi.yaml, read once: its bytes (served by GET /v2/openapi.yaml, L3) and the document.
 * Parsing 2 000 lines of YAML is a good part of a cold start, so `npm install` (bin/build.js)
 * also writes the parsed document to dist/openapi.json with the SHA-256 of the YAML it came
 * from; the cache is used only when that hash matches the file read now, so an edited spec is
 * never served stale.
 */
import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { fromRoot } from "./paths.ts";

export const SPEC_PATH = fromRoot("openapi.yaml");
export const SPEC_CACHE = fromRoot("dist/openapi.json");

export const specHash = (text: string) => createHash("sha256").update(text).digest("hex");

export function loadSpec<T>(): { text: string; spec: T } {
  const text = readFileSync(SPEC_PATH, "utf8");
  try {
    const cached = JSON.parse(readFileSync(SPEC_CACHE, "utf8")) as { sha256: string; spec: T };
    if (cached.sha256 === specHash(text)) return { text, spec: cached.spec };
  } catch {
    // no cache yet: parse the YAML
  }
  // Loaded only here, and left out of the bundle (bin/build.js): 250 KB less to parse at start.
  const yaml = createRequire(import.meta.url)("yaml") as typeof import("yaml");
  return { text, spec: yaml.parse(text) as T };
}
