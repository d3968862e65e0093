/**
 * Fuzzing of the OTLP operations (otlp.md T1-T10), which the generic properties leave out: their
 * failures are a google.rpc.Status, not a G2 body, and their bodies are protobuf too. Bodies are
 * the real clients' requests (test/fixtures/otlp) broken at random: bytes flipped, cut, spliced,
 * values of the OTLP/JSON replaced at random paths, wrong media types and codings; plus random
 * bytes and random JSON. Every answer: no 5xx; a failure is a Status in the request's media type
 * (JSON when the media type was refused) that leaks nothing; a 400 changed nothing (T10); a 200
 * is the empty answer or a partial success. The token and logs-upload calls get random bodies and
 * headers, and answer G2.
 */
import { readdirSync, readFileSync } from "node:fs";
import { gzipSync } from "node:zlib";
import fc from "fast-check";
import type { LightMyRequestResponse } from "fastify";
import type { Test } from "tap";
import type { Operation } from "../arbitraries/spec.ts";
import { isObject } from "../arbitraries/values.ts";
import { API_KEY, leaksNothing } from "../helper.ts";
import { decodeStatus, decodeTraceResponse } from "../otlp.encode.ts";
import { type Ctx, fuzzApp } from "./app.ts";
import { checkAnswer, fail, property, stillServes } from "./checks.ts";
import { otlpOperations, RUNS } from "./setup.ts";

const FIXTURES = new URL("../fixtures/otlp/", import.meta.url);
const bodies = (suffix: string) =>
  readdirSync(FIXTURES, { recursive: true, encoding: "utf8" })
    .filter((name) => name.endsWith(suffix))
    .sort()
    .map((name) => readFileSync(new URL(name, FIXTURES)));
const PROTOBUF = bodies(".body.bin");
const JSON_BODIES = [...bodies(".body.otlp.json"), ...bodies("traces.body.json")].map(
  (b) => JSON.parse(b.toString("utf8")) as unknown,
);

/** A protobuf body: a fixture broken by flips, cuts and splices, or random bytes. */
const protobufBody = fc.oneof(
  fc.uint8Array({ maxLength: 300 }).map((bytes) => Buffer.from(bytes)),
  fc
    .tuple(
      fc.constantFrom(...PROTOBUF),
      fc.array(fc.tuple(fc.nat(), fc.integer({ min: 0, max: 255 })), { maxLength: 8 }),
      fc.option(fc.nat(), { nil: undefined }),
    )
    .map(([base, flips, cut]) => {
      const bytes = Buffer.from(base);
      for (const [at, value] of flips) bytes[at % bytes.length] = value;
      return cut === undefined ? bytes : bytes.subarray(0, cut % (bytes.length + 1));
    }),
);

/** Every path of a JSON value (arrays and objects), for replacing one at random. */
function paths(value: unknown, at: (string | number)[] = [], out: (string | number)[][] = []) {
  out.push(at);
  if (Array.isArray(value)) {
    for (const [i, item] of value.entries()) paths(item, [...at, i], out);
  } else if (isObject(value)) for (const key of Object.keys(value)) paths(value[key], [...at, key], out);
  return out;
}
function replaced(value: unknown, path: (string | number)[], by: unknown): unknown {
  if (path.length === 0) return by;
  const [head, ...rest] = path as [string | number, ...(string | number)[]];
  const copy = (Array.isArray(value) ? [...value] : { ...(value as object) }) as Record<string | number, unknown>;
  copy[head] = replaced(copy[head], rest, by);
  return copy;
}

/** An OTLP/JSON body: a fixture with values replaced at random paths, or any JSON at all. */
const jsonBody = fc.oneof(
  fc.jsonValue().map((v) => JSON.stringify(v)),
  fc
    .tuple(
      fc.constantFrom(...JSON_BODIES),
      fc.array(fc.tuple(fc.nat(), fc.jsonValue({ maxDepth: 2 })), { minLength: 1, maxLength: 4 }),
    )
    .map(([base, changes]) => {
      let body = base;
      for (const [pick, by] of changes) {
        const all = paths(body);
        body = replaced(body, all[pick % all.length] as (string | number)[], by);
      }
      return JSON.stringify(body);
    }),
);

