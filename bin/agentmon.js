#!/usr/bin/env node
// The `agentmon` command. It runs the bundle dist/agentmon.mjs (built by `npm install`, and
// rebuilt here in about 100 ms whenever a source file is newer); if it cannot be built, it falls
// back to running the TypeScript sources through tsx, which starts several times slower.
import { setFlagsFromString } from "node:v8";
import { build, isStale, OUT } from "./build.js";

// Memory (issue 3, S5): V8 lets the old generation grow by half again before each full
// collection; a server holding ~10 MB of live objects then sits at 50-60 MB of heap. Growing by a
// fifth keeps the resident size near what is live, at no throughput cost measured. Read whenever
// the heap limit is recomputed, so it takes effect set here, before anything is loaded.
setFlagsFromString("--heap-growing-percent=20");

let entry = OUT.href;
if (isStale()) {
  try {
    await build();
  } catch (error) {
    process.stderr.write(`agentmon: cannot bundle the sources (${error.message}); running them through tsx\n`);
    const { register } = await import("tsx/esm/api");
    register();
    entry = new URL("../server.ts", import.meta.url).href;
  }
}
const { main } = await import(entry);
const code = await main(process.argv.slice(2), process.env);
if (code !== 0) process.exit(code);
