/**
 * The contract rules no schema can say, as the fuzzer needs them: S5's end states, E2's kinds, G5's
 * unknown fields; and the schema arbitraries (test/arbitraries/) refined by them.
 */
import fc from "fast-check";
import { SchemaArbitraries } from "../arbitraries/schema.ts";
import { textArb } from "../arbitraries/strings.ts";
import { isObject, pickFrom } from "../arbitraries/values.ts";
import { spec } from "./setup.ts";

/** S5: the accepted end states and aliases (any case), and what is stored for each. */
const END_STATES: Record<string, string> = {
  success: "Success",
  completed: "Success",
  complete: "Success",
  succeeded: "Success",
  ok: "Success",
  fail: "Fail",
  failed: "Fail",
  failure: "Fail",
  error: "Fail",
  errored: "Fail",
  indeterminate: "Indeterminate",
  unknown: "Indeterminate",
  "": "Indeterminate",
};

const anyCase = (word: string) =>
  fc
    .array(fc.boolean(), { minLength: word.length, maxLength: word.length })
    .map((ups) => [...word].map((c, i) => (ups[i] ? c.toUpperCase() : c)).join(""));
const endStateArb = fc.oneof(
  { weight: 1, arbitrary: fc.constant(null) },
  { weight: 6, arbitrary: pickFrom(...Object.keys(END_STATES)).chain(anyCase) },
);
/** The stored end state for an accepted value (S5), undefined for any other. */
export const canonicalState = (value: string) =>
  Object.hasOwn(END_STATES, value.toLowerCase()) ? END_STATES[value.toLowerCase()] : undefined;
export const badEndStateArb = fc
  .oneof(textArb(1, 64), pickFrom("constructor", "__proto__", "toString", "valueOf").chain(anyCase))
  .filter((s) => canonicalState(s) === undefined);

/** E2: the kinds, under `type` and under the SDK's `event_type`. */
export const PLURAL: Record<string, string> = { llm: "llms", tool: "tools", action: "actions", error: "errors" };
export const KIND_OF: Record<string, string> = { llms: "llm", tools: "tool", actions: "action", errors: "error" };

/** A plain decimal with at most `places` decimals, as the list's cost and duration bounds take (their `pattern`). */
const decimalArb = (places: number) =>
  fc
    .tuple(
      fc.bigInt({ min: 0n, max: 999_999_999_999_999n }),
      fc.option(fc.stringMatching(new RegExp(`^[0-9]{1,${places}}$`))),
    )
    .map(([whole, fraction]) => (fraction === null ? `${whole}` : `${whole}.${fraction}`));

export const conv = new SchemaArbitraries(spec, {
  refine: {
    EndState: () => endStateArb,
    CostBound: () => decimalArb(12),
    DurationBound: () => decimalArb(3),
    // minProperties, which the plain arbitrary does not know.
    ExtraFilter: () =>
      fc.dictionary(
        textArb(1, 32),
        fc.oneof(textArb(0, 32), fc.double({ noNaN: true, noDefaultInfinity: true }), fc.boolean()),
        {
          minKeys: 1,
          maxKeys: 20,
        },
      ),
  },
});
const ref = (name: string) => ({ $ref: `#/components/schemas/${name}` });
export const idArb = conv.valid(ref("Id")) as fc.Arbitrary<string>;

export const own = (obj: unknown, key: string): unknown =>
  isObject(obj) ? Object.getOwnPropertyDescriptor(obj, key)?.value : undefined;
export const given = (value: unknown): boolean => value !== undefined && value !== null;
const namesOf = (name: string) => new Set(Object.keys(conv.flatten(ref(name)).schema.properties ?? {}));
export const SESSION_NAMED = namesOf("SessionFields");
export const EVENT_NAMED = namesOf("EventUpdate");
export const AGENT_NAMED = namesOf("CreateAgentRequest");
/** G5: fields no schema names are kept as sent, except a credential named `jwt`. */
export const unknownOf = (raw: Record<string, unknown>, named: Set<string>) =>
  Object.keys(raw)
    .filter((key) => !named.has(key) && key !== "jwt")
    .map((key): [string, unknown] => [key, own(raw, key)]);
