/**
 * Fuzz properties of what the other properties leave fixed (issue 27, decision 031): query
 * parameter *names* (any name, and every `extra.<key>` family: unicode, quotes, backslashes,
 * brackets, `$`, `%`, `_`, `*`, percent-encodings right, odd and broken), the `extra` object's keys
 * in POST /v2/delete_sessions (as a dry run), and request *headers* (random names and values, as an
 * HTTP/1.1 client can send them) on every operation. Every answer: no 5xx, and a 4xx is a G2 body
 * that leaks nothing (an OTLP operation's failures are a Status: only no 5xx there).
 *
 * Store-agnostic: the app is build()'s, on the store STORE names (test/fuzz.names.test.ts runs
 * it on all three), seeded with sessions whose extra keys are the syntax the names are made of.
 */
import fc from "fast-check";
import type { LightMyRequestResponse } from "fastify";
import type { Test } from "tap";
import type { Operation } from "../arbitraries/spec.ts";
import { ODD_KEYS, ODD_STRINGS, textArb } from "../arbitraries/strings.ts";
import { pickFrom } from "../arbitraries/values.ts";
import { API_KEY, build, OTHER_PROJECT_KEY, type TestApp } from "../helper.ts";
import { checkAnswer, fail, property } from "./checks.ts";
import { conv } from "./rules.ts";
import { operations, otlpOperations, withoutBody } from "./setup.ts";

const METRICS_TOKEN = "fuzz-names-metrics-token-0123456789";

/** The characters that are syntax in a JSON path, a LIKE or GLOB pattern, SQL, FTS or a query string. */
const SYNTAX = ['"', "\\", ".", "[", "]", "$", "%", "_", "*", "'", "&", "=", "+", "#", "?", "/", ";", ",", ":", "@"];

export interface NamesApp {
  api: TestApp;
  jwt: string;
}

/** The app, with sessions whose extra keys and values hold that syntax, and a JWT's session. */
export async function namesApp(t: Test): Promise<NamesApp> {
  const api = await build(t, { metricsToken: METRICS_TOKEN });
  const extra: Record<string, unknown> = { a: { b: "x" }, retries: 3, flag: true, nothing: null, list: [1] };
  for (const c of SYNTAX) {
    extra[`a${c}b`] = `x${c}y`;
    extra[c] = 3.5;
  }
  for (const key of ODD_KEYS) if (key !== "") extra[key] = key;
  const jwt = await api.session("names-main", { ...extra, tags: ["seed", "'", '"', "%"] });
  await api.session("names-plain", { customer: "acme", a: "x" });
  await api.session("names-foreign", { ...extra }, OTHER_PROJECT_KEY);
  const created = await api.withJwt(
    "/v2/create_events",
    {
      events: [
        { type: "llm", model: "m'1", id: "e1" },
        { type: "tool", name: 'to"ol', id: "e2" },
      ],
    },
    jwt,
  );
  if (created.statusCode !== 200) throw new Error(`seeding: ${created.body}`);
  return { api, jwt };
}

function credentialsOf(app: NamesApp, op: Operation): Record<string, string> {
  if (op.security === "jwt") return { authorization: `Bearer ${app.jwt}` };
  if (op.security === "metrics") return { authorization: `Bearer ${METRICS_TOKEN}` };
  return { "x-agentmon-api-key": API_KEY };
}

// ----------------------------------------------------------------------------------- names

const hex = (byte: number) => `%${byte.toString(16).toUpperCase().padStart(2, "0")}`;
const UNRESERVED = /[A-Za-z0-9\-_.~]/;

/**
 * Text in a query string as a client may write it: each UTF-8 byte percent-encoded but the
 * unreserved ones (`component`, what encodeURIComponent does, but a lone surrogate is U+FFFD
 * rather than an exception), every byte encoded (`all`), printable ASCII left raw (`raw`: `&`,
 * `=`, `%`, `+` then mean what they mean in a query), or in lowercase hex (`lower`).
 */
function encodeAs(text: string, mode: "component" | "all" | "raw" | "lower"): string {
  let out = "";
  for (const byte of Buffer.from(text, "utf8")) {
    const char = String.fromCharCode(byte);
    if (mode === "raw" && byte > 0x20 && byte < 0x7f && char !== "#") out += char;
    else if ((mode === "component" || mode === "lower") && byte < 0x80 && UNRESERVED.test(char)) out += char;
    else out += mode === "lower" ? hex(byte).toLowerCase() : hex(byte);
  }
  return out;
}

