/**
 * Property-based fuzzing (fast-check) of every operation in openapi.yaml, generated from its
 * schemas by test/arbitraries/, through real HTTP (app.inject) on a real SQLite file.
 *
 * For every operation with a JSON body:
 * - valid bodies (the schema's, made contract-valid by the fix-ups below) are answered 200 and
 *   read back intact through the store: strings byte for byte, unknown fields as sent;
 * - a valid body with one change that breaks the schema or the contract is answered 400 (or the
 *   403/404/409 the contract names) with a G2 body naming the changed path, and the database is
 *   unchanged, byte for byte;
 * - raw bodies (garbage text and bytes, wrong content types, gzip garbage, bad encodings, odd
 *   number tokens, bad credentials) never get a 5xx, and a refused one changes nothing;
 * - nesting around the 100-level limit is 200 up to it and 400 past it; bodies near 5 MiB are
 *   200 up to the limit and 413 past it.
 * Operations without a body get fuzzed path parameters, query strings and headers, and every
 * path gets the methods it does not declare (405). Operations added to openapi.yaml later are
 * covered by the generic parts automatically; the read-back oracles exist for the write
 * operations known today.
 *
 * Every case asserts: no 5xx; a 4xx is a JSON `{error, message[, details]}` that leaks nothing;
 * Object.prototype is not polluted. After each property the server still answers /healthz.
 * The seed is fixed (FUZZ_SEED overrides it) and printed, so any failure can be replayed;
 * FUZZ_SCALE multiplies the number of cases for a longer search.
 *
 * This file runs every property in one process, in this order, so that the coverage test at the
 * end sees the cases of all of them: the properties are in test/fuzz/ (valid.ts, invalid.ts,
 * raw.ts, limits.ts, requests.ts, otlp.ts for the OTLP operations), with what they share (setup.ts, rules.ts, app.ts, checks.ts,
 * plans.ts and the plans per operation); the generators are test/arbitraries/.
 */
import fc from "fast-check";
import t from "tap";
import { eventView } from "../domain/views.ts";
import { utcOf } from "./arbitraries/timestamps.ts";
import { clone, pickFrom, setAt } from "./arbitraries/values.ts";
import { fuzzApp } from "./fuzz/app.ts";
import { checkAnswer, counted, fail, perOperation, property, show } from "./fuzz/checks.ts";
import { oneChangeAwayIsRefused } from "./fuzz/invalid.ts";
import { bodiesNearTheSizeLimit, nestingAroundTheLimit } from "./fuzz/limits.ts";
import { otlpNever5xx } from "./fuzz/otlp.ts";
import { inputs } from "./fuzz/plans.ts";
import { rawBodiesNever5xx } from "./fuzz/raw.ts";
import { undeclaredMethodsAre405, withoutBodyNever5xx } from "./fuzz/requests.ts";
import { conv, own } from "./fuzz/rules.ts";
import { operations, SCALE, SEED, withBody, withoutBody } from "./fuzz/setup.ts";
import { validBodiesAreReadBack } from "./fuzz/valid.ts";
import { API_KEY, inspect } from "./helper.ts";

// One process runs every property (see above): about 90 s on a quiet 2-core machine, over 120 s
// (.taprc) when it is shared. A time limit, not a speed check: this is no assertion on timing.
t.setTimeout(600_000);

// ---------------------------------------------------------------------------------- the properties

t.comment(`fast-check seed ${SEED} (set FUZZ_SEED to replay another), scale ${SCALE}`);

t.test("valid bodies of every operation are answered 200 and read back intact", validBodiesAreReadBack);
t.test("bodies one change away from valid are refused with G2 and change nothing", oneChangeAwayIsRefused);
t.test("raw bodies, content types, encodings and credentials never get a 5xx", rawBodiesNever5xx);
t.test("nesting around the 100-level limit: 200 up to it, 400 past it (L1)", nestingAroundTheLimit);
t.test(
  "bodies near the 5 MiB limit: 200 up to it with the string stored whole, 413 past it (L1, G4)",
  bodiesNearTheSizeLimit,
);
t.test(
  "operations without a body: fuzzed path parameters, query strings and headers never get a 5xx; reads write nothing",
  withoutBodyNever5xx,
);
t.test("every path answers the methods it does not declare with 405 and Allow (G3)", undeclaredMethodsAre405);
t.test("OTLP bodies, broken real ones and random ones, never get a 5xx; failures are a Status (T10)", otlpNever5xx);

// ---------------------------------------------------------------------------------- the generators themselves

