/**
 * The scalar and attribute readers of OTLP/JSON (otlp.md T11, the proto3 JSON mapping): each takes a
 * value of JSON.parse and the path it was found at, and gives the canonical form of types.ts or
 * throws an OtlpDecodeError naming that path. Absent and null mean the field's default, as in
 * proto3. Paths are built by concatenation on the way down: V8 keeps them as unflattened ropes, so
 * they cost next to nothing unless an error prints one.
 */
import { OtlpDecodeError } from "./errors.ts";
import type { AnyValue, KeyValue } from "./types.ts";

export type Json = Record<string, unknown>;

/**
 * How deeply arrayValue and kvlistValue may nest. protobufjs refuses protobuf nested past 100
 * messages (its recursion limit, protoc's); this bounds the JSON reader, which recurses, the same way.
 */
const MAX_DEPTH = 100;

/** A shared empty list for an absent repeated field: only ever read. */
const NONE: readonly unknown[] = [];

export function fail(path: string, what: string): never {
  throw new OtlpDecodeError(`${path}: ${what}`);
}

/** A message field: undefined when absent or null. */
export function message(v: unknown, path: string): Json | undefined {
  if (v === undefined || v === null) return undefined;
  if (typeof v !== "object" || Array.isArray(v)) fail(path, "must be an object");
  return v as Json;
}

/** An element of a repeated message field, which may not be null. */
export function element(v: unknown, path: string): Json {
  if (typeof v !== "object" || v === null || Array.isArray(v)) fail(path, "must be an object");
  return v as Json;
}

export function list(v: unknown, path: string): readonly unknown[] {
  if (v === undefined || v === null) return NONE;
  if (!Array.isArray(v)) fail(path, "must be an array");
  return v;
}

export function text(v: unknown, path: string): string {
  if (typeof v === "string") return v;
  if (v === undefined || v === null) return "";
  return fail(path, "must be a string");
}

/** Ids are hex in OTLP/JSON; lowercased as given, so that a base64 id reaches validation and is refused there (T9). */
export function id(v: unknown, path: string): string {
  return text(v, path).toLowerCase();
}

const INTEGER = /^-?[0-9]+$/;

/**
 * A 64-bit integer, written as a string or a number, as a decimal string. A string keeps its digits
 * whatever its size (only leading zeros and "-0" are made canonical). A number past 2^53 was already
 * rounded by JSON.parse (quoteBigIntegers prevents that for the fields that matter); it is kept as
 * the closest digits there are, never refused.
 */
export function int64(v: unknown, path: string): string {
  if (typeof v === "string") {
    if (!INTEGER.test(v)) fail(path, "must be an integer");
    const first = v.charCodeAt(0);
    // Only "0…" and "-…" can be non-canonical; a time (19 digits) never takes the BigInt path.
    return first === 48 || first === 45 ? BigInt(v).toString() : v;
  }
  if (typeof v === "number") {
    if (!Number.isInteger(v)) fail(path, "must be an integer");
    // String gives the shortest digits that read back as this double: often the very digits that
    // were sent ("1795523426365000000"), where BigInt would print the double's exact, other value.
    // Only from 1e21 does String switch to an exponent, which is no integer string.
    return Math.abs(v) < 1e21 ? String(v) : BigInt(v).toString();
  }
  if (v === undefined || v === null) return "0";
  return fail(path, "must be an integer (a string or a number)");
}

const UNSIGNED = /^[0-9]+$/;

/** A uint32 or fixed32 (counts, flags): a number, or a string of digits. */
export function uint32(v: unknown, path: string): number {
  if (typeof v === "number") {
    if (Number.isInteger(v) && v >= 0 && v <= 0xffffffff) return v;
  } else if (typeof v === "string") {
    if (UNSIGNED.test(v) && Number(v) <= 0xffffffff) return Number(v);
  } else if (v === undefined || v === null) {
    return 0;
  }
  return fail(path, "must be an unsigned 32-bit integer");
}

