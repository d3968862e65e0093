/** Plain JSON values for the fuzzer: copies, canonical text, depth, a change at a path, G2 paths, and unbiased picks. */
import fc from "fast-check";
import type { Schema, Segment } from "./spec.ts";

// ---------------------------------------------------------------------------------- values

export const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value);

/** An object with exactly these own properties; `__proto__` stays a plain key (no prototype change). */
export const objectOf = (entries: [string, unknown][]): Record<string, unknown> => Object.fromEntries(entries);

/** A deep copy that keeps `__proto__` keys as own data (what the server gets after JSON.parse). */
export const clone = <T>(value: T): T => JSON.parse(JSON.stringify(value));

/** JSON with sorted keys, so two values compare whatever their key order. */
export function canonical(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonical).join(",")}]`;
  if (isObject(value)) {
    const keys = Object.keys(value).sort();
    return `{${keys.map((k) => `${JSON.stringify(k)}:${canonical(Object.getOwnPropertyDescriptor(value, k)?.value)}`).join(",")}}`;
  }
  return JSON.stringify(value) ?? "undefined";
}

/** How deeply arrays and objects nest; the body's root object is level 1 (L1). */
export function depthOf(value: unknown): number {
  if (Array.isArray(value)) return 1 + Math.max(0, ...value.map(depthOf));
  if (isObject(value)) return 1 + Math.max(0, ...Object.values(value).map(depthOf));
  return 0;
}

/** A schema's own property (never one inherited from Object.prototype, such as `constructor`). */
export const ownProperty = (properties: Record<string, Schema> | undefined, key: string): Schema =>
  properties !== undefined && Object.hasOwn(properties, key) ? properties[key] : undefined;

/** `value` with the thing at `path` replaced (or removed, for DELETE); the input is not changed. */
export const DELETE = Symbol("delete");
export function setAt(value: unknown, path: Segment[], replacement: unknown): unknown {
  if (path.length === 0) return replacement;
  const root = clone(value);
  let at: any = root;
  for (const segment of path.slice(0, -1)) at = at[segment];
  const last = path[path.length - 1] as Segment;
  if (replacement === DELETE) {
    if (Array.isArray(at)) at.splice(last as number, 1);
    else delete at[last];
  } else Object.defineProperty(at, last, { value: replacement, enumerable: true, writable: true, configurable: true });
  return root;
}

/** A path in the dotted/bracket form of G2: `events[3].init_timestamp`, `host_env["OS Release"]`, `""` for the root. */
export function pathText(path: Segment[]): string {
  let text = "";
  for (const segment of path) {
    if (typeof segment === "number") text += `[${segment}]`;
    else if (/^[A-Za-z_$][\w$]*$/.test(segment)) text += text === "" ? segment : `.${segment}`;
    else text += `[${JSON.stringify(segment)}]`;
  }
  return text;
}

/**
 * One of the values, uniformly. fast-check's constantFrom favours the first values inside
 * arrays and objects (it draws a biased index), which hid most of every list below.
 */
export const pickFrom = <T>(...values: T[]): fc.Arbitrary<T> => fc.noBias(fc.constantFrom(...values));
