#!/usr/bin/env node
// The `agentmon` command. It runs the bundle dist/agentmon.mjs (built by `npm install`, and
// rebuilt here in about 100 ms whenever a source file is newer); if it cannot be built, it falls
// back to running the TypeScript sources through tsx, which starts several times slower.
import { build, isStale, OUT } from "./build.js";

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