/** An enum: its number, or its name as the .proto spells it. */
export function enumValue(v: unknown, names: ReadonlyMap<string, number>, path: string): number {
  if (typeof v === "number") {
    if (Number.isInteger(v) && v >= -0x80000000 && v <= 0x7fffffff) return v;
  } else if (typeof v === "string") {
    const n = names.get(v);
    if (n !== undefined) return n;
    if (INTEGER.test(v) && Math.abs(Number(v)) <= 0x7fffffff) return Number(v);
  } else if (v === undefined || v === null) {
    return 0;
  }
  return fail(path, `must be an enum number or one of ${[...names.keys()].join(", ")}`);
}

type Double = number | "NaN" | "Infinity" | "-Infinity";

/** NaN and the infinities as OTLP/JSON writes them: JSON has no number for them. */
export function canonicalDouble(n: number): Double {
  if (Number.isFinite(n)) return n;
  return Number.isNaN(n) ? "NaN" : n > 0 ? "Infinity" : "-Infinity";
}

const JSON_NUMBER = /^-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?$/;

function double(v: unknown, path: string): Double {
  if (typeof v === "number") return canonicalDouble(v);
  if (v === "NaN" || v === "Infinity" || v === "-Infinity") return v;
  if (typeof v === "string" && JSON_NUMBER.test(v)) return canonicalDouble(Number(v));
  return fail(path, 'must be a number, "NaN", "Infinity" or "-Infinity"');
}

function bool(v: unknown, path: string): boolean {
  if (typeof v === "boolean") return v;
  return fail(path, "must be true or false");
}

/** An AnyValue: the first of its oneof fields that is present (a body should have one); {} when none is. */
export function anyValue(v: unknown, path: string, depth: number): AnyValue {
  const o = message(v, path);
  if (o === undefined) return {};
  let x = o.stringValue ?? o.string_value;
  if (x != null) return { stringValue: text(x, `${path}.stringValue`) };
  x = o.boolValue ?? o.bool_value;
  if (x != null) return { boolValue: bool(x, `${path}.boolValue`) };
  x = o.intValue ?? o.int_value;
  if (x != null) return { intValue: int64(x, `${path}.intValue`) };
  x = o.doubleValue ?? o.double_value;
  if (x != null) return { doubleValue: double(x, `${path}.doubleValue`) };
  x = o.bytesValue ?? o.bytes_value;
  if (x != null) return { bytesValue: text(x, `${path}.bytesValue`) };
  if (depth >= MAX_DEPTH) fail(path, `nests arrays and key-value lists deeper than ${MAX_DEPTH}`);
  x = o.arrayValue ?? o.array_value;
  if (x != null) return { arrayValue: { values: anyValues(x, `${path}.arrayValue`, depth + 1) } };
  x = o.kvlistValue ?? o.kvlist_value;
  if (x != null) return { kvlistValue: { values: keyValues(x, `${path}.kvlistValue`, depth + 1) } };
  return {};
}

function anyValues(v: unknown, path: string, depth: number): AnyValue[] {
  const items = list(element(v, path).values, `${path}.values`);
  const out: AnyValue[] = [];
  for (let i = 0; i < items.length; i++) out.push(anyValue(items[i], `${path}.values[${i}]`, depth));
  return out;
}

function keyValues(v: unknown, path: string, depth: number): KeyValue[] {
  return attributes(element(v, path).values, `${path}.values`, depth);
}

/** A repeated KeyValue field (attributes, a kvlistValue's values). */
export function attributes(v: unknown, path: string, depth = 0): KeyValue[] {
  const items = list(v, path);
  const out: KeyValue[] = [];
  for (let i = 0; i < items.length; i++) {
    const at = `${path}[${i}]`;
    const kv = element(items[i], at);
    out.push({ key: text(kv.key, `${at}.key`), value: anyValue(kv.value, `${at}.value`, depth) });
  }
  return out;
}
