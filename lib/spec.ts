/**
 * openapi.yaml, read once: its bytes (served by GET /v2/openapi.yaml, L3) and the document.
 * Parsing 2 000 lines of YAML is a good part of a cold start, so `npm install` (bin/build.js)
 * also writes the parsed document to dist/openapi.json with the SHA-256 of the YAML it came
 * from; the cache is used only when that hash matches the file read now, so an edited spec is
 * never served stale. Beside it, the routes fastify-openapi-glue makes of the document (its
 * parser's answer, for the plugin's default options), handed to the bundle's stand-in for that
 * parser (bin/shims/openapi-glue-parser.js; docs/decisions/034-cold-start.md), written with
 * each object the parser shares written once (restoreShared).
 */
import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { fromRoot } from "./paths.ts";

export const SPEC_PATH = fromRoot("openapi.yaml");
export const SPEC_CACHE = fromRoot("dist/openapi.json");

export const specHash = (text: string) => createHash("sha256").update(text).digest("hex");

/** The glue parser's answer for a document loaded from the cache, by the document object itself. */
const routesOf = new WeakMap<object, { options: unknown; routes: unknown }>();

/** The routes the build parsed from `spec`, when `spec` is the cached document and `options` the build's. */
export function parsedRoutes(spec: object, options: Record<string, unknown>): unknown {
  const parsed = routesOf.get(spec);
  if (parsed === undefined) return undefined;
  // Used once: the plugin may change what it was given, and the next app loads the cache again.
  routesOf.delete(spec);
  return JSON.stringify(parsed.options) ===
    JSON.stringify({ addEmptySchema: false, addCookieSchema: false, ...options })
    ? {
        ...(parsed.routes as object),
        contentTypes: new Set((parsed.routes as { contentTypes: string[] }).contentTypes),
      }
    : undefined;
}

/** bin/build.js shareRepeats' answer: JSON whose objects met twice are written once. */
export interface Shared {
  shared: unknown[];
  value: unknown;
}

/**
 * The value bin/build.js wrote with shareRepeats, each `{"$shared": i}` replaced by one object
 * for every i, the same at each of its places, as the parser had made it. Done in place, on the
 * freshly parsed JSON: copying it cost more than parsing the copies had (35 ms against 7 ms).
 */
export function restoreShared({ shared, value }: Shared): unknown {
  const restored = new Uint8Array(shared.length);
  const fix = (parent: Record<string, unknown>) => {
    for (const key of Object.keys(parent)) {
      const item = parent[key];
      if (item === null || typeof item !== "object") continue;
      const slot = (item as { $shared?: unknown }).$shared;
      if (typeof slot !== "number") {
        fix(item as Record<string, unknown>);
        continue;
      }
      const target = shared[slot] as Record<string, unknown>;
      if (restored[slot] === 0) {
        restored[slot] = 1;
        fix(target);
      }
      // A member named __proto__ is data here, as JSON.parse made it: never the prototype.
      Object.defineProperty(parent, key, { value: target, writable: true, enumerable: true, configurable: true });
    }
  };
  const root = { value };
  fix(root);
  return root.value;
}

export function loadSpec<T>(): { text: string; spec: T } {
  const text = readFileSync(SPEC_PATH, "utf8");
  try {
    const cached = JSON.parse(readFileSync(SPEC_CACHE, "utf8")) as {
      sha256: string;
      spec: T;
      glue?: { options: unknown; routes: unknown };
    };
    if (cached.sha256 === specHash(text)) {
      if (cached.glue !== undefined) {
        routesOf.set(cached.spec as object, { ...cached.glue, routes: restoreShared(cached.glue.routes as Shared) });
      }
      return { text, spec: cached.spec };
    }
  } catch {
    // no cache yet: parse the YAML
  }
  // Loaded only here, and left out of the bundle (bin/build.js): 250 KB less to parse at start.
  const yaml = createRequire(import.meta.url)("yaml") as typeof import("yaml");
  return { text, spec: yaml.parse(text) as T };
}
