/**
 * fast-check arbitraries derived from the JSON Schemas of openapi.yaml, for test/fuzz.test.ts.
 *
 * `SchemaArbitraries.valid(schema)` generates bodies the schema accepts; `mutations(schema, body)`
 * lists the single changes that make such a body break the schema (wrong type, missing required
 * field, out-of-range number, over-long string, bad enum, bad timestamp, ...), each with the
 * G2 path the 400 must name. Only the subset of JSON Schema the spec uses is supported ($ref,
 * type and type arrays, enum, const, properties, required, additionalProperties, items,
 * min/maxItems, min/maxLength, minimum/maximum, allOf, anyOf/oneOf, if/then/else, not, format
 * date-time); `matches` is a checker for that same subset, used to pick if/then/else branches
 * and to test the generators themselves.
 *
 * The contract rules that no schema can say (S1, S5, E2, ...) are refinements the caller passes
 * in by component name, or fix-ups it applies after generation; nothing here knows agentmon.
 *
 * The pieces, beside this walker: spec.ts (the document and its operations), values.ts (plain
 * JSON helpers), strings.ts, timestamps.ts and json.ts (the leaf and any-value arbitraries),
 * types.ts (what a schema allows) and mutations.ts (the single changes that break a schema).
 */
import fc from "fast-check";
import { anyJsonArb, bigNumbers } from "./json.ts";
import { type At, type Mutation, numberMutations, stringMutations, valueMutations } from "./mutations.ts";
import { deref, type Schema, type Segment, type Spec } from "./spec.ts";
import { keyArb, textArb } from "./strings.ts";
import { timestampArb, utcOf } from "./timestamps.ts";
import { allows, type Type, typeOf, typesOf, unconditional } from "./types.ts";
import { canonical, DELETE, isObject, objectOf, ownProperty, pathText, pickFrom } from "./values.ts";

export interface ConverterOptions {
  /** Contract rules a schema cannot say, by component name: given the plain arbitrary, answer the refined one. */
  refine?: Record<string, (plain: fc.Arbitrary<unknown>) => fc.Arbitrary<unknown>>;
}

export class SchemaArbitraries {
  private readonly memo = new Map<Schema, fc.Arbitrary<unknown>>();

  constructor(
    readonly spec: Spec,
    private readonly options: ConverterOptions = {},
  ) {}

  /** `$ref`s followed and `allOf` merged: the schema as one object (or a boolean). */
  flatten(node: Schema): { schema: Schema; name: string | undefined } {
    const { node: s, name } = deref(this.spec, node);
    if (typeof s !== "object" || !s.allOf) return { schema: s, name };
    const merged: Schema = {
      ...s,
      allOf: undefined,
      properties: { ...s.properties },
      required: [...(s.required ?? [])],
    };
    for (const part of s.allOf) {
      const p = this.flatten(part).schema;
      Object.assign(merged, { ...p, properties: merged.properties, required: merged.required });
      Object.assign(merged.properties, p.properties);
      merged.required.push(...(p.required ?? []));
      if (p.additionalProperties === false) merged.additionalProperties = false;
    }
    return { schema: merged, name };
  }

  // ------------------------------------------------------------------------------ valid values

  /** Values the schema accepts (and the refinements, where given). */
  valid(node: Schema): fc.Arbitrary<unknown> {
    const cached = this.memo.get(node);
    if (cached) return cached;
    const { schema, name } = this.flatten(node);
    let arb = this.plain(schema);
    const refine = name === undefined ? undefined : this.options.refine?.[name];
    if (refine) arb = refine(arb);
    this.memo.set(node, arb);
    return arb;
  }

  private plain(s: Schema): fc.Arbitrary<unknown> {
    if (s === true || s === undefined) return anyJsonArb;
    if (s === false) throw new Error("cannot generate a value for the schema false");
    if (s.if !== undefined) {
      // Either branch, as long as the condition agrees with the branch taken.
      const rest = unconditional(s);
      const branch = (extra: Schema, holds: boolean) =>
        this.valid(extra === undefined ? rest : extra).filter(
          (v) => this.matches(s.if, v) === holds && this.matches(rest, v),
        );
      return fc.oneof(branch(s.then, true), branch(s.else, false));
    }
    if (s.anyOf || s.oneOf) {
      const branches: Schema[] = s.anyOf ?? s.oneOf;
      const arb = fc.oneof(...branches.map((b) => this.valid(b)));
      return s.oneOf ? arb.filter((v) => branches.filter((b) => this.matches(b, v)).length === 1) : arb;
    }
    if ("const" in s) return fc.constant(s.const);
    if (s.enum) return pickFrom(...(s.enum as unknown[]));
    const types = typesOf(s);
    if (types === undefined) return anyJsonArb;
    return fc.oneof(...types.map((t) => ({ weight: t === "null" ? 1 : 4, arbitrary: this.ofType(s, t) })));
  }

