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
 */
import { readFileSync } from "node:fs";
import fc from "fast-check";
import { parse as parseYaml } from "yaml";

// Schemas are plain parsed YAML; `any` keeps the walker short (test code, see biome.json).
export type Schema = any;
export type Segment = string | number;

export interface Spec {
  paths: Record<string, Record<string, any>>;
  components: Record<string, Record<string, any>>;
  security?: Record<string, string[]>[];
}

export const loadSpec = (url: URL): Spec => parseYaml(readFileSync(url, "utf8")) as Spec;

// ---------------------------------------------------------------------------------- operations

export type Security = "apiKey" | "jwt" | "none";

export interface Parameter {
  name: string;
  in: "query" | "path" | "header" | "cookie";
  required: boolean;
  schema: Schema;
}

export interface Operation {
  operationId: string;
  method: string;
  path: string;
  security: Security;
  /** The JSON request body schema (its `$ref` kept, so component names stay visible), if any. */
  body: Schema | undefined;
  parameters: Parameter[];
  /** The status codes the operation documents. */
  responses: number[];
}

const METHODS = ["get", "put", "post", "delete", "patch", "head", "options"];

/** Every operation of the spec, in document order. */
export function operationsOf(spec: Spec): Operation[] {
  const ops: Operation[] = [];
  for (const [path, item] of Object.entries(spec.paths)) {
    for (const method of METHODS) {
      const op = item[method];
      if (!op) continue;
      const requirements: Record<string, string[]>[] = op.security ?? spec.security ?? [];
      const schemes = requirements.flatMap((r) => Object.keys(r));
      const security: Security = schemes.includes("bearerAuth")
        ? "jwt"
        : schemes.some((s) => /ApiKey$/.test(s))
          ? "apiKey"
          : "none";
      const requestBody = op.requestBody ? deref(spec, op.requestBody).node : undefined;
      const parameters = [...(item.parameters ?? []), ...(op.parameters ?? [])].map(
        (p: Schema) => deref(spec, p).node as Parameter,
      );
      ops.push({
        operationId: op.operationId,
        method: method.toUpperCase(),
        path,
        security,
        body: requestBody?.content?.["application/json"]?.schema,
        parameters,
        responses: Object.keys(op.responses ?? {}).map(Number),
      });
    }
  }
  return ops;
}

