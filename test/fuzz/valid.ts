/** Fuzz property: valid bodies of every operation are answered 200 and read back intact. */
import type { Test } from "tap";
import { fresh, fuzzApp, send } from "./app.ts";
import { checkAnswer, fail, property, stillServes } from "./checks.ts";
import type { Body } from "./plan.ts";
import { hasPlan, inputs, planOf, validBody } from "./plans.ts";
import { RUNS, withBody } from "./setup.ts";

export async function validBodiesAreReadBack(t: Test) {
  for (const op of withBody) {
    t.test(`${op.operationId}: ${op.method} ${op.path}`, async (t) => {
      const app = await fuzzApp(t);
      const plan = planOf(op);
      if (!hasPlan(op)) t.comment(`${op.operationId} has no read-back oracle yet: generic checks only`);
      await property(
        t,
        `${op.operationId} valid`,
        inputs(op),
        RUNS.valid,
        async (input) => {
          // JWT operations write into a new session each time, so read-backs stay small.
          const ctx = op.security === "jwt" ? await fresh(app) : app;
          const payload = JSON.stringify(validBody(op, input, ctx));
          const sent = JSON.parse(payload) as Body;
          const before = await plan.before(ctx, sent);
          const res = await send(ctx, op, payload);
          checkAnswer(res, op.operationId);
          if (hasPlan(op) && res.statusCode !== 200)
            fail(`a valid body got ${res.statusCode}: ${res.body.slice(0, 600)}`);
          if (res.statusCode === 200 && res.json().status !== "success") fail(`G1: ${res.body.slice(0, 300)}`);
          const problem = res.statusCode === 200 ? await plan.readback(ctx, sent, res, before) : undefined;
          if (problem) fail(`${op.operationId} read-back: ${problem}`);
        },
        op,
      );
      await stillServes(t, app);
    });
  }
}