const request = fc.oneof(
  fc.record({ type: fc.constant("application/x-protobuf"), body: protobufBody }),
  fc.record({ type: fc.constant("application/json"), body: jsonBody.map((text) => Buffer.from(text)) }),
  fc.record({
    type: fc.constantFrom("text/plain", "application/protobuf", "APPLICATION/JSON; charset=utf-8", ""),
    body: jsonBody.map((text) => Buffer.from(text)),
  }),
);

/** A Status in the request's media type (JSON when the media type was refused), leaking nothing. */
function checkStatus(res: LightMyRequestResponse, type: string, label: string) {
  const protobuf = /^application\/x-protobuf/i.test(type) && res.statusCode !== 415;
  const status = protobuf ? decodeStatus(res.rawPayload) : (res.json() as { code?: unknown; message?: unknown });
  if (protobuf && !/^application\/x-protobuf/.test(String(res.headers["content-type"]))) {
    fail(`${label}: a protobuf request's failure is not protobuf`);
  }
  if (typeof status.code !== "number" || status.code === 0 || typeof status.message !== "string") {
    fail(`${label}: not a google.rpc.Status: ${res.body.slice(0, 300)}`);
  }
  if (!leaksNothing(String(status.message))) fail(`${label}: the Status leaks internals: ${status.message}`);
}

async function exportNever5xx(t: Test, ctx: Ctx, op: Operation) {
  const arb = fc.tuple(request, fc.boolean());
  await property(
    t,
    `${op.operationId}: broken and random bodies`,
    arb,
    RUNS.raw * 3,
    async ([{ type, body }, gzip]) => {
      const before = ctx.digest();
      const res = await ctx.api.inject({
        method: "POST",
        url: op.path,
        headers: {
          authorization: `Bearer ${API_KEY}`,
          ...(type === "" ? {} : { "content-type": type }),
          ...(gzip ? { "content-encoding": "gzip" } : {}),
        },
        payload: gzip ? gzipSync(body) : body,
      });
      const label = `${op.operationId} ${type}${gzip ? " gzip" : ""} (${body.length} bytes)`;
      if (res.statusCode >= 500) fail(`a 5xx: ${label}: ${res.statusCode} ${res.body.slice(0, 300)}`);
      if (res.statusCode >= 400) {
        checkStatus(res, type, label);
        if (ctx.digest() !== before) fail(`${label}: a refused request changed the database`);
        return;
      }
      if (res.statusCode !== 200) fail(`${label}: ${res.statusCode}`);
      if (op.operationId.startsWith("exportTraces") && /protobuf/i.test(String(res.headers["content-type"]))) {
        decodeTraceResponse(res.rawPayload); // decodes, or throws
      }
    },
    op,
  );
}

/** The token and the logs upload: random bodies and headers; G2 answers, never a 5xx. */
async function v3v4Never5xx(t: Test, ctx: Ctx, op: Operation) {
  const body = fc.oneof(
    fc.jsonValue(),
    fc.record({ api_key: fc.oneof(fc.constant(API_KEY), fc.uuid(), fc.string()) }),
    fc.record({ body: fc.oneof(fc.string(), fc.jsonValue()) }),
  );
  const traceId = fc.oneof(
    fc.string(),
    fc.bigInt({ min: 0n, max: 2n ** 130n }).map(String),
    fc.stringMatching(/^[0-9a-fA-F]{0,40}$/),
  );
  await property(
    t,
    `${op.operationId}: random bodies and headers`,
    fc.tuple(body, traceId),
    RUNS.raw,
    async ([json, trace]) => {
      const res = await ctx.api.inject({
        method: "POST",
        url: op.path,
        headers: { authorization: `Bearer ${API_KEY}`, "content-type": "application/json", "trace-id": trace },
        payload: JSON.stringify(json),
      });
      checkAnswer(res, `${op.operationId} ${JSON.stringify(json).slice(0, 80)} trace-id ${trace.slice(0, 40)}`, op);
    },
    op,
  );
}

export async function otlpNever5xx(t: Test) {
  const ctx = await fuzzApp(t);
  for (const op of otlpOperations) {
    if (op.otlp) await exportNever5xx(t, ctx, op);
    else await v3v4Never5xx(t, ctx, op);
  }
  await stillServes(t, ctx);
}
