#!/usr/bin/env node
// The `agentmon` command. The sources are TypeScript, run through tsx's loader.
import { register } from "tsx/esm/api";

register();
const { main } = await import("../server.ts");
const code = await main(process.argv.slice(2), process.env);
if (code !== 0) process.exit(code);