  private ofType(s: Schema, t: Type): fc.Arbitrary<unknown> {
    switch (t) {
      case "null":
        return fc.constant(null);
      case "boolean":
        return fc.boolean();
      case "string":
        return s.format === "date-time" ? timestampArb : textArb(s.minLength ?? 0, s.maxLength);
      case "integer":
      case "number": {
        const min = s.minimum ?? -Number.MAX_VALUE;
        const max = s.maximum ?? Number.MAX_VALUE;
        const edges = [0, 1, ...bigNumbers, ...bigNumbers.map((n) => -n)].filter((n) => n >= min && n <= max);
        const small = fc.integer({ min: Math.max(min, -1e6), max: Math.min(max, 1e6) });
        const choices: fc.WeightedArbitrary<number>[] = [
          { weight: 6, arbitrary: small },
          { weight: 1, arbitrary: pickFrom(...edges) },
        ];
        if (t === "number")
          choices.push({ weight: 3, arbitrary: fc.double({ min, max, noNaN: true, noDefaultInfinity: true }) });
        return fc.oneof(...choices);
      }
      case "array": {
        const items = this.valid(s.items ?? true);
        const min = s.minItems ?? 0;
        const cap = Math.min(s.maxItems ?? 4, Math.max(min, 4));
        const choices: fc.WeightedArbitrary<unknown[]>[] = [
          { weight: 8, arbitrary: fc.array(items, { minLength: min, maxLength: cap }) },
        ];
        // Exactly at maxItems, when that stays small enough to send often (tags: 100).
        if (s.maxItems !== undefined && s.maxItems > cap && s.maxItems <= 100) {
          choices.push({ weight: 1, arbitrary: fc.array(items, { minLength: s.maxItems, maxLength: s.maxItems }) });
        }
        return fc.oneof(...choices);
      }
      case "object": {
        const props: Record<string, Schema> = s.properties ?? {};
        const required: string[] = s.required ?? [];
        const named = [...new Set([...Object.keys(props), ...required])].map((key) => {
          const value = this.valid(ownProperty(props, key) ?? true).map((v): [string, unknown][] => [[key, v]]);
          return required.includes(key) ? value : fc.oneof(fc.constant<[string, unknown][]>([]), value);
        });
        const extraValue = isObject(s.additionalProperties) ? this.valid(s.additionalProperties) : anyJsonArb;
        const extras =
          s.additionalProperties === false
            ? fc.constant<[string, unknown][]>([])
            : fc.array(
                fc.tuple(
                  keyArb.filter((k) => !Object.hasOwn(props, k) && !required.includes(k)),
                  extraValue,
                ),
                { maxLength: 3 },
              );
        return fc.tuple(...named, extras).map((parts) => objectOf(parts.flat() as [string, unknown][]));
      }
    }
  }

  /** The smallest value the schema accepts: required properties only, shortest strings. */
  minimal(node: Schema): unknown {
    const { schema: s } = this.flatten(node);
    if (s === true || s === undefined) return null;
    if ("const" in s) return s.const;
    if (s.enum) return s.enum[0];
    const t = typesOf(s)?.[0];
    switch (t) {
      case undefined:
      case "null":
        return null;
      case "boolean":
        return false;
      case "string":
        return s.format === "date-time" ? "2026-11-22T05:09:43Z" : "x".repeat(s.minLength ?? 0);
      case "integer":
      case "number":
        return s.minimum ?? 0;
      case "array":
        return Array.from({ length: s.minItems ?? 0 }, () => this.minimal(s.items ?? true));
      case "object":
        return objectOf((s.required ?? []).map((k: string) => [k, this.minimal(s.properties?.[k] ?? true)]));
    }
  }

  // ------------------------------------------------------------------------------ invalid values

  /** Every single change that makes `value` (valid for `node`) break the schema. */
  mutations(node: Schema, value: unknown, path: Segment[] = [], conditional = false): Mutation[] {
    const { schema: s } = this.flatten(node);
    if (s === true || s === undefined || s === false) return [];
    const out: Mutation[] = [];
    const at: At = (what, arb, where = path, exact = !conditional) => {
      out.push({ path: where, what, expectPath: exact ? pathText(where) : undefined, value: arb });
    };

    if (s.if !== undefined) {
      // Which branch the value took decides which rules apply; a change may flip the condition,
      // so the 400's path is not known in advance.
      const branch = this.matches(s.if, value) ? s.then : s.else;
      const rest = unconditional(s);
      return [...this.mutations(rest, value, path, true), ...(branch ? this.mutations(branch, value, path, true) : [])];
    }
    if (s.anyOf || s.oneOf) {
      const branch = (s.anyOf ?? s.oneOf).find((b: Schema) => this.matches(b, value));
      return branch ? this.mutations(branch, value, path, true) : [];
    }
    const types = typesOf(s);
    valueMutations(s, types, at);
    const kind = typeOf(value);
    if (kind === "string" && types?.includes("string")) stringMutations(s, value as string, at);
    if (kind === "integer" || kind === "number") numberMutations(s, at);
    if (kind === "array" && types?.includes("array")) {
      out.push(...this.arrayMutations(s, value as unknown[], path, conditional, at));
    }
    if (kind === "object" && types?.includes("object")) {
      out.push(...this.objectMutations(s, value as Record<string, unknown>, path, conditional, at));
    }
    return out;
  }

