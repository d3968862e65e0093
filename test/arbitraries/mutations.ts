/**
 * Single changes that break a schema, for the list SchemaArbitraries.mutations builds
 * (test/arbitraries/schema.ts): a value that is not the const, not in the enum or of a wrong type,
 * a string too long or too short or not a timestamp, a number out of range.
 */
import fc from "fast-check";
import { anyJsonArb, bigNumbers, pollutionArb } from "./json.ts";
import type { Schema, Segment } from "./spec.ts";
import { clampText, textArb } from "./strings.ts";
import { badTimestampArb } from "./timestamps.ts";
import { ALL_TYPES, allows, type Type } from "./types.ts";
import { canonical, isObject, pickFrom } from "./values.ts";

export interface Mutation {
  /** Where the change is, from the body's root. */
  path: Segment[];
  /** What kind of change, for reports (`wrong type`, `missing required`, `too long`, ...). */
  what: string;
  /** The G2 detail path the 400 must name; undefined where the schema cannot say (if/then/else). */
  expectPath: string | undefined;
  /** The replacement value, or DELETE. */
  value: fc.Arbitrary<unknown>;
}

/**
 * Records one change: what kind, its replacement values, and where (the value's own path unless
 * given), and whether the 400 must name that path exactly (not where if/then/else decides).
 */
export type At = (what: string, arb: fc.Arbitrary<unknown>, where?: Segment[], exact?: boolean) => void;

/** A value that is not the schema's const, not in its enum, or of a type it does not allow. */
export function valueMutations(s: Schema, types: Type[] | undefined, at: At): void {
  if ("const" in s)
    at(
      "not the const",
      anyJsonArb.filter((v) => canonical(v) !== canonical(s.const)),
    );
  if (s.enum) {
    const allowed = new Set((s.enum as unknown[]).map(canonical));
    at(
      "not in the enum",
      textArb(0, 20).filter((v) => !allowed.has(canonical(v))),
    );
  }
  if (types !== undefined) {
    const wrong = ALL_TYPES.filter((t) => !allows(types, t));
    if (types.includes("integer") && !types.includes("number")) wrong.push("number");
    if (wrong.length > 0) at("wrong type", fc.oneof(...wrong.map((t) => wrongOfType(t))));
  }
}

/** A string longer or shorter than the schema allows, or not a timestamp where it wants one. */
export function stringMutations(s: Schema, text: string, at: At): void {
  if (s.maxLength !== undefined) {
    at(
      "too long",
      textArb(s.maxLength + 1, s.maxLength + 20).map((v) => clampText(v, s.maxLength + 1, undefined)),
    );
  }
  if (s.minLength !== undefined && s.minLength > 0)
    at(
      "too short",
      fc.constant(
        Array.from(text)
          .slice(0, s.minLength - 1)
          .join(""),
      ),
    );
  if (s.format === "date-time") at("not a timestamp", badTimestampArb);
}

/** A number above the schema's maximum or below its minimum. */
export function numberMutations(s: Schema, at: At): void {
  if (s.maximum !== undefined) {
    const over = [s.maximum + 1, s.maximum * 2 + 1, 2 ** 63, 1e300, Number.MAX_VALUE].filter((n) => n > s.maximum);
    at("above the maximum", pickFrom(...over));
  }
  if (s.minimum !== undefined) {
    at(
      "below the minimum",
      pickFrom(s.minimum - 1, s.minimum - 1e-9, s.minimum - 1e6, -Number.MAX_VALUE).filter((n) => n < s.minimum),
    );
  }
}

/** Values of type `t`, for a schema that does not allow it. */
function wrongOfType(t: Type): fc.Arbitrary<unknown> {
  switch (t) {
    case "null":
      return fc.constant(null);
    case "boolean":
      return fc.boolean();
    case "string":
      return fc.oneof(textArb(0, 20), pickFrom("NaN", "Infinity", "-1", "1e999", "0x1F", "", "null", "[]", "{}"));
    case "integer":
      return fc.oneof(fc.integer(), pickFrom(...bigNumbers));
    case "number":
      return pickFrom(0.5, -0.5, 1.000001, 1e-300, Math.PI, -1.5e-7, 4503599627370495.5);
    case "array":
      return fc.oneof(fc.constant([]), fc.array(anyJsonArb, { maxLength: 2 }));
    case "object":
      return fc.oneof(fc.constant({}), pollutionArb.filter(isObject));
  }
}
