/**
 * Fuzz properties without a body: path parameters, query strings and headers of the operations that
 * take none, and the methods no path declares (405).
 */
import fc from "fast-check";
import type { Test } from "tap";
import type { Operation } from "../arbitraries/spec.ts";
import { textArb } from "../arbitraries/strings.ts";
import { pickFrom } from "../arbitraries/values.ts";
import { credentials, fuzzApp, SEEDED_SESSIONS } from "./app.ts";
import { checkAnswer, fail, property, stillServes } from "./checks.ts";
import { conv } from "./rules.ts";
import { RUNS, spec, withoutBody } from "./setup.ts";

/** A query or path value: valid for the parameter's schema, a stored session's (odd) id, or anything at all. */
function parameterValue(schema: unknown): fc.Arbitrary<string> {
  const valid = conv.valid(schema ?? true).map((v) => (typeof v === "string" ? v : JSON.stringify(v)));
  const odd = pickFrom("", "-1", "0", "NaN", "1e999", "null", "%", "%zz", "\0", "'", "[]", "x".repeat(5000));
  return fc.oneof(valid, pickFrom(...SEEDED_SESSIONS), textArb(0, 30), odd);
}

function readRequests(op: Operation) {
  const encode = (value: string, raw: boolean) =>
    raw ? value.replace(/[^\x21-\x7e]/gu, encodeURIComponent) : encodeURIComponent(value);
  const params = op.parameters.filter((p) => p.in === "query" || p.in === "path");
  const chosen = params.map((p) =>
    p.required || p.in === "path" ? parameterValue(p.schema) : fc.option(parameterValue(p.schema), { nil: undefined }),
  );
  return fc
    .record({
      values: fc.tuple(...chosen),
      extra: fc.array(fc.tuple(textArb(0, 12), textArb(0, 30)), { maxLength: 3 }),
      raw: fc.boolean(),
      credentials: pickFrom("right", "none", "garbage"),
      etag: fc.option(pickFrom("*", '"x"', 'W/"x"', ""), { nil: undefined }),
    })
    .map(({ values, extra, raw, credentials: creds, etag }) => {
      let path = op.path;
      const query: string[] = [];
      params.forEach((p, i) => {
        const value = values[i];
        if (value === undefined) return;
        if (p.in === "path") path = path.replace(`{${p.name}}`, encode(value, raw));
        else query.push(`${encodeURIComponent(p.name)}=${encode(value, raw)}`);
      });
      for (const [k, v] of extra) query.push(`${encode(k, raw)}=${encode(v, raw)}`);
      return { url: query.length > 0 ? `${path}?${query.join("&")}` : path, creds, etag };
    });
}

export async function withoutBodyNever5xx(t: Test) {
  const ctx = await fuzzApp(t);
  let address = 0;
  for (const op of withoutBody) {
    await property(
      t,
      `${op.operationId} ${op.method} ${op.path}`,
      readRequests(op),
      RUNS.read,
      async ({ url, creds, etag }) => {
        const headers: Record<string, string> =
          creds === "right"
            ? credentials(ctx, op)
            : creds === "garbage"
              ? { authorization: "Bearer x.y.z", "x-agentmon-api-key": "nope" }
              : {};
        if (etag !== undefined) headers["if-none-match"] = etag;
        const before = ctx.digest();
        // Each case from its own address, so failed credentials (4.6) do not spill into the next.
        const remoteAddress = `10.1.${(++address >> 8) & 255}.${address & 255}`;
        const res = await ctx.api.inject({ method: op.method as "GET", url, headers, remoteAddress });
        const label = `${op.method} ${url.slice(0, 200)}`;
        checkAnswer(res, label, op);
        if (
          res.statusCode === 200 &&
          // export?format=otlp answers an OTLP/JSON request, not a G1 body (otlp.md T15).
          !/[?&]format=otlp(&|$)/.test(url) &&
          /^application\/json/.test(String(res.headers["content-type"])) &&
          res.json().status !== "success"
        ) {
          fail(`G1: ${label}: ${res.body.slice(0, 300)}`);
        }
        if ((op.method === "GET" || res.statusCode >= 400) && ctx.digest() !== before) {
          fail(`${label}: ${res.statusCode >= 400 ? "a refused call" : "a read"} changed the database`);
        }
      },
      op,
    );
  }
  await stillServes(t, ctx);
}

export async function undeclaredMethodsAre405(t: Test) {
  const ctx = await fuzzApp(t);
  const paths = Object.keys(spec.paths);
  const cases = fc.record({
    path: pickFrom(...paths),
    method: pickFrom("GET", "POST", "PUT", "DELETE", "PATCH", "OPTIONS"),
    segment: textArb(1, 20),
    body: fc.option(fc.jsonValue(), { nil: undefined }),
  });
  await property(
    t,
    "methods",
    cases.filter(({ path, method }) => !spec.paths[path]?.[method.toLowerCase()]),
    RUNS.methods,
    async (c) => {
      const url = c.path.replace(/\{[^}]+\}/g, () => encodeURIComponent(c.segment));
      const payload = c.body === undefined ? undefined : JSON.stringify(c.body);
      const res = await ctx.api.inject({
        method: c.method as "GET",
        url,
        ...(payload === undefined ? {} : { payload, headers: { "content-type": "application/json" } }),
      });
      const label = `${c.method} ${url}`;
      checkAnswer(res, label);
      if (res.statusCode !== 405 || res.json().error !== "Method not allowed")
        fail(`${label}: ${res.statusCode} ${res.body.slice(0, 300)}`);
      const declared = Object.keys(spec.paths[c.path] ?? {}).map((m) => m.toUpperCase());
      const allow = String(res.headers.allow ?? "").split(/, */);
      if (!declared.every((m) => allow.includes(m))) fail(`${label}: Allow is "${res.headers.allow}"`);
    },
  );
  await stillServes(t, ctx);
}