/** Escapes that are odd or broken: a lone `%`, bad hex, bytes that are not UTF-8, an encoded surrogate, double encoding. */
const BROKEN_ESCAPES = [
  "%",
  "%z",
  "%4",
  "%C3%28",
  "%FF",
  "%C0%AF",
  "%ED%A0%80",
  "%F4%90%80%80",
  "%2525",
  "%00",
  "+",
  "%2B",
];

const syntaxText = fc
  .array(fc.oneof(pickFrom(...SYNTAX), fc.string({ unit: "grapheme-ascii", maxLength: 3 })), { maxLength: 6 })
  .map((parts) => parts.join(""));

/** A name's text, before encoding: keys of every kind, with syntax in them. */
const nameText = fc.oneof(
  { weight: 3, arbitrary: syntaxText },
  { weight: 2, arbitrary: pickFrom(...ODD_KEYS, ...ODD_STRINGS) },
  { weight: 2, arbitrary: fc.string({ unit: "binary", maxLength: 12 }) },
  { weight: 1, arbitrary: textArb(0, 40) },
  { weight: 1, arbitrary: pickFrom(...SYNTAX.map((c) => `a${c}b`), "a.b", "$.a", 'a"."b', "$[0]", "a[0]", "retries") },
);

/** Names of the families the operations read, and names near them. */
const FAMILIES = [
  "extra.",
  "extra",
  "extra..",
  "EXTRA.",
  "Extra.",
  "extra.extra.",
  "tag",
  "tag[]",
  "tag.",
  "limit",
  "cursor",
  "q",
  "sort",
  "by",
  "format",
  "__proto__",
  "__proto__.",
  "constructor",
  "hasOwnProperty",
  "toString",
  "",
];

/** A query parameter's name as it goes into the URL. */
const nameArb = fc
  .record({
    family: fc.oneof({ weight: 3, arbitrary: fc.constant("extra.") }, { weight: 2, arbitrary: pickFrom(...FAMILIES) }),
    text: nameText,
    mode: pickFrom<"component" | "all" | "raw" | "lower">("component", "component", "all", "raw", "lower"),
    familyMode: pickFrom<"component" | "all" | "raw">("raw", "raw", "all", "component"),
    // Rare: a broken escape makes the whole query a 400 (or U+FFFD), so the rest would not reach SQL.
    broken: fc.oneof(
      { weight: 14, arbitrary: fc.constant(undefined) },
      { weight: 1, arbitrary: fc.tuple(pickFrom(...BROKEN_ESCAPES), fc.nat()) },
    ),
  })
  .map(({ family, text, mode, familyMode, broken }) => {
    let name = encodeAs(family, familyMode) + encodeAs(text, mode);
    if (broken) {
      const [bad, at] = broken;
      const i = name.length === 0 ? 0 : at % (name.length + 1);
      name = name.slice(0, i) + bad + name.slice(i);
    }
    return name;
  });

/** A value: what a filter could hold (numbers in every spelling), odd text, or syntax. */
const valueArb = fc
  .tuple(
    fc.oneof(
      pickFrom(
        "3",
        "3.0",
        "3e0",
        "-0",
        "1e2",
        "1e400",
        "0x10",
        "+3",
        ".5",
        "true",
        "false",
        "null",
        "[1]",
        '{"b":"x"}',
      ),
      pickFrom("x", ...SYNTAX.map((c) => `x${c}y`)),
      syntaxText,
      textArb(0, 30),
      pickFrom("", "\0", "x".repeat(5000)),
    ),
    pickFrom<"component" | "all" | "raw" | "lower">("component", "component", "raw", "all", "lower"),
  )
  .map(([text, mode]) => encodeAs(text, mode));

/** The operations that read the session filters come up most, since names reach their SQL. */
const FILTERING = new Set([
  "listSessions",
  "exportSessions",
  "getAnalyticsTimeseries",
  "getAnalyticsBreakdown",
  "getUiSessions",
]);