t.test("the generators agree with the schemas: valid bodies match, schema breaks do not", async (t) => {
  for (const op of withBody) {
    const cases = inputs(op).chain(([body]) => {
      const breaks = conv.mutations(op.body, body).filter((m) => m.expectPath !== undefined);
      const changed =
        breaks.length === 0
          ? fc.constant(undefined)
          : pickFrom(...breaks).chain((m) => m.value.map((v) => setAt(body, m.path, v)));
      return fc.tuple(fc.constant(body), changed);
    });
    await property(t, `${op.operationId} generators`, cases, 40, async ([body, changed]) => {
      if (!conv.matches(op.body, body)) fail(`a generated body breaks the schema: ${show(body, 2000)}`);
      if (changed !== undefined && conv.matches(op.body, clone(changed)))
        fail(`a schema break still matches: ${show(changed, 2000)}`);
    });
  }
  t.equal(
    utcOf("2026-11-22T10:39:43.640361+05:30"),
    "2026-11-22T05:09:43.640361Z",
    "G6's own example converts as documented",
  );
  t.equal(utcOf("2026-11-22 05:09Z"), "2026-11-22T05:09:00Z", "seconds may be omitted");
  t.equal(utcOf("0001-01-01T00:30+01:00"), "0000-12-31T23:30:00Z", "offsets cross a year boundary");
  t.equal(utcOf("2026-11-22"), undefined, "a date alone is not a timestamp");
});

// ---------------------------------------------------------------------------------- coverage and known bugs

t.test("every operation of openapi.yaml is fuzzed, and a few thousand cases ran", async (t) => {
  t.ok(withBody.length > 0 && withoutBody.length > 0, "the spec has operations with and without a body");
  for (const op of operations) {
    t.ok((perOperation.get(op.operationId) ?? 0) >= 50, `${op.operationId}: ${perOperation.get(op.operationId)} cases`);
  }
  t.ok(counted >= 2000, `${counted} cases ran`);
  t.ok(({} as Record<string, unknown>).polluted === undefined, "Object.prototype was never polluted");
});

t.test("what the fuzzer found while the read API was being written, fixed since", async (t) => {
  const ctx = await fuzzApp(t);
  // Each of these answered 500, stored bad data or read back other data than sent before its fix.
  const wrapped = await ctx.api.withKey("/create_session", { id: null, session: { id: 5 } });
  checkAnswer(wrapped, "a wrapped body beside a null id");
  t.equal(wrapped.statusCode, 400, '{"id": null, "session": {"id": 5}} is refused, not stored as session "5" (S1, G5)');
  const state = await ctx.api.withKey("/v2/create_session", { session: { id: "s5-proto", end_state: "Constructor" } });
  checkAnswer(state, "end_state Constructor");
  t.equal(state.statusCode, 400, 'end_state "Constructor" is the S5 400, not a 500 from Object.prototype');
  await ctx.api.withJwt("/v2/create_events", { events: [{ id: "a", type: "tool", params: "I" }] }, ctx.jwt);
  await ctx.api.withJwt("/v2/update_events", { events: [{ event_id: "a", type: "llm", params: "X" }] }, ctx.jwt);
  await ctx.api.withJwt("/v2/create_events", { events: [{ id: "b", type: "tool", params: "A", input: "B" }] }, ctx.jwt);
  await ctx.api.withJwt("/v2/update_events", { events: [{ event_id: "b", params: "W" }] }, ctx.jwt);
  const views = new Map(
    (await inspect(ctx.api.store).listEvents(ctx.sessionId)).map((e) => [e.id, eventView(e, ctx.sessionId)]),
  );
  t.equal(
    own(views.get("a"), "params"),
    "X",
    "params X sent with a change from tool to llm reads X, not the old input",
  );
  t.equal(own(views.get("b"), "params"), "W", "params W sent last reads W, not an older unknown copy");
  const tokens = await ctx.api.withJwt(
    "/v2/create_events",
    { events: [{ type: "llm", prompt_tokens: 2 ** 63 }] },
    ctx.jwt,
  );
  checkAnswer(tokens, "prompt_tokens 2^63");
  t.equal(tokens.statusCode, 400, "prompt_tokens 2^63 is a 400 (it was a 500: the STRICT INTEGER column refused it)");
  const headers = { "x-agentmon-api-key": API_KEY };
  const badUrl = await ctx.api.inject({ method: "GET", url: "/v2/sessions/%", headers });
  checkAnswer(badUrl, "GET /v2/sessions/%");
  t.same(Object.keys(badUrl.json()).sort(), ["error", "message"], "a malformed percent-escape answers a G2 body");
  const long = await ctx.api.inject({ method: "GET", url: `/v2/sessions/${"x".repeat(5000)}`, headers });
  checkAnswer(long, "GET /v2/sessions/<5000 characters>");
  t.same(Object.keys(long.json()).sort(), ["error", "message"], "a 5000-character path parameter answers a G2 body");
  const method = await ctx.api.inject({ method: "DELETE", url: "/v2/sessions/x/export" });
  t.equal(method.statusCode, 405, "an undeclared method on a path with a parameter is 405 (G3)");
  t.match(method.headers.allow, /GET/, "and Allow names the declared method");
});
