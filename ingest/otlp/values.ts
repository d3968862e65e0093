/**
 * OTLP values as plain JSON, and OTLP times as stored timestamps: the small conversions every
 * mapping step needs (ingest/otlp/map.ts). Pure; no lossy doubles on 64-bit integers.
 */
import type { Timestamp } from "../../domain/timestamps.ts";
import type { JsonObject } from "../../domain/types.ts";
import type { AnyValue, KeyValue } from "./types.ts";

/** A span's attributes by key, as plain values (see `plain`). A key given twice: the last wins. */
export type Attrs = ReadonlyMap<string, unknown>;

/**
 * An AnyValue as plain JSON: strings, booleans and doubles as they are (`"NaN"` and the infinities
 * stay strings), an `intValue` as a number when it is a safe integer, else its decimal string,
 * `bytesValue` as its base64 string, arrays and kvlists as arrays and objects, an empty value as null.
 */
export function plain(value: AnyValue | undefined): unknown {
  if (value === undefined) return null;
  if ("stringValue" in value) return value.stringValue;
  if ("intValue" in value) {
    const n = Number(value.intValue);
    return Number.isSafeInteger(n) ? n : value.intValue;
  }
  if ("doubleValue" in value) return value.doubleValue;
  if ("boolValue" in value) return value.boolValue;
  if ("arrayValue" in value) return (value.arrayValue.values ?? []).map(plain);
  if ("kvlistValue" in value) return plainObject(value.kvlistValue.values ?? []);
  if ("bytesValue" in value) return value.bytesValue;
  return null;
}

/** A KeyValue list as a plain object (a key named `__proto__` stays data). */
export function plainObject(list: readonly KeyValue[]): JsonObject {
  const out: JsonObject = {};
  for (const { key, value } of list) {
    Object.defineProperty(out, key, { value: plain(value), enumerable: true, writable: true, configurable: true });
  }
  return out;
}

/** Built once per span: every later lookup is a Map get, not a scan of the list. */
export function attrsOf(list: readonly KeyValue[] | undefined): Attrs {
  const map = new Map<string, unknown>();
  if (list) for (const { key, value } of list) map.set(key, plain(value));
  return map;
}

export const asString = (value: unknown): string | null =>
  typeof value === "string" ? value : typeof value === "number" || typeof value === "boolean" ? String(value) : null;

/** A count: a non-negative integer, from a number or a string of digits. */
export function asCount(value: unknown): number | null {
  const n = typeof value === "string" && /^\d+$/.test(value) ? Number(value) : value;
  return typeof n === "number" && Number.isSafeInteger(n) && n >= 0 ? n : null;
}

/** A cost: a finite non-negative number, from a number or a decimal string. */
export function asCost(value: unknown): number | null {
  const n = typeof value === "string" && value.trim() !== "" ? Number(value) : value;
  return typeof n === "number" && Number.isFinite(n) && n >= 0 ? n : null;
}

const DIGITS = /^\d+$/;

/** `YYYY-MM-DDTHH:MM:SS` by whole second since the epoch: spans of a request share their seconds. */
const seconds = new Map<number, string | undefined>();

function secondText(second: number): string | undefined {
  if (seconds.has(second)) return seconds.get(second);
  const date = new Date(second * 1000);
  const text = Number.isNaN(date.getTime()) ? undefined : date.toISOString().slice(0, 19);
  if (seconds.size >= 1024) seconds.clear();
  seconds.set(second, text);
  return text;
}

/**
 * A time in nanoseconds since the epoch (a decimal string) as a stored timestamp, truncated to
 * the microsecond: `2025-03-01T12:00:00.123456Z` (always six digits). String slicing, so no digit
 * is lost to a double; absent, "0" or not digits: undefined.
 */
export function nanosToTimestamp(nanos: string | undefined): Timestamp | undefined {
  if (nanos === undefined || !DIGITS.test(nanos)) return undefined;
  const padded = nanos.padStart(10, "0");
  const us = Number(padded.slice(0, -3));
  if (us === 0 && Number(padded) === 0) return undefined;
  const second = secondText(Number(padded.slice(0, -9)));
  return second === undefined ? undefined : { iso: `${second}.${padded.slice(-9, -3)}Z`, us };
}

/** A nanosecond string left-padded to 20 digits, so that such strings sort as numbers. */
export const padNanos = (nanos: string) => nanos.padStart(20, "0");