/** What every answer must be; an OTLP operation fails with a Status, so only its status is looked at. */
function checked(res: LightMyRequestResponse, label: string, op: Operation) {
  if (otlpOperations.includes(op)) {
    if (res.statusCode >= 500) fail(`a 5xx: ${label}: ${res.statusCode} ${res.body.slice(0, 400)}`);
  } else checkAnswer(res, label, op);
}

let address = 0;
/** Each case from its own address, so that failed credentials (4.6) do not spill into the next. */
const nextAddress = () => `10.2.${(++address >> 8) & 255}.${address & 255}`;

const fill = (op: Operation, id: string) => op.path.replace(/\{[^}]+\}/g, () => encodeURIComponent(id));

export async function queryNamesNever5xx(t: Test, app: NamesApp, runs: number) {
  const filtering = withoutBody.filter((op) => FILTERING.has(op.operationId));
  const cases = fc.record({
    op: fc.oneof({ weight: 4, arbitrary: pickFrom(...filtering) }, { weight: 1, arbitrary: pickFrom(...withoutBody) }),
    params: fc.array(
      fc.tuple(
        nameArb,
        valueArb,
        fc.nat(19).map((n) => n === 0),
      ),
      { minLength: 1, maxLength: 3 },
    ),
    credentials: fc.oneof({ weight: 9, arbitrary: fc.constant(true) }, { weight: 1, arbitrary: fc.constant(false) }),
  });
  await property(t, "query parameter names", cases, runs, async ({ op, params, credentials }) => {
    // A name given twice now and then (a filter twice is a 400 of its own).
    const query = params.flatMap(([name, value, twice]) =>
      twice ? [`${name}=${value}`, `${name}=${value}`] : [`${name}=${value}`],
    );
    const url = `${fill(op, "names-main")}?${query.join("&")}`;
    const res = await app.api.inject({
      method: op.method as "GET",
      url,
      headers: credentials ? credentialsOf(app, op) : {},
      remoteAddress: nextAddress(),
    });
    checked(res, `${op.method} ${url.slice(0, 300)}`, op);
  });
}

/** delete_sessions's `extra` object: any key, any JSON value, always a dry run. */
export async function deleteExtraKeysNever5xx(t: Test, app: NamesApp, runs: number) {
  const keyArb = fc.oneof(nameText, pickFrom("a.b", "$.a", 'a"."b', "retries", "__proto__"));
  const value = fc.oneof(
    valueArb.map((text) => decodeURIComponentSafe(text)),
    fc.double(),
    fc.integer(),
    fc.boolean(),
    pickFrom<unknown>(null, {}, [], { b: "x" }, "3.0", 3),
  );
  const cases = fc.record({
    extra: fc.dictionary(keyArb, value, { maxKeys: 22 }),
    other: fc.option(fc.record({ tag: fc.array(textArb(0, 10), { maxLength: 2 }), q: textArb(0, 20) }), {
      nil: undefined,
    }),
  });
  const before = await app.api.withKey("/v2/delete_sessions", { to: new Date().toISOString(), dry_run: true });
  await property(t, "delete_sessions extra keys (dry run)", cases, runs, async ({ extra, other }) => {
    const payload = JSON.stringify({ ...(other ?? {}), extra, dry_run: true });
    const res = await app.api.inject({
      method: "POST",
      url: "/v2/delete_sessions",
      headers: { "content-type": "application/json", "x-agentmon-api-key": API_KEY },
      payload,
      remoteAddress: nextAddress(),
    });
    checkAnswer(res, `POST /v2/delete_sessions ${payload.slice(0, 300)}`);
    if (res.statusCode === 200 && res.json().dry_run !== true) fail(`not a dry run: ${payload.slice(0, 300)}`);
  });
  const after = await app.api.withKey("/v2/delete_sessions", { to: new Date().toISOString(), dry_run: true });
  t.equal(after.json().sessions, before.json().sessions, "the dry runs removed nothing");
}

function decodeURIComponentSafe(text: string) {
  try {
    return decodeURIComponent(text);
  } catch {
    return text;
  }
}

// ----------------------------------------------------------------------------------- headers