/** Follows `$ref`s; `name` is the last component the chain went through. */
export function deref(spec: Spec, node: Schema): { node: Schema; name: string | undefined } {
  let name: string | undefined;
  let current = node;
  for (let hops = 0; current && typeof current === "object" && typeof current.$ref === "string"; hops++) {
    if (hops > 32) throw new Error(`$ref cycle at ${current.$ref}`);
    const parts = (current.$ref as string).replace(/^#\//, "").split("/");
    name = parts[parts.length - 1];
    current = parts.reduce((at: Schema, part) => at?.[part.replaceAll("~1", "/").replaceAll("~0", "~")], spec);
    if (current === undefined) throw new Error(`unresolved $ref ${node.$ref}`);
  }
  return { node: current, name };
}

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

// ---------------------------------------------------------------------------------- strings

/** SQL metacharacters, escapes, invisible and right-to-left marks, emoji, NaN-like and prototype words. */
export const ODD_STRINGS = [
  "'",
  '"',
  "';--",
  "' OR '1'='1",
  '"; DROP TABLE sessions; --',
  "%",
  "_",
  "%_%",
  "\\",
  "\\\\'",
  "\0",
  "a\0b",
  "\n",
  "\r\n",
  "\t",
  "\u0085",
  "\u2028\u2029",
  "\u200b",
  "\u200d",
  "\u200e",
  "\u200f",
  "\u202e",
  "\u2066",
  "\ufeff",
  "\ufffd",
  "\uffff",
  "\u{10ffff}",
  "\u{e0001}",
  "😀",
  "👨‍👩‍👧‍👦",
  "🇺🇳",
  "é",
  "e\u0301",
  "ß",
  "İ",
  "ﷺ",
  "עברית",
  "العربية",
  "中文",
  "NaN",
  "-NaN",
  "Infinity",
  "-Infinity",
  "1e309",
  "-0",
  "0x10",
  "null",
  "undefined",
  "true",
  "__proto__",
  "constructor",
  "prototype",
  "toString",
  "hasOwnProperty",
  // biome-ignore lint/suspicious/noTemplateCurlyInString: a template-injection probe, on purpose
  "${7*7}",
  "{{7*7}}",
  "<script>alert(1)</script>",
  "../../etc/passwd",
  "%00",
  "%2e%2e%2f",
  "\\u0000",
  "\\ud800",
];

/** Object keys a client might send that are dangerous in JavaScript or awkward in paths. */
export const ODD_KEYS = [
  "__proto__",
  "constructor",
  "prototype",
  "toString",
  "valueOf",
  "hasOwnProperty",
  "__defineGetter__",
  "",
  " ",
  "a.b",
  "a[0]",
  "0",
  "-1",
  "$ref",
  "'",
  '"',
  "\0",
  "😀",
  "\u202e",
  "OS Release",
];

/** `text` cut to at most `max` and padded to at least `min` code points (JSON Schema counts code points). */
export function clampText(text: string, min: number, max: number | undefined): string {
  const points = Array.from(text);
  const cut = max === undefined ? points : points.slice(0, max);
  while (cut.length < min) cut.push("x");
  return cut.join("");
}

const piece = fc.oneof(
  { weight: 4, arbitrary: fc.string({ unit: "binary", maxLength: 6 }) },
  { weight: 3, arbitrary: pickFrom(...ODD_STRINGS) },
  { weight: 1, arbitrary: fc.string({ unit: "grapheme", maxLength: 4 }) },
);

/** Well-formed Unicode text (no lone surrogates: a body cannot carry them, see lib/json.ts). */
export function textArb(min = 0, max?: number): fc.Arbitrary<string> {
  const short = fc.array(piece, { maxLength: 6 }).map((parts) => parts.join(""));
  // A long string: one random chunk repeated, so generating it stays cheap.
  const long = fc
    .tuple(fc.string({ unit: "binary", minLength: 1, maxLength: 8 }), fc.integer({ min: 1_000, max: 60_000 }))
    .map(([chunk, n]) => chunk.repeat(Math.ceil(n / chunk.length)));
  // Long strings are rare per string, yet most bodies hold dozens of strings.
  const choices: fc.WeightedArbitrary<string>[] = [
    { weight: 200, arbitrary: short },
    { weight: 1, arbitrary: long },
  ];
  // Strings exactly at the limit, where off-by-one and UTF-16 length bugs live.
  if (max !== undefined && max > 0) {
    choices.push({ weight: 12, arbitrary: fc.string({ unit: "binary", minLength: max, maxLength: max }) });
  }
  return fc.oneof(...choices).map((text) => clampText(text, min, max));
}

export const keyArb: fc.Arbitrary<string> = fc.oneof(
  { weight: 2, arbitrary: pickFrom("__proto__", "constructor", "prototype") },
  { weight: 2, arbitrary: pickFrom(...ODD_KEYS) },
  { weight: 3, arbitrary: fc.string({ unit: "binary", minLength: 1, maxLength: 12 }) },
  { weight: 1, arbitrary: textArb(0, 40) },
);

// ---------------------------------------------------------------------------------- timestamps (G6)

const pad = (n: number, width = 2) => String(n).padStart(width, "0");
const isLeap = (y: number) => (y % 4 === 0 && y % 100 !== 0) || y % 400 === 0;
const daysIn = (y: number, m: number) => [31, isLeap(y) ? 29 : 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31][m - 1] ?? 0;

/** Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's days_from_civil). */
function daysFromCivil(y: number, m: number, d: number): number {
  const yy = m <= 2 ? y - 1 : y;
  const era = Math.floor(yy / 400);
  const yoe = yy - era * 400;
  const doy = Math.floor((153 * (m + (m > 2 ? -3 : 9)) + 2) / 5) + d - 1;
  const doe = yoe * 365 + Math.floor(yoe / 4) - Math.floor(yoe / 100) + doy;
  return era * 146097 + doe - 719468;
}

function civilFromDays(z0: number): [number, number, number] {
  const z = z0 + 719468;
  const era = Math.floor(z / 146097);
  const doe = z - era * 146097;
  const yoe = Math.floor((doe - Math.floor(doe / 1460) + Math.floor(doe / 36524) - Math.floor(doe / 146096)) / 365);
  const doy = doe - (365 * yoe + Math.floor(yoe / 4) - Math.floor(yoe / 100));
  const mp = Math.floor((5 * doy + 2) / 153);
  const d = doy - Math.floor((153 * mp + 2) / 5) + 1;
  const m = mp + (mp < 10 ? 3 : -9);
  return [yoe + era * 400 + (m <= 2 ? 1 : 0), m, d];
}

const G6 =
  /^(\d{4})-(\d{2})-(\d{2})[Tt ](\d{2}):(\d{2})(?::(\d{2})(?:[.,](\d+))?)?(?:[Zz]|([+-])(\d{2})(?::?(\d{2}))?)?$/;

/**
 * The stored form of a G6 timestamp (UTC, `Z`, the fraction's first six digits as given), or
 * undefined when the text is not one. Written from the contract, apart from lib/timestamps.ts.
 */
export function utcOf(text: string): string | undefined {
  const m = G6.exec(text);
  if (!m) return undefined;
  const [y, mo, d, h, mi] = m.slice(1, 6).map(Number) as [number, number, number, number, number];
  const s = Number(m[6] ?? 0);
  const offset = (m[8] === "-" ? -1 : 1) * (Number(m[9] ?? 0) * 60 + Number(m[10] ?? 0));
  if (mo < 1 || mo > 12 || d < 1 || d > daysIn(y, mo) || h > 23 || mi > 59 || s > 59) return undefined;
  if (Number(m[9] ?? 0) > 23 || Number(m[10] ?? 0) > 59) return undefined;
  const minutes = daysFromCivil(y, mo, d) * 1440 + h * 60 + mi - offset;
  const [uy, um, ud] = civilFromDays(Math.floor(minutes / 1440));
  if (uy < 0 || uy > 9999) return undefined;
  const dayMinutes = minutes - Math.floor(minutes / 1440) * 1440;
  const fraction = (m[7] ?? "").slice(0, 6);
  return `${pad(uy, 4)}-${pad(um)}-${pad(ud)}T${pad(Math.floor(dayMinutes / 60))}:${pad(dayMinutes % 60)}:${pad(s)}${fraction === "" ? "" : `.${fraction}`}Z`;
}

/** Valid G6 timestamps in every documented form; years 0001-9998 so that UTC stays in 0000-9999. */
export const timestampArb: fc.Arbitrary<string> = fc
  .record({
    y: fc.integer({ min: 1, max: 9998 }),
    m: fc.integer({ min: 1, max: 12 }),
    d: fc.integer({ min: 1, max: 31 }),
    h: fc.integer({ min: 0, max: 23 }),
    mi: fc.integer({ min: 0, max: 59 }),
    s: fc.option(fc.integer({ min: 0, max: 59 }), { nil: undefined }),
    fraction: fc.option(fc.stringMatching(/^\d{1,9}$/), { nil: undefined }),
    sep: pickFrom("T", "t", " "),
    offset: fc.oneof(
      pickFrom("", "Z", "z", "+00:00", "-00:00"),
      fc
        .tuple(pickFrom("+", "-"), fc.integer({ min: 0, max: 23 }), fc.integer({ min: 0, max: 59 }))
        .chain(([sign, oh, om]) =>
          pickFrom(`${sign}${pad(oh)}:${pad(om)}`, `${sign}${pad(oh)}${pad(om)}`, `${sign}${pad(oh)}`),
        ),
    ),
  })
  .map(({ y, m, d, h, mi, s, fraction, sep, offset }) => {
    const day = Math.min(d, daysIn(y, m));
    const seconds = s === undefined ? "" : `:${pad(s)}${fraction === undefined ? "" : `.${fraction}`}`;
    return `${pad(y, 4)}-${pad(m)}-${pad(day)}${sep}${pad(h)}:${pad(mi)}${seconds}${offset}`;
  });

/** Text that is not a G6 timestamp: a date alone, out-of-range parts, NaN-like words, near misses. */
export const badTimestampArb: fc.Arbitrary<string> = fc
  .oneof(
    timestampArb.map((ts) => ts.slice(0, 10)), // a date alone
    timestampArb.map((ts) => `${ts.slice(0, 4)}-13${ts.slice(7)}`),
    timestampArb.map((ts) => `${ts.slice(0, 7)}-32${ts.slice(10)}`),
    timestampArb.map((ts) => `${ts.slice(0, 11)}24${ts.slice(13)}`),
    timestampArb.map((ts) => `${ts.slice(0, 14)}60${ts.slice(16)}`),
    timestampArb.map((ts) => `${ts.slice(0, 10)}X${ts.slice(11)}`),
    timestampArb.map((ts) => `${ts} `),
    timestampArb.map((ts) => ` ${ts}`),
    timestampArb.map((ts) => `${ts}\0`),
    timestampArb.map((ts) => `${ts}Q`),
    timestampArb.map((ts) => `+${ts}`),
    timestampArb.map((ts) => ts.replace(/\d/, "\uff11")), // a full-width digit
    pickFrom(
      "",
      " ",
      "NaN",
      "Infinity",
      "-Infinity",
      "null",
      "now",
      "0",
      "1e3",
      "2026-02-29T00:00:00Z",
      "2026-02-30T10:00:00Z",
      "1900-02-29T00:00Z",
      "2026-11-22T05:09:43+24:00",
      "2026-11-22T05:09:43+05:60",
      "2026-11-22T05:09:43.Z",
      "2026-11-22T05:09:4Z",
      "2026-11-22T5:09:43Z",
      "2026-1-22T05:09:43Z",
      "12026-11-22T05:09:43Z",
      "2026-11-22T05Z",
      "9999-12-31T23:59:59-01:00",
      "0000-01-01T00:00:00+00:01",
      "2026-11-22T05:09:43Z[Europe/Paris]",
      "Sun, 22 Nov 2026 05:09:43 GMT",
      "1795325383",
    ),
    textArb(0, 40),
  )
  .filter((text) => utcOf(text) === undefined);

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

const bigNumbers = [
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

// ---------------------------------------------------------------------------------- schemas

type Type = "string" | "integer" | "number" | "boolean" | "array" | "object" | "null";
const ALL_TYPES: Type[] = ["string", "integer", "number", "boolean", "array", "object", "null"];

/** The types a schema allows, or undefined when it says none (any JSON value). */
function typesOf(s: Schema): Type[] | undefined {
  if (s.type !== undefined) return Array.isArray(s.type) ? s.type : [s.type];
  if (s.properties || s.required || s.additionalProperties !== undefined) return ["object"];
  if (s.items || s.minItems !== undefined || s.maxItems !== undefined) return ["array"];
  return undefined;
}

function typeOf(value: unknown): Type {
  if (value === null) return "null";
  if (Array.isArray(value)) return "array";
  if (typeof value === "number") return Number.isInteger(value) ? "integer" : "number";
  return typeof value as Type;
}

/** The schema without its if/then/else. */
function unconditional(s: Schema): Schema {
  const { if: _if, then: _then, else: _else, ...rest } = s;
  return rest;
}

const allows = (types: Type[], t: Type) => types.includes(t) || (t === "integer" && types.includes("number"));

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
    const at = (what: string, arb: fc.Arbitrary<unknown>, where = path, exact = !conditional) =>
      out.push({ path: where, what, expectPath: exact ? pathText(where) : undefined, value: arb });

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
    const types = typesOf(s);
    if (types !== undefined) {
      const wrong = ALL_TYPES.filter((t) => !allows(types, t));
      if (types.includes("integer") && !types.includes("number")) wrong.push("number");
      if (wrong.length > 0) at("wrong type", fc.oneof(...wrong.map((t) => this.wrongOfType(t))));
    }
    const kind = typeOf(value);
    if (kind === "string" && types?.includes("string")) {
      const text = value as string;
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
    if ((kind === "integer" || kind === "number") && s.maximum !== undefined) {
      const over = [s.maximum + 1, s.maximum * 2 + 1, 2 ** 63, 1e300, Number.MAX_VALUE].filter((n) => n > s.maximum);
      at("above the maximum", pickFrom(...over));
    }
    if ((kind === "integer" || kind === "number") && s.minimum !== undefined) {
      at(
        "below the minimum",
        pickFrom(s.minimum - 1, s.minimum - 1e-9, s.minimum - 1e6, -Number.MAX_VALUE).filter((n) => n < s.minimum),
      );
    }
    if (kind === "array" && types?.includes("array")) {
      const list = value as unknown[];
      if ((s.minItems ?? 0) > 0) at("too few items", fc.constant([]));
      if (s.maxItems !== undefined) {
        const item =
          list.length > 0 && JSON.stringify(list[0]).length < 2_000 ? list[0] : this.minimal(s.items ?? true);
        const lengths = pickFrom(s.maxItems + 1, Math.max(s.maxItems + 1, 10_000));
        at(
          "too many items",
          lengths.map((n) => Array.from({ length: n }, () => item)),
        );
      }
      list.slice(0, 3).forEach((item, i) => {
        out.push(...this.mutations(s.items ?? true, item, [...path, i], conditional));
      });
    }
    if (kind === "object" && types?.includes("object")) {
      const obj = value as Record<string, unknown>;
      const props: Record<string, Schema> = s.properties ?? {};
      for (const key of s.required ?? []) {
        if (Object.hasOwn(obj, key)) at("missing required", fc.constant(DELETE), [...path, key]);
      }
      if (s.additionalProperties === false) {
        at("unknown property", anyJsonArb, [...path, "extra-property"]);
      }
      for (const key of Object.keys(obj)) {
        const child = Object.getOwnPropertyDescriptor(obj, key)?.value;
        const sub = ownProperty(props, key) ?? (isObject(s.additionalProperties) ? s.additionalProperties : undefined);
        if (sub !== undefined) out.push(...this.mutations(sub, child, [...path, key], conditional));
      }
    }
    return out;
  }

  private wrongOfType(t: Type): fc.Arbitrary<unknown> {
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
