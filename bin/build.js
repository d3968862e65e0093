// Bundles agentmon into dist/agentmon.mjs, and its storage thread (db/thread.ts) into
// dist/store-worker.mjs, with esbuild, so that `agentmon` starts without a TypeScript loader and
// without resolving hundreds of package files one by one (issue 3, B4: both cost more than a
// whole bare Fastify start). Everything is bundled but better-sqlite3 (a native addon), yaml
// (needed only when the parsed spec below is stale), @grpc/grpc-js (loaded only for the OTLP/gRPC
// port) and the OpenAPI meta-schema validator (see shims/). What the sources import with import()
// is a chunk of its own (dist/chunk-*.mjs), loaded only then (docs/decisions/034-cold-start.md).
// The parsed openapi.yaml is written beside it (lib/spec.ts), with fastify-openapi-glue's routes
// for it (shims/openapi-glue-parser.js). `npm install` builds it
// (the `prepare` script) and bin/agentmon.js rebuilds it whenever one of its inputs is newer.
import { createHash } from "node:crypto";
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { isDeepStrictEqual } from "node:util";

const ROOT = new URL("../", import.meta.url);
export const OUT = new URL("dist/agentmon.mjs", ROOT);
const INPUTS = new URL("dist/inputs.json", ROOT);

/** True when the bundle is missing, or, in a clone, older than one of the files it was built from. */
export function isStale() {
  try {
    const built = statSync(OUT).mtimeMs;
    // An installed package (npm never packs a lockfile) runs the bundle it was packed with: the
    // times of its files are those of the unpacking, not of their edits.
    if (!existsSync(new URL("package-lock.json", ROOT))) return false;
    const inputs = JSON.parse(readFileSync(INPUTS, "utf8"));
    return inputs.some((path) => statSync(new URL(path, ROOT)).mtimeMs > built);
  } catch {
    return true; // no bundle yet, or an input is gone
  }
}

export async function build() {
  const esbuild = await import("esbuild");
  // The chunks of an earlier build: their names carry a hash of their content, so new ones would
  // pile up beside them.
  if (existsSync(new URL("dist/", ROOT))) {
    for (const name of readdirSync(new URL("dist/", ROOT))) {
      if (name.startsWith("chunk-")) rmSync(new URL(`dist/${name}`, ROOT));
    }
  }
  const result = await esbuild.build({
    // The server, and the storage thread's worker (db/thread.ts), which must be a file of its own.
    entryPoints: {
      agentmon: new URL("server.ts", ROOT).pathname,
      "store-worker": new URL("db/sqlite/thread-worker.ts", ROOT).pathname,
    },
    absWorkingDir: new URL(".", ROOT).pathname,
    bundle: true,
    platform: "node",
    format: "esm",
    target: "node20",
    // better-sqlite3 is a native addon; yaml is loaded only when dist/openapi.json is stale;
    // @grpc/grpc-js only when AGENTMON_OTLP_GRPC_PORT is set (decision 028): left out, a server
    // without that port neither parses nor loads it; @node-rs/argon2 (passwords, decision 035) is a
    // native addon too, loaded from node_modules.
    external: ["better-sqlite3", "yaml", "@grpc/grpc-js", "@node-rs/argon2"],
    outdir: new URL("dist/", ROOT).pathname,
    outExtension: { ".js": ".mjs" },
    // What a dynamic import() loads (pg, Redis, the OTLP decoders, /docs...) is a chunk of its
    // own, read and compiled only when first imported, not at every start (decision 034). Chunks
    // sit beside the entry points: lib/paths.ts finds the repository root as "../" of its module.
    splitting: true,
    chunkNames: "chunk-[hash]",
    sourcemap: "linked",
    // Whitespace, comments and syntax minified, names kept (stack traces still name functions;
    // the linked source maps give the lines): V8 parses every loaded byte at every start, and the
    // app's modules loaded in 80 ms instead of 115 (B4, decision 041).
    minifyWhitespace: true,
    minifySyntax: true,
    metafile: true,
    logLevel: "warning",
    // Bundled CommonJS packages call require() for Node's own modules.
    banner: {
      js: 'import { createRequire as __agentmonRequire } from "node:module"; const require = __agentmonRequire(import.meta.url);',
    },
    plugins: [
      {
        // GET /docs's plugins load yaml as they are registered; bin/shims/lazy-yaml.cjs defers it.
        name: "lazy-yaml-for-docs",
        setup(b) {
          b.onResolve({ filter: /^yaml$/ }, (args) =>
            /node_modules\/@fastify\/swagger(-ui)?\//.test(args.importer)
              ? { path: new URL("bin/shims/lazy-yaml.cjs", ROOT).pathname }
              : undefined,
          );
        },
      },
      {
        // fast-jwt's ASN.1 shapes (PEM keys, never HMAC's) are defined on first use: bin/shims/lazy-asn1.cjs.
        name: "lazy-asn1-for-jwt",
        setup(b) {
          b.onResolve({ filter: /^asn1\.js$/ }, (args) =>
            /node_modules\/fast-jwt\//.test(args.importer)
              ? { path: new URL("bin/shims/lazy-asn1.cjs", ROOT).pathname }
              : undefined,
          );
        },
      },
      {
        // fastify-openapi-glue's parser, with its answer for openapi.yaml kept by this build.
        name: "openapi-glue-parser",
        setup(b) {
          b.onResolve({ filter: /^\.\/lib\/Parser\.js$/ }, (args) =>
            /node_modules\/fastify-openapi-glue\/index\.js$/.test(args.importer)
              ? { path: new URL("bin/shims/openapi-glue-parser.js", ROOT).pathname }
              : undefined,
          );
        },
      },
      {
        name: "openapi-schema-validator-shim",
        setup(b) {
          b.onResolve({ filter: /^@seriousme\/openapi-schema-validator$/ }, () => ({
            path: new URL("bin/shims/openapi-schema-validator.js", ROOT).pathname,
          }));
        },
      },
    ],
  });
  mkdirSync(new URL("dist/", ROOT), { recursive: true });
  // The parsed spec, for lib/spec.ts; checked against the SHA-256 of openapi.yaml at every start.
  const { parse } = await import("yaml");
  const text = readFileSync(new URL("openapi.yaml", ROOT), "utf8");
  const sha256 = createHash("sha256").update(text).digest("hex");
  const spec = parse(text);
  writeFileSync(new URL("dist/openapi.json", ROOT), JSON.stringify({ sha256, spec, glue: await glueRoutes(spec) }));
  const inputs = Object.keys(result.metafile.inputs).filter((path) => !path.startsWith("node_modules/"));
  writeFileSync(INPUTS, JSON.stringify([...inputs, "openapi.yaml", "package-lock.json"]));
}

