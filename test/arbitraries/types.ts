/** JSON Schema types as the schema walker (test/arbitraries/schema.ts) sees them: what a schema allows, what a value is. */
import type { Schema } from "./spec.ts";

export type Type = "string" | "integer" | "number" | "boolean" | "array" | "object" | "null";
export const ALL_TYPES: Type[] = ["string", "integer", "number", "boolean", "array", "object", "null"];

/** The types a schema allows, or undefined when it says none (any JSON value). */
export function typesOf(s: Schema): Type[] | undefined {
  if (s.type !== undefined) return Array.isArray(s.type) ? s.type : [s.type];
  if (s.properties || s.required || s.additionalProperties !== undefined) return ["object"];
  if (s.items || s.minItems !== undefined || s.maxItems !== undefined) return ["array"];
  return undefined;
}

export function typeOf(value: unknown): Type {
  if (value === null) return "null";
  if (Array.isArray(value)) return "array";
  if (typeof value === "number") return Number.isInteger(value) ? "integer" : "number";
  return typeof value as Type;
}

/** The schema without its if/then/else. */
export function unconditional(s: Schema): Schema {
  const { if: _if, then: _then, else: _else, ...rest } = s;
  return rest;
}

export const allows = (types: Type[], t: Type) => types.includes(t) || (t === "integer" && types.includes("number"));
