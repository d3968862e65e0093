/** Fuzz properties at the limits of L1 and G4: nesting around 100 levels, bodies around 5 MiB. */
import { gzipSync } from "node:zlib";
import fc from "fast-check";
import type { Test } from "tap";
import { nested } from "../arbitraries/json.ts";
import type { Operation } from "../arbitraries/spec.ts";
import { textArb } from "../arbitraries/strings.ts";
import { depthOf, setAt } from "../arbitraries/values.ts";
import { MIB, storedSession } from "../helper.ts";
import { fuzzApp, send } from "./app.ts";
import { checkAnswer, checkRefused, fail, property, stillServes } from "./checks.ts";
import { hasPlan, validBodies } from "./plans.ts";
import { idArb, own } from "./rules.ts";
import { operations, RUNS, withBody } from "./setup.ts";

export async function nestingAroundTheLimit(t: Test) {
  for (const op of withBody) {
    t.test(`${op.operationId}: ${op.method} ${op.path}`, async (t) => {
      const ctx = await fuzzApp(t);
      const cases = fc
        .tuple(validBodies(op, ctx), fc.integer({ min: 94, max: 104 }))
        .map(([body, levels]) => setAt(body, ["deep"], nested(levels)));
      await property(
        t,
        `${op.operationId} depth`,
        cases,
        RUNS.depth,
        async (body) => {
          const payload = JSON.stringify(body);
          const deep = depthOf(body) > 100;
          if (deep) {
            await checkRefused(
              ctx,
              op,
              payload,
              { status: 400, error: "Bad request" },
              `${op.operationId}, depth ${depthOf(body)}`,
            );
            return;
          }
          const res = await send(ctx, op, payload);
          checkAnswer(res, op.operationId);
          if (hasPlan(op) && res.statusCode !== 200)
            fail(`depth ${depthOf(body)}: ${res.statusCode} ${res.body.slice(0, 300)}`);
        },
        op,
      );
      await stillServes(t, ctx);
    });
  }
}

export async function bodiesNearTheSizeLimit(t: Test) {
  const ctx = await fuzzApp(t);
  const create = operations.find((op) => op.operationId === "createSession") as Operation;
  const cases = fc.record({
    id: idArb,
    chunk: textArb(1, 8),
    delta: fc.integer({ min: -64, max: 64 }),
    gzip: fc.boolean(),
  });
  await property(t, "5 MiB", cases, RUNS.big, async ({ id, chunk, delta, gzip }) => {
    const target = 5 * MIB + delta;
    const body = { session: { id, pad: "" } };
    const empty = Buffer.byteLength(JSON.stringify(body));
    const unit = Buffer.byteLength(JSON.stringify(chunk)) - 2;
    body.session.pad = chunk.repeat(Math.max(0, Math.floor((target - empty - 64) / unit)));
    body.session.pad += "x".repeat(target - Buffer.byteLength(JSON.stringify(body)));
    const text = JSON.stringify(body);
    if (Buffer.byteLength(text) !== target) fail(`built ${Buffer.byteLength(text)} bytes, not ${target}`);
    const payload = gzip ? gzipSync(text) : text;
    const headers = gzip ? { "content-encoding": "gzip" } : {};
    const label = `${target} bytes${gzip ? " gzipped" : ""}`;
    if (delta > 0) {
      await checkRefused(ctx, create, payload, { status: 413, error: "Payload too large" }, label, headers);
      return;
    }
    const before = await storedSession(ctx.api.store, id);
    const res = await send(ctx, create, payload, headers);
    checkAnswer(res, label);
    if (res.statusCode !== 200) fail(`${label}: ${res.statusCode} ${res.body.slice(0, 300)}`);
    const stored = await storedSession(ctx.api.store, id);
    if (before === undefined && own(stored, "pad") !== body.session.pad)
      fail(`${label}: the padding was not stored whole`);
  });
  await stillServes(t, ctx);
}