/**
 * What fastify-openapi-glue's parser (the real one, with the full validator) makes of `spec` with
 * the options app.ts leaves at their defaults, for bin/shims/openapi-glue-parser.js; nothing when
 * it cannot be made here or would not survive JSON (the bundle then parses at start, as before).
 */
async function glueRoutes(spec) {
  const options = { addEmptySchema: false, addCookieSchema: false };
  try {
    const { Parser } = await import(new URL("node_modules/fastify-openapi-glue/lib/Parser.js", ROOT).href);
    const parsed = await new Parser().parse(structuredClone(spec), options);
    // Its one Set (the request media types) as a list; lib/spec.ts makes it a Set again.
    const routes = { ...parsed, contentTypes: [...parsed.contentTypes] };
    const again = JSON.parse(JSON.stringify(routes));
    if (!isDeepStrictEqual({ ...again, contentTypes: new Set(again.contentTypes) }, parsed)) return undefined;
    return { options, routes: shareRepeats(forRuntime(routes)) };
  } catch {
    return undefined;
  }
}

/** Keywords whose value is data (an instance, not a schema): nothing inside them is an annotation. */
const DATA_KEYWORDS = new Set(["default", "enum", "const"]);
/** Keywords whose members are names (of properties, of definitions), each holding a schema. */
const NAME_MAPS = new Set(["properties", "patternProperties", "definitions", "$defs", "dependentSchemas"]);
/** What only a reader of the document uses: Fastify, ajv and fast-json-stringify ignore them. */
const ANNOTATIONS = new Set(["description", "summary", "example", "examples"]);

/**
 * The parser's routes with what the server never reads taken out, so that a start reads and parses
 * half as much (B4, decision 041): each route's `openapiSource` (the operation as written; the
 * plugin registers only the method, url, schema and config), and the schemas' descriptions,
 * summaries and examples (54 % of the rest). A member of `properties` is a name, not an
 * annotation, and is kept whatever it is called; a value under `default`, `enum` or `const` is
 * data and kept whole. An object shared by the parser stays shared (one copy made for it).
 */
export function forRuntime(parsed) {
  const made = new Map();
  const schema = (v, names = false) => {
    if (v === null || typeof v !== "object") return v;
    let copy = made.get(v);
    if (copy !== undefined) return copy;
    copy = Array.isArray(v) ? [] : {};
    made.set(v, copy);
    if (Array.isArray(v)) for (const item of v) copy.push(schema(item));
    else {
      for (const [key, item] of Object.entries(v)) {
        if (!names && ANNOTATIONS.has(key) && (typeof item !== "object" || key.startsWith("example"))) continue;
        const value = DATA_KEYWORDS.has(key) && !names ? item : schema(item, !names && NAME_MAPS.has(key));
        Object.defineProperty(copy, key, { value, writable: true, enumerable: true, configurable: true });
      }
    }
    return copy;
  };
  return {
    ...parsed,
    routes: parsed.routes.map(({ openapiSource: _, ...route }) => ({ ...route, schema: schema(route.schema) })),
  };
}

/**
 * `value` as JSON that keeps which objects are one and the same: the parser resolves every $ref to
 * the very object it names, so one schema sits under many routes (792 times for 69 routes), and
 * written out plainly each is a copy: 1.6 MB to read and parse at every start instead of 0.2 MB.
 * An object met a second time is written once in `shared` and named by `{"$shared": index}` at
 * each place; lib/spec.ts puts the same object back at each. Answers `{ shared, value }`.
 */
export function shareRepeats(value) {
  const seen = new Map();
  const count = (v) => {
    if (v === null || typeof v !== "object") return;
    // The name that marks a shared object must mean nothing else (glueRoutes then keeps no routes).
    if (Object.hasOwn(v, "$shared")) throw new Error("a $shared member in the parsed routes");
    const n = seen.get(v) ?? 0;
    seen.set(v, n + 1);
    if (n === 0) for (const item of Object.values(v)) count(item);
  };
  count(value);
  const shared = [];
  const slots = new Map();
  const write = (v) => {
    if (v === null || typeof v !== "object") return v;
    if (seen.get(v) > 1) {
      let slot = slots.get(v);
      if (slot === undefined) {
        slot = shared.length;
        slots.set(v, slot);
        shared.push(null);
        shared[slot] = children(v);
      }
      return { $shared: slot };
    }
    return children(v);
  };
  const children = (v) =>
    Array.isArray(v) ? v.map(write) : Object.fromEntries(Object.entries(v).map(([k, item]) => [k, write(item)]));
  return { shared, value: write(value) };
}

// `node bin/build.js`: the prepare script.
if (import.meta.url === `file://${process.argv[1]}`) await build();
