/**
 * What every fuzz case checks (no 5xx, a G2 body that leaks nothing, Object.prototype untouched,
 * a refused call changes nothing), and how a property runs: the fixed seed, one tap assertion per
 * property, and the count of cases per operation that the coverage test reads.
 */
import fc from "fast-check";
import type { LightMyRequestResponse } from "fastify";
import type { Test } from "tap";
import type { Operation } from "../arbitraries/spec.ts";
import { canonical, isObject } from "../arbitraries/values.ts";
import { leaksNothing, MIB } from "../helper.ts";
import { type Ctx, send } from "./app.ts";
import { SEED } from "./setup.ts";

export const fail = (message: string): never => {
  throw new Error(message);
};
export const show = (value: unknown, max = 300) => {
  const text = typeof value === "string" ? JSON.stringify(value) : canonical(value);
  return text.length > max ? `${text.slice(0, max)}… (${text.length} chars)` : text;
};
const prototypeNames = Object.getOwnPropertyNames(Object.prototype).sort().join();

/**
 * What every answer must be: a 2xx, a 4xx or a 3xx the operation documents (304), never a 5xx;
 * a G2 body on a 4xx that leaks nothing; and Object.prototype untouched.
 */
export function checkAnswer(res: LightMyRequestResponse, label: string, op?: Operation): void {
  const where = `${label}: ${res.statusCode} ${res.body.slice(0, 400)}`;
  if (
    ({} as Record<string, unknown>).polluted !== undefined ||
    Object.getOwnPropertyNames(Object.prototype).sort().join() !== prototypeNames
  ) {
    fail(`Object.prototype was polluted (${label})`);
  }
  if (res.statusCode >= 500) fail(`a 5xx: ${where}`);
  if (res.statusCode >= 300 && res.statusCode < 400 && !op?.responses.includes(res.statusCode)) {
    fail(`an undocumented ${res.statusCode}: ${where}`);
  }
  if (res.statusCode < 400) return;
  if (!/^application\/json/.test(String(res.headers["content-type"]))) fail(`a 4xx that is not JSON: ${where}`);
  const body = res.json();
  if (!isObject(body)) fail(`a 4xx body that is not an object: ${where}`);
  const keys = Object.keys(body).sort().join();
  if (keys !== "error,message" && keys !== "details,error,message") fail(`a 4xx body with keys ${keys}: ${where}`);
  if (typeof body.error !== "string" || body.error === "" || typeof body.message !== "string" || body.message === "") {
    fail(`a 4xx without error and message strings: ${where}`);
  }
  if (body.details !== undefined) {
    const ok =
      Array.isArray(body.details) &&
      body.details.every(
        (d: unknown) =>
          isObject(d) &&
          Object.keys(d).sort().join() === "message,path" &&
          typeof d.path === "string" &&
          typeof d.message === "string",
      );
    if (!ok) fail(`details are not [{path, message}]: ${where}`);
  }
  if (!leaksNothing(res.body)) fail(`a 4xx that leaks internals: ${where}`);
}

export interface Expect {
  status: number;
  error?: string;
  /** The one G2 detail path the answer must name, when the change has one. */
  path?: string | undefined;
}

/** A refused call: the expected status and G2 body, and not one row of the database changed (G7). */
export async function checkRefused(
  ctx: Ctx,
  op: Operation,
  payload: string | Buffer,
  expect: Expect,
  label: string,
  headers: Record<string, string | undefined> = {},
) {
  const before = ctx.digest();
  const res = await send(ctx, op, payload, headers);
  checkAnswer(res, label);
  const status = expect.status === 400 && Buffer.byteLength(payload) > 5 * MIB ? 413 : expect.status;
  if (res.statusCode !== status) fail(`${label}: expected ${status}, got ${res.statusCode} ${res.body.slice(0, 400)}`);
  if (status === expect.status) {
    const body = res.json();
    if (expect.error !== undefined && body.error !== expect.error)
      fail(`${label}: expected error "${expect.error}", got ${res.body.slice(0, 400)}`);
    if (expect.path !== undefined) {
      const paths = (body.details ?? []).map((d: { path: string }) => d.path);
      if (paths.length !== 1 || paths[0] !== expect.path) {
        fail(`${label}: expected one detail at ${JSON.stringify(expect.path)}, got ${res.body.slice(0, 600)}`);
      }
    }
  }
  if (ctx.digest() !== before) fail(`${label}: a refused call changed the database`);
}

export let counted = 0;
/** Cases run per operation, to prove that every operation of the spec was reached. */
export const perOperation = new Map<string, number>();

/**
 * Runs a property with the fixed seed: one tap assertion per property, and on failure the
 * shrunk counterexample (shrinking bounded by a count of steps, each being a request).
 */
export async function property<T>(
  t: Test,
  name: string,
  arb: fc.Arbitrary<T>,
  numRuns: number,
  check: (value: T) => Promise<void>,
  op?: Operation,
) {
  const details = await fc.check(fc.asyncProperty(fc.limitShrink(arb, 200), check), { seed: SEED, numRuns });
  if (details.failed) {
    t.comment(
      `${String(details.errorInstance).slice(0, 3000)}\n${(fc.defaultReportMessage(details) ?? "").slice(0, 5000)}`,
    );
  }
  t.notOk(details.failed, `${name}: ${details.numRuns} cases`);
  counted += details.numRuns;
  if (op !== undefined) perOperation.set(op.operationId, (perOperation.get(op.operationId) ?? 0) + details.numRuns);
}

export async function stillServes(t: Test, ctx: Ctx) {
  const res = await ctx.api.inject({ method: "GET", url: "/healthz" });
  t.equal(res.statusCode, 200, "the server still answers /healthz");
}

export function sameValue(actual: unknown, expected: unknown, what: string): string | undefined {
  return canonical(actual) === canonical(expected)
    ? undefined
    : `${what}: read ${show(actual, 1500)}, expected ${show(expected, 1500)}`;
}
