/** Any JSON value for the fuzzer: odd strings and keys, numbers at the edges, deep nesting, prototype pollution payloads. */
import fc from "fast-check";
import { keyArb, textArb } from "./strings.ts";
import { objectOf, pickFrom } from "./values.ts";

// ---------------------------------------------------------------------------------- any JSON

/** Nested arrays and objects, `levels` deep in all, around a leaf. */
export function nested(levels: number, leaf: unknown = "bottom"): unknown {
  let value = leaf;
  for (let i = 0; i < levels; i++) value = i % 2 === 0 ? [value] : objectOf([["k", value]]);
  return value;
}

/** `__proto__` / `constructor.prototype` payloads: they must be stored as data and pollute nothing. */
export const pollutionArb: fc.Arbitrary<unknown> = pickFrom(
  '{"__proto__":{"polluted":"yes"}}',
  '{"constructor":{"prototype":{"polluted":"yes"}}}',
  '{"__proto__":{"__proto__":{"polluted":"yes"}},"prototype":{"polluted":"yes"}}',
  '[{"__proto__":{"polluted":"yes","toString":"x"}}]',
  '{"__proto__":null}',
  '{"__proto__":"polluted"}',
).map((text) => JSON.parse(text));

export const bigNumbers = [
  2 ** 31,
  2 ** 32,
  Number.MAX_SAFE_INTEGER,
  2 ** 53,
  2 ** 63,
  2 ** 64,
  1e20,
  1e300,
  Number.MAX_VALUE,
];

/** Any JSON value: odd strings and keys, numbers at the edges, deep nesting, 10 000-element arrays. */
export const anyJsonArb: fc.Arbitrary<unknown> = fc.letrec((tie) => ({
  value: fc.oneof(
    { maxDepth: 3, depthSize: "small" },
    { weight: 30, arbitrary: textArb() },
    { weight: 10, arbitrary: fc.constant(null) },
    { weight: 10, arbitrary: fc.boolean() },
    { weight: 10, arbitrary: fc.integer() },
    { weight: 10, arbitrary: fc.double({ noNaN: true, noDefaultInfinity: true }) },
    { weight: 10, arbitrary: pickFrom(...bigNumbers, ...bigNumbers.map((n) => -n), 5e-324, -0) },
    { weight: 20, arbitrary: fc.array(tie("value"), { maxLength: 4 }) },
    { weight: 20, arbitrary: fc.array(fc.tuple(keyArb, tie("value")), { maxLength: 4 }).map(objectOf) },
    { weight: 6, arbitrary: pollutionArb },
    { weight: 3, arbitrary: fc.integer({ min: 1, max: 90 }).map((levels) => nested(levels)) },
    {
      weight: 1,
      arbitrary: fc
        .tuple(pickFrom(10_000, 10_001), pickFrom<unknown>(0, "x", null, "'\";--"))
        .map(([n, item]) => Array.from({ length: n }, (_, i) => (i % 3 === 0 ? item : i))),
    },
  ),
})).value;