const TOKEN = "!#$%&'*+-.^_`|~0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ";
/** A header's name: an RFC 9110 token (a client can send no other), or one the server reads. */
const headerName = fc.oneof(
  { weight: 2, arbitrary: fc.string({ unit: pickFrom(...TOKEN), minLength: 1, maxLength: 30 }) },
  {
    weight: 3,
    arbitrary: pickFrom(
      "content-type",
      "content-encoding",
      "content-length",
      "transfer-encoding",
      "authorization",
      "x-agentmon-api-key",
      "x-agentops-api-key",
      "X-Agentmon-Api-Key",
      "accept",
      "accept-encoding",
      "accept-language",
      "if-none-match",
      "if-modified-since",
      "range",
      "host",
      "x-forwarded-for",
      "x-forwarded-host",
      "x-forwarded-proto",
      "x-request-id",
      "traceparent",
      "tracestate",
      "origin",
      "cookie",
      "user-agent",
      "connection",
      "expect",
      "te",
      "upgrade",
      "__proto__",
      "constructor",
    ),
  },
);

/** A field value: visible ASCII, spaces and tabs inside, obs-text bytes (as Node reads them: latin1). */
const fieldChar = fc.oneof(
  { weight: 20, arbitrary: fc.integer({ min: 0x21, max: 0x7e }).map((c) => String.fromCharCode(c)) },
  { weight: 2, arbitrary: pickFrom(" ", "\t") },
  { weight: 2, arbitrary: fc.integer({ min: 0x80, max: 0xff }).map((c) => String.fromCharCode(c)) },
);
const headerValue = fc
  .oneof(
    { weight: 3, arbitrary: fc.string({ unit: fieldChar, maxLength: 60 }) },
    {
      weight: 2,
      arbitrary: pickFrom(
        "application/json",
        "application/json; charset=latin1",
        "application/x-protobuf",
        "text/plain",
        "multipart/form-data; boundary=x",
        "gzip",
        "deflate",
        "br",
        "gzip, gzip",
        "identity",
        "chunked",
        "0",
        "-1",
        "99999999999999999999",
        "Bearer x.y.z",
        "Bearer ",
        `Bearer ${API_KEY}`,
        "Basic Og==",
        API_KEY,
        "*",
        'W/"x"',
        "bytes=0-1",
        "100-continue",
        "close",
        "keep-alive, Upgrade",
        "h2c",
        "127.0.0.1, 10.0.0.1",
        "",
      ),
    },
    { weight: 1, arbitrary: fc.string({ unit: fieldChar, minLength: 1, maxLength: 8 }).map((s) => s.repeat(500)) },
  )
  // A client's field value has no whitespace at its ends (Node's parser strips it).
  .map((value) => value.replace(/^[ \t]+|[ \t]+$/g, ""));

export async function headersNever5xx(t: Test, app: NamesApp, runs: number) {
  const cases = pickFrom(...operations).chain((op) =>
    fc.record({
      op: fc.constant(op),
      headers: fc.array(fc.tuple(headerName, headerValue), { maxLength: 8 }),
      credentials: fc.oneof({ weight: 4, arbitrary: fc.constant(true) }, { weight: 1, arbitrary: fc.constant(false) }),
      // A body the schema accepts (often one the contract refuses), or an empty object or nothing.
      body:
        op.body === undefined
          ? pickFrom("{}", "")
          : fc.oneof(
              conv.valid(op.body).map((value) => JSON.stringify(value)),
              pickFrom("{}", ""),
            ),
    }),
  );
  await property(t, "headers on every operation", cases, runs, async ({ op, headers, credentials, body }) => {
    const all: Record<string, string | string[]> = credentials ? { ...credentialsOf(app, op) } : {};
    if (op.body !== undefined || op.otlp !== undefined) all["content-type"] = "application/json";
    for (const [name, value] of headers) {
      const lower = name.toLowerCase();
      const before = all[lower];
      // A name sent twice is two lines (light-my-request writes an array as such).
      if (before === undefined) all[lower] = value;
      else all[lower] = [...(Array.isArray(before) ? before : [before]), value];
    }
    const payload = op.method === "GET" || op.method === "HEAD" ? undefined : body;
    const url = fill(op, "names-main");
    const res = await app.api.inject({
      method: op.method as "GET",
      url,
      headers: all as Record<string, string>,
      ...(payload === undefined ? {} : { payload }),
      remoteAddress: nextAddress(),
    });
    checked(res, `${op.method} ${url} ${JSON.stringify(all).slice(0, 400)}`, op);
  });
  const health = await app.api.inject({ method: "GET", url: "/healthz" });
  t.equal(health.statusCode, 200, "the server still answers /healthz");
}
