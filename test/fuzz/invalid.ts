/** Fuzz property: bodies one change away from valid are refused with G2 and change nothing. */
import fc from "fast-check";
import type { Test } from "tap";
import { nested } from "../arbitraries/json.ts";
import type { Mutation } from "../arbitraries/mutations.ts";
import type { Segment } from "../arbitraries/spec.ts";
import { clone, isObject, objectOf, pathText, pickFrom, setAt } from "../arbitraries/values.ts";
import { fuzzApp } from "./app.ts";
import { checkRefused, property, stillServes } from "./checks.ts";
import type { Body, Break } from "./plan.ts";
import { planOf, validBodies } from "./plans.ts";
import { conv, own } from "./rules.ts";
import { RUNS, withBody } from "./setup.ts";

/** Anywhere a string is, as a value or as a key, with the path of the object holding it. */
function stringSites(value: unknown, path: Segment[] = [], out: { path: Segment[]; key?: string }[] = []) {
  if (out.length > 200) return out;
  if (typeof value === "string") out.push({ path });
  else if (Array.isArray(value)) {
    for (const [i, v] of value.slice(0, 20).entries()) stringSites(v, [...path, i], out);
  } else if (isObject(value)) {
    for (const key of Object.keys(value).slice(0, 40)) {
      out.push({ path, key });
      stringSites(own(value, key), [...path, key], out);
    }
  }
  return out;
}

type Site = { path: Segment[]; key?: string };

/** The body with `added` put at a site: at the end of the string there, or of the key named. */
function withAt(body: Body, site: Site, added: string): unknown {
  if (site.key === undefined) {
    const text = site.path.reduce((at: any, k) => own(at, String(k)) ?? at[k], body) as string;
    return setAt(body, site.path, `${text}${added}`);
  }
  const holder = site.path.reduce((at: any, k) => at[k], clone(body));
  const renamed = objectOf(Object.keys(holder).map((k) => [k === site.key ? `${k}${added}` : k, own(holder, k)]));
  return setAt(body, site.path, renamed);
}

/**
 * Changes any body can take that the JSON reader refuses: a lone surrogate, nesting past 100
 * levels, U+0000 (decision 017: a 400 naming the place, the key's own path for a key).
 */
function universalBreaks(body: Body): Break[] {
  const sites = stringSites(body);
  const surrogate = pickFrom("\ud800", "\udfff", "\udbff", "\udc00x", "a\ud83d");
  const bad: Break[] = [
    {
      what: "nested past 100 levels (L1)",
      expect: { status: 400, error: "Bad request" },
      body: fc.integer({ min: 100, max: 400 }).map((levels) => setAt(body, ["deep"], nested(levels))),
    },
  ];
  if (sites.length > 0) {
    const site = fc.noBias(fc.nat(sites.length - 1)).map((i) => sites[i] as Site);
    bad.push({
      what: "a lone UTF-16 surrogate in a string or key",
      expect: { status: 400, error: "Bad request" },
      body: fc.tuple(site, surrogate).map(([at, lone]) => withAt(body, at, lone)),
    });
    // One kind, drawn as a group: each site and text is a change of its own, with its own path.
    for (const at of sites) {
      for (const added of ["\0", "a\0b", "\0\0"]) {
        const path = pathText(at.key === undefined ? at.path : [...at.path, `${at.key}${added}`]);
        bad.push({
          what: `U+0000 in ${at.key === undefined ? "the string" : "the key"} at ${path || "the root"}`,
          kind: "U+0000 in a string or key",
          expect: { status: 400, error: "Invalid request", path },
          body: fc.constant(added).map((text) => withAt(body, at, text)), // made only when drawn
        });
      }
    }
  }
  return bad;
}

function schemaBreak(body: Body, m: Mutation): Break {
  return {
    what: `${m.what} at ${pathText(m.path) || "the root"}`,
    kind: m.what,
    expect: { status: 400, error: "Invalid request", path: m.expectPath },
    body: m.value.map((v) => setAt(body, m.path, v)),
  };
}

export async function oneChangeAwayIsRefused(t: Test) {
  for (const op of withBody) {
    t.test(`${op.operationId}: ${op.method} ${op.path}`, async (t) => {
      const ctx = await fuzzApp(t);
      const plan = planOf(op);
      const cases = validBodies(op, ctx).chain((body) => {
        const kinds = new Map<string, Break[]>();
        for (const b of [
          ...conv.mutations(op.body, body).map((m) => schemaBreak(body, m)),
          ...plan.breaks(body, ctx),
          ...universalBreaks(body),
        ]) {
          kinds.set(b.kind ?? b.what, [...(kinds.get(b.kind ?? b.what) ?? []), b]);
        }
        // A kind of change first (wrong type, missing field, S1, E2, ...), then where.
        return pickFrom(...kinds.values())
          .chain((group) => pickFrom(...group))
          .chain((b) => b.body.map((changed) => ({ what: b.what, expect: b.expect, changed })));
      });
      await property(
        t,
        `${op.operationId} invalid`,
        cases,
        RUNS.invalid,
        async ({ what, expect, changed }) => {
          const payload = JSON.stringify(changed);
          await checkRefused(ctx, op, payload, expect, `${op.operationId}, ${what}`);
        },
        op,
      );
      await stillServes(t, ctx);
    });
  }
}