  /** Too few or too many items (through `at`); answers the changes inside the first three items. */
  private arrayMutations(s: Schema, list: unknown[], path: Segment[], conditional: boolean, at: At): Mutation[] {
    if ((s.minItems ?? 0) > 0) at("too few items", fc.constant([]));
    if (s.maxItems !== undefined) {
      const item = list.length > 0 && JSON.stringify(list[0]).length < 2_000 ? list[0] : this.minimal(s.items ?? true);
      const lengths = pickFrom(s.maxItems + 1, Math.max(s.maxItems + 1, 10_000));
      at(
        "too many items",
        lengths.map((n) => Array.from({ length: n }, () => item)),
      );
    }
    return list.slice(0, 3).flatMap((item, i) => this.mutations(s.items ?? true, item, [...path, i], conditional));
  }

  /** A required property missing, an unknown one (through `at`); answers the changes inside each property. */
  private objectMutations(
    s: Schema,
    obj: Record<string, unknown>,
    path: Segment[],
    conditional: boolean,
    at: At,
  ): Mutation[] {
    const props: Record<string, Schema> = s.properties ?? {};
    for (const key of s.required ?? []) {
      if (Object.hasOwn(obj, key)) at("missing required", fc.constant(DELETE), [...path, key]);
    }
    if (s.additionalProperties === false) {
      at("unknown property", anyJsonArb, [...path, "extra-property"]);
    }
    return Object.keys(obj).flatMap((key) => {
      const child = Object.getOwnPropertyDescriptor(obj, key)?.value;
      const sub = ownProperty(props, key) ?? (isObject(s.additionalProperties) ? s.additionalProperties : undefined);
      return sub === undefined ? [] : this.mutations(sub, child, [...path, key], conditional);
    });
  }

  // ------------------------------------------------------------------------------ checking

  /** Whether `value` satisfies the schema (the subset above; `date-time` per G6). */
  matches(node: Schema, value: unknown): boolean {
    const { schema: s } = this.flatten(node);
    if (s === true || s === undefined) return true;
    if (s === false) return false;
    if (s.if !== undefined) {
      const branch = this.matches(s.if, value) ? s.then : s.else;
      if (branch !== undefined && !this.matches(branch, value)) return false;
    }
    if (s.not !== undefined && this.matches(s.not, value)) return false;
    if (s.anyOf && !s.anyOf.some((b: Schema) => this.matches(b, value))) return false;
    if (s.oneOf && s.oneOf.filter((b: Schema) => this.matches(b, value)).length !== 1) return false;
    if ("const" in s && canonical(s.const) !== canonical(value)) return false;
    if (s.enum && !(s.enum as unknown[]).some((e) => canonical(e) === canonical(value))) return false;
    const kind = typeOf(value);
    if (s.type !== undefined && !allows(Array.isArray(s.type) ? s.type : [s.type], kind)) return false;
    if (kind === "string") {
      const length = Array.from(value as string).length;
      if (s.maxLength !== undefined && length > s.maxLength) return false;
      if (s.minLength !== undefined && length < s.minLength) return false;
      if (s.format === "date-time" && utcOf(value as string) === undefined) return false;
    }
    if ((kind === "integer" || kind === "number") && s.minimum !== undefined && (value as number) < s.minimum) {
      return false;
    }
    if ((kind === "integer" || kind === "number") && s.maximum !== undefined && (value as number) > s.maximum) {
      return false;
    }
    if (kind === "array") {
      const list = value as unknown[];
      if (s.minItems !== undefined && list.length < s.minItems) return false;
      if (s.maxItems !== undefined && list.length > s.maxItems) return false;
      if (s.items !== undefined && !list.every((item) => this.matches(s.items, item))) return false;
    }
    if (kind === "object") {
      const obj = value as Record<string, unknown>;
      if ((s.required ?? []).some((k: string) => !Object.hasOwn(obj, k))) return false;
      for (const key of Object.keys(obj)) {
        const child = Object.getOwnPropertyDescriptor(obj, key)?.value;
        const sub = ownProperty(s.properties, key) ?? s.additionalProperties;
        if (sub !== undefined && !this.matches(sub, child)) return false;
      }
    }
    return true;
  }
}
