#!/usr/bin/env node
// The `agentmon` command. It runs the bundle dist/agentmon.mjs (built by `npm install`, and
// rebuilt here in about 100 ms whenever a source file is newer); if it cannot be built, it falls
// back to running the TypeScript sources through tsx, which starts several times slower.
// No V8 flag is given here or on the command line: any V8 flag set before the start makes V8
// refuse Node's cached compilation of its own modules, on the main thread and on the storage
// thread (docs/decisions/039-no-v8-flags-at-start.md). The heap's growth is set once serving.
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
