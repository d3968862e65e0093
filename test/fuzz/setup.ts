/** The fuzzer's seed and case counts (FUZZ_SEED, FUZZ_SCALE), and the operations of openapi.yaml it covers. */
import { SPEC_PATH } from "../../app.ts";
import { loadSpec, operationsOf } from "../arbitraries/spec.ts";

export const SEED = Number(process.env.FUZZ_SEED ?? 20261122);
/** FUZZ_SCALE=10 runs ten times the cases, for a deeper search than the gate's. */
export const SCALE = Number(process.env.FUZZ_SCALE ?? 1);
const runs = (n: number) => Math.ceil(n * SCALE);
export const RUNS = {
  valid: runs(100),
  invalid: runs(150),
  raw: runs(60),
  depth: runs(15),
  read: runs(60),
  methods: runs(80),
  big: runs(8),
};

export const spec = loadSpec(SPEC_PATH);
export const operations = operationsOf(spec);
/**
 * The OTLP operations and the AgentOps v3/v4 calls around them are fuzzed by fuzz/otlp.ts: their
 * bodies are protobuf too, and OTLP failures are a google.rpc.Status, not a G2 body.
 */
const AROUND_OTLP = new Set(["createOtlpToken", "uploadLogs"]);
export const otlpOperations = operations.filter((op) => op.otlp !== undefined || AROUND_OTLP.has(op.operationId));
const generic = operations.filter((op) => !otlpOperations.includes(op));
export const withBody = generic.filter((op) => op.body !== undefined);
export const withoutBody = generic.filter((op) => op.body === undefined);
