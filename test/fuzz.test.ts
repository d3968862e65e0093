/**
 * Property-based fuzzing (fast-check) of every operation in openapi.yaml, generated from its
 * schemas by test/arbitraries/, through real HTTP (app.inject) on a real SQLite file.
 *
 * For every operation with a JSON body:
 * - valid bodies (the schema's, made contract-valid by the fix-ups below) are answered 200 and
 *   read back intact through the store: strings byte for byte, unknown fields as sent;
 * - a valid body with one change that breaks the schema or the contract is answered 400 (or the
 *   403/404/409 the contract names) with a G2 body naming the changed path, and the database is
 *   unchanged, byte for byte;
 * - raw bodies (garbage text and bytes, wrong content types, gzip garbage, bad encodings, odd
 *   number tokens, bad credentials) never get a 5xx, and a refused one changes nothing;
 * - nesting around the 100-level limit is 200 up to it and 400 past it; bodies near 5 MiB are
 *   200 up to the limit and 413 past it.
 * Operations without a body get fuzzed path parameters, query strings and headers, and every
 * path gets the methods it does not declare (405). Operations added to openapi.yaml later are
 * covered by the generic parts automatically; the read-back oracles exist for the write
 * operations known today.
 *
 * Every case asserts: no 5xx; a 4xx is a JSON `{error, message[, details]}` that leaks nothing;
 * Object.prototype is not polluted. After each property the server still answers /healthz.
 * The seed is fixed (FUZZ_SEED overrides it) and printed, so any failure can be replayed;
 * FUZZ_SCALE multiplies the number of cases for a longer search.
 */
import { createHash } from "node:crypto";
import { join } from "node:path";
import { deflateSync, gzipSync } from "node:zlib";
import Database from "better-sqlite3";
import fc from "fast-check";
import type { LightMyRequestResponse } from "fastify";
import t, { type Test } from "tap";
import { SPEC_PATH } from "../app.ts";
import type { EventRecord } from "../domain/types.ts";
import { eventView } from "../domain/views.ts";
import { nested } from "./arbitraries/json.ts";
import type { Mutation } from "./arbitraries/mutations.ts";
import { SchemaArbitraries } from "./arbitraries/schema.ts";
import { loadSpec, type Operation, operationsOf, type Segment } from "./arbitraries/spec.ts";
import { textArb } from "./arbitraries/strings.ts";
import { utcOf } from "./arbitraries/timestamps.ts";
import {
  canonical,
  clone,
  DELETE,
  depthOf,
  isObject,
  objectOf,
  pathText,
  pickFrom,
  setAt,
} from "./arbitraries/values.ts";
import {
  API_KEY,
  build,
  decodeJwt,
  inspect,
  leaksNothing,
  MIB,
  OTHER_PROJECT_KEY,
  storedSession,
  type TestApp,
  tempDir,
} from "./helper.ts";

const SEED = Number(process.env.FUZZ_SEED ?? 20261122);
/** FUZZ_SCALE=10 runs ten times the cases, for a deeper search than the gate's. */
const SCALE = Number(process.env.FUZZ_SCALE ?? 1);
const runs = (n: number) => Math.ceil(n * SCALE);
const RUNS = {
  valid: runs(100),
  invalid: runs(150),
  raw: runs(60),
  depth: runs(15),
  read: runs(60),
  methods: runs(80),
  big: runs(8),
};

const spec = loadSpec(SPEC_PATH);
const operations = operationsOf(spec);
const withBody = operations.filter((op) => op.body !== undefined);
const withoutBody = operations.filter((op) => op.body === undefined);

// ---------------------------------------------------------------------------------- contract rules

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
const canonicalState = (value: string) =>
  Object.hasOwn(END_STATES, value.toLowerCase()) ? END_STATES[value.toLowerCase()] : undefined;
const badEndStateArb = fc
  .oneof(textArb(1, 64), pickFrom("constructor", "__proto__", "toString", "valueOf").chain(anyCase))
  .filter((s) => canonicalState(s) === undefined);

/** E2: the kinds, under `type` and under the SDK's `event_type`. */
const PLURAL: Record<string, string> = { llm: "llms", tool: "tools", action: "actions", error: "errors" };
const KIND_OF: Record<string, string> = { llms: "llm", tools: "tool", actions: "action", errors: "error" };

const conv = new SchemaArbitraries(spec, { refine: { EndState: () => endStateArb } });
const ref = (name: string) => ({ $ref: `#/components/schemas/${name}` });
const idArb = conv.valid(ref("Id")) as fc.Arbitrary<string>;

const own = (obj: unknown, key: string): unknown =>
  isObject(obj) ? Object.getOwnPropertyDescriptor(obj, key)?.value : undefined;
const given = (value: unknown): boolean => value !== undefined && value !== null;
const namesOf = (name: string) => new Set(Object.keys(conv.flatten(ref(name)).schema.properties ?? {}));
const SESSION_NAMED = namesOf("SessionFields");
const EVENT_NAMED = namesOf("EventUpdate");
const AGENT_NAMED = namesOf("CreateAgentRequest");
/** G5: fields no schema names are kept as sent, except a credential named `jwt`. */
const unknownOf = (raw: Record<string, unknown>, named: Set<string>) =>
  Object.keys(raw)
    .filter((key) => !named.has(key) && key !== "jwt")
    .map((key): [string, unknown] => [key, own(raw, key)]);

// ---------------------------------------------------------------------------------- the app under test

interface Ctx {
  api: TestApp;
  /** A hash of every row of every table, read through a second connection to the same file. */
  digest(): string;
  /** The session the JWT is bound to, its events and another session of the same project. */
  sessionId: string;
  jwt: string;
  eventIds: string[];
  otherSessionId: string;
  otherEventId: string;
  /** Sessions of the API key's project (odd ids on purpose), and one of the other project. */
  sessionIds: string[];
  foreignSessionId: string;
}

const SEEDED_SESSIONS = [
  "fuzz-main",
  "fuzz-other",
  "' OR '1'='1';--",
  "a\0b",
  "%_\\",
  "😀".repeat(256),
  "x".repeat(256),
];
const SEEDED_EVENTS = ["ev-llm", "ev-tool", "ev-action", "ev-error", "'\";--", "\0", "🇺🇳\u202e"];

/** Opens a session holding the seeded events and agent; answers its JWT. */
async function seededSession(api: TestApp, id: string): Promise<string> {
  const jwt = await api.session(id, { tags: ["seed"], host_env: { OS: { OS: "Linux" } } });
  const kinds = Object.keys(PLURAL);
  const events = SEEDED_EVENTS.map((id, i) => ({ id, type: kinds[i % kinds.length], name: "seed", params: { a: 1 } }));
  const created = await api.withJwt("/v2/create_events", { events }, jwt);
  const agent = await api.withJwt("/v2/create_agent", { id: "agent-seed", name: "seed", note: "kept" }, jwt);
  if (created.statusCode !== 200 || agent.statusCode !== 200) throw new Error(`seeding: ${created.body} ${agent.body}`);
  return jwt;
}

let freshSessions = 0;

/** The same app with the JWT bound to a new seeded session, so that read-backs stay small. */
async function fresh(ctx: Ctx): Promise<Ctx> {
  const sessionId = `fuzz-case-${++freshSessions}`;
  return { ...ctx, sessionId, jwt: await seededSession(ctx.api, sessionId) };
}

async function fuzzApp(t: Test): Promise<Ctx> {
  const dbPath = join(tempDir(t), "fuzz.db");
  const api = await build(t, { dbPath });
  for (const id of SEEDED_SESSIONS.slice(1)) await api.session(id, { tags: ["seed"] });
  const foreignSessionId = "fuzz-foreign";
  await api.session(foreignSessionId, {}, OTHER_PROJECT_KEY);
  const jwt = await seededSession(api, "fuzz-main");
  const otherJwt = await api.session("fuzz-other");
  await api.withJwt("/v2/create_events", { events: [{ id: "ev-elsewhere", type: "llm" }] }, otherJwt);

  const reader = new Database(dbPath, { readonly: true, fileMustExist: true });
  t.teardown(() => reader.close());
  const tables = reader.prepare("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name").pluck().all();
  const reads = (tables as string[]).map((name) => ({ name, all: reader.prepare(`SELECT * FROM "${name}"`).raw() }));
  const digest = () => {
    const hash = createHash("sha256");
    for (const { name, all } of reads) {
      // GET /readyz proves the database takes a write (a heartbeat row); nothing else may change.
      const rows = all.all().filter((row) => !(name === "meta" && (row as unknown[])[0] === "heartbeat"));
      hash.update(`${name}\n${JSON.stringify(rows)}\n`);
    }
    return hash.digest("hex");
  };
  return {
    api,
    digest,
    sessionId: "fuzz-main",
    jwt,
    eventIds: SEEDED_EVENTS,
    otherSessionId: "fuzz-other",
    otherEventId: "ev-elsewhere",
    sessionIds: SEEDED_SESSIONS,
    foreignSessionId,
  };
}

function credentials(ctx: Ctx, op: Operation): Record<string, string> {
  if (op.security === "apiKey") return { "x-agentmon-api-key": API_KEY };
  if (op.security === "jwt") return { authorization: `Bearer ${ctx.jwt}` };
  return {};
}

/** The operation's URL, path parameters filled in with `value` (percent-encoded). */
const urlOf = (op: Operation, value = "fuzz-main") => op.path.replace(/\{[^}]+\}/g, () => encodeURIComponent(value));

function send(
  ctx: Ctx,
  op: Operation,
  payload: string | Buffer,
  headers: Record<string, string | undefined> = {},
  remoteAddress = "127.0.0.1",
  query?: string,
): Promise<LightMyRequestResponse> {
  const all: Record<string, string> = {};
  for (const [name, value] of Object.entries({
    "content-type": "application/json",
    ...credentials(ctx, op),
    ...headers,
  })) {
    if (value !== undefined) all[name] = value;
  }
  const url = query === undefined ? urlOf(op) : `${urlOf(op)}?${query}`;
  return ctx.api.inject({ method: op.method as "POST", url, headers: all, payload, remoteAddress });
}

// ---------------------------------------------------------------------------------- per-case checks

const fail = (message: string): never => {
  throw new Error(message);
};
const show = (value: unknown, max = 300) => {
  const text = typeof value === "string" ? JSON.stringify(value) : canonical(value);
  return text.length > max ? `${text.slice(0, max)}… (${text.length} chars)` : text;
};
const prototypeNames = Object.getOwnPropertyNames(Object.prototype).sort().join();

/**
 * What every answer must be: a 2xx, a 4xx or a 3xx the operation documents (304), never a 5xx;
 * a G2 body on a 4xx that leaks nothing; and Object.prototype untouched.
 */
function checkAnswer(res: LightMyRequestResponse, label: string, op?: Operation): void {
  const where = `${label}: ${res.statusCode} ${res.body.slice(0, 400)}`;
  if (
    ({} as Record<string, unknown>).polluted !== undefined ||
    Object.getOwnPropertyNames(Object.prototype).sort().join() !== prototypeNames
  ) {
    fail(`Object.prototype was polluted (${label})`);
  }
  if (res.statusCode >= 500) fail(`a 5xx: ${where}`);
  if (res.statusCode >= 300 && res.statusCode < 400 && !op?.responses.includes(res.statusCode)) {
    fail(`an undocumented ${res.statusCode}: ${where}`);
  }
  if (res.statusCode < 400) return;
  if (!/^application\/json/.test(String(res.headers["content-type"]))) fail(`a 4xx that is not JSON: ${where}`);
  const body = res.json();
  if (!isObject(body)) fail(`a 4xx body that is not an object: ${where}`);
  const keys = Object.keys(body).sort().join();
  if (keys !== "error,message" && keys !== "details,error,message") fail(`a 4xx body with keys ${keys}: ${where}`);
  if (typeof body.error !== "string" || body.error === "" || typeof body.message !== "string" || body.message === "") {
    fail(`a 4xx without error and message strings: ${where}`);
  }
  if (body.details !== undefined) {
    const ok =
      Array.isArray(body.details) &&
      body.details.every(
        (d: unknown) =>
          isObject(d) &&
          Object.keys(d).sort().join() === "message,path" &&
          typeof d.path === "string" &&
          typeof d.message === "string",
      );
    if (!ok) fail(`details are not [{path, message}]: ${where}`);
  }
  if (!leaksNothing(res.body)) fail(`a 4xx that leaks internals: ${where}`);
}

interface Expect {
  status: number;
  error?: string;
  /** The one G2 detail path the answer must name, when the change has one. */
  path?: string | undefined;
}

/** A refused call: the expected status and G2 body, and not one row of the database changed (G7). */
async function checkRefused(
  ctx: Ctx,
  op: Operation,
  payload: string | Buffer,
  expect: Expect,
  label: string,
  headers: Record<string, string | undefined> = {},
) {
  const before = ctx.digest();
  const res = await send(ctx, op, payload, headers);
  checkAnswer(res, label);
  const status = expect.status === 400 && Buffer.byteLength(payload) > 5 * MIB ? 413 : expect.status;
  if (res.statusCode !== status) fail(`${label}: expected ${status}, got ${res.statusCode} ${res.body.slice(0, 400)}`);
  if (status === expect.status) {
    const body = res.json();
    if (expect.error !== undefined && body.error !== expect.error)
      fail(`${label}: expected error "${expect.error}", got ${res.body.slice(0, 400)}`);
    if (expect.path !== undefined) {
      const paths = (body.details ?? []).map((d: { path: string }) => d.path);
      if (paths.length !== 1 || paths[0] !== expect.path) {
        fail(`${label}: expected one detail at ${JSON.stringify(expect.path)}, got ${res.body.slice(0, 600)}`);
      }
    }
  }
  if (ctx.digest() !== before) fail(`${label}: a refused call changed the database`);
}

let counted = 0;
/** Cases run per operation, to prove that every operation of the spec was reached. */
const perOperation = new Map<string, number>();

/**
 * Runs a property with the fixed seed: one tap assertion per property, and on failure the
 * shrunk counterexample (shrinking bounded by a count of steps, each being a request).
 */
async function property<T>(
  t: Test,
  name: string,
  arb: fc.Arbitrary<T>,
  numRuns: number,
  check: (value: T) => Promise<void>,
  op?: Operation,
) {
  const details = await fc.check(fc.asyncProperty(fc.limitShrink(arb, 200), check), { seed: SEED, numRuns });
  if (details.failed) {
    t.comment(
      `${String(details.errorInstance).slice(0, 3000)}\n${(fc.defaultReportMessage(details) ?? "").slice(0, 5000)}`,
    );
  }
  t.notOk(details.failed, `${name}: ${details.numRuns} cases`);
  counted += details.numRuns;
  if (op !== undefined) perOperation.set(op.operationId, (perOperation.get(op.operationId) ?? 0) + details.numRuns);
}

async function stillServes(t: Test, ctx: Ctx) {
  const res = await ctx.api.inject({ method: "GET", url: "/healthz" });
  t.equal(res.statusCode, 200, "the server still answers /healthz");
}

// ---------------------------------------------------------------------------------- plans per operation

type Body = Record<string, any>;
type Pick = (n: number) => number;

interface Break {
  what: string;
  /** Breaks of one kind are drawn as a group, so that rare kinds are not drowned by common ones. */
  kind?: string;
  expect: Expect;
  body: fc.Arbitrary<unknown>;
}

interface Plan {
  /** Makes a body the schema accepts valid under the contract too, in this app. */
  fix(body: Body, ctx: Ctx, pick: Pick, id: string): Body;
  /** Contract rules beyond the schema, broken one at a time in a valid body. */
  breaks(body: Body, ctx: Ctx): Break[];
  /** What to remember before a valid call, for the read-back. */
  before(ctx: Ctx, sent: Body): Promise<unknown>;
  /** Answers a problem with a 200 and what is stored now, or undefined. */
  readback(ctx: Ctx, sent: Body, res: LightMyRequestResponse, before: any): Promise<string | undefined>;
}

/**
 * S1/S4: `id` and `session_id` equal when both are given. On create one of them is made present
 * (`id`); on update (`only` = the JWT's session) each one given becomes that id, null or absent.
 */
function fixSessionIds(fields: Body, pick: Pick, id: string, only?: string): Body {
  const next = clone(fields);
  for (const key of ["id", "session_id"]) {
    if (only !== undefined && given(next[key])) next[key] = [only, null, DELETE][pick(3)];
    if (next[key] === DELETE) delete next[key];
  }
  if (given(next.id) && given(next.session_id)) next.session_id = next.id;
  if (only === undefined && !given(next.id) && !given(next.session_id)) next[pick(2) === 0 ? "id" : "session_id"] = id;
  return next;
}

const sessionIdOf = (fields: Body): string => (given(fields.id) ? fields.id : fields.session_id);

/** The unversioned body's form, by the documented rule: a `session` object and no top-level id. */
const isWrapped = (body: Body) => isObject(body.session) && body.id == null && body.session_id == null;

/** S1 and S5 rules broken inside the session fields at `prefix` (`session.` or flat). */
function sessionBreaks(body: Body, fieldsAt: Segment[], ctx: Ctx, create: boolean): Break[] {
  const prefix = fieldsAt.length === 0 ? "" : `${pathText(fieldsAt)}.`;
  const fields = fieldsAt.reduce((at: any, k) => at[k], body) as Body;
  const at = (key: string, value: unknown, base: unknown = body) => setAt(base, [...fieldsAt, key], value);
  const breaks: Break[] = [
    {
      what: "id and session_id differ (S1)",
      expect: { status: 400, error: "Invalid request", path: `${prefix}session_id` },
      body: fc
        .tuple(idArb, idArb)
        .filter(([a, b]) => a !== b)
        .map(([a, b]) => at("session_id", b, at("id", a))),
    },
    {
      what: "an end_state that is neither a state nor an alias (S5)",
      expect: { status: 400, error: "Invalid request", path: `${prefix}end_state` },
      body: badEndStateArb.map((state) => at("end_state", state)),
    },
  ];
  if (create) {
    // Flat bodies must not turn into wrapped ones when their id goes.
    const noId = at("session_id", DELETE, at("id", DELETE));
    const flatSafe =
      fieldsAt.length === 0 && isObject(fields.session) ? setAt(noId, ["session"], "not a session") : noId;
    breaks.push(
      {
        what: "neither id nor session_id (S1)",
        expect: { status: 400, error: "Invalid request", path: `${prefix}id` },
        body: fc.constant(flatSafe),
      },
      {
        what: "the id of another project's session (S3)",
        expect: { status: 409, error: "Session already exists" },
        body: fc.constant(at("session_id", DELETE, at("id", ctx.foreignSessionId))),
      },
    );
  } else {
    breaks.push({
      what: "the id of another session (S4)",
      expect: { status: 403, error: "Forbidden" },
      body: fc.constant(at("session_id", DELETE, at("id", ctx.otherSessionId))),
    });
  }
  return breaks;
}

async function sessionReadback(ctx: Ctx, fields: Body, res: LightMyRequestResponse, before: unknown) {
  const id = sessionIdOf(fields);
  const body = res.json();
  if (body.session_id !== id) return `session_id answered ${show(body.session_id)}, sent ${show(id)}`;
  if (body.session_url !== `http://agentmon.test/sessions/${encodeURIComponent(id)}`)
    return `session_url ${body.session_url}`;
  if (decodeJwt(body.jwt).claims.session_id !== id) return "the JWT names another session";
  const stored = await storedSession(ctx.api.store, id);
  if (stored === undefined) return `session ${show(id)} is not stored`;
  if (before !== undefined) {
    return canonical(stored) === canonical(before) ? undefined : "an existing session was overwritten (S3)";
  }
  const init = given(fields.init_timestamp) ? utcOf(fields.init_timestamp) : stored.init_timestamp;
  const expected = objectOf([
    ["id", id],
    ["init_timestamp", init],
    ["end_timestamp", given(fields.end_timestamp) ? utcOf(fields.end_timestamp) : null],
    ["end_state", given(fields.end_state) ? canonicalState(fields.end_state) : null],
    ["end_state_reason", fields.end_state_reason ?? null],
    ["tags", fields.tags ?? null],
    ["host_env", fields.host_env ?? null],
    ...unknownOf(fields, SESSION_NAMED),
  ]);
  if (utcOf(stored.init_timestamp) !== stored.init_timestamp)
    return `init_timestamp ${stored.init_timestamp} is not UTC`;
  return sameValue(stored, expected, "the stored session");
}

function sameValue(actual: unknown, expected: unknown, what: string): string | undefined {
  return canonical(actual) === canonical(expected)
    ? undefined
    : `${what}: read ${show(actual, 1500)}, expected ${show(expected, 1500)}`;
}

/** E2/E5 rules for one event: kinds agree (one given on create), session_id the JWT's or none. */
function fixEvent(raw: Body, ctx: Ctx, pick: Pick, needKind: boolean): Body {
  const event = clone(raw);
  if (given(event.type) && given(event.event_type) && PLURAL[event.type] !== event.event_type) {
    event.event_type = PLURAL[event.type];
  }
  if (needKind && !given(event.type) && !given(event.event_type)) {
    const kind = Object.keys(PLURAL)[pick(4)] as string;
    if (pick(2) === 0) event.type = kind;
    else event.event_type = PLURAL[kind];
  }
  if (given(event.session_id)) event.session_id = pick(2) === 0 ? ctx.sessionId : null;
  return event;
}

const kindOf = (event: Body): string | undefined => (given(event.type) ? event.type : KIND_OF[event.event_type]);

function eventBreaks(body: Body, ctx: Ctx, update: boolean): Break[] {
  const events = body.events as Body[];
  return events.slice(0, 3).flatMap((event, i): Break[] => {
    const at = (key: string, value: unknown, base: unknown = body) => setAt(base, ["events", i, key], value);
    const disagree = fc
      .tuple(pickFrom(...Object.keys(PLURAL)), pickFrom(...Object.keys(KIND_OF)))
      .filter(([type, plural]) => PLURAL[type] !== plural)
      .map(([type, plural]) => at("event_type", plural, at("type", type)));
    const breaks: Break[] = [
      {
        what: "type and event_type disagree (E2)",
        expect: { status: 400, error: "Invalid request", path: `events[${i}].event_type` },
        body: disagree,
      },
      {
        what: "session_id names another session (E5)",
        expect: { status: 403, error: "Forbidden" },
        body: fc.constant(at("session_id", ctx.otherSessionId)),
      },
    ];
    if (!update) {
      breaks.push({
        what: "no kind (E2)",
        expect: { status: 400, error: "Invalid request", path: `events[${i}].type` },
        body: fc.constant(at("event_type", DELETE, at("type", DELETE))),
      });
    } else {
      const named = event.event_id ?? event.id;
      breaks.push(
        {
          what: "no event_id (E6)",
          expect: { status: 400, error: "Invalid request", path: `events[${i}].event_id` },
          body: fc.constant(at("id", DELETE, at("event_id", DELETE))),
        },
        {
          what: "event_id and id differ (E6)",
          expect: { status: 400, error: "Invalid request", path: `events[${i}].id` },
          body: fc.constant(at("id", `${named}-other`, at("event_id", named))),
        },
        {
          what: "an id the session does not have (E6)",
          expect: { status: 404, error: "Not found", path: `events[${i}].event_id` },
          body: fc
            .oneof(idArb, fc.constant(ctx.otherEventId))
            .filter((id) => !ctx.eventIds.includes(id))
            .map((id) => at("id", DELETE, at("event_id", id))),
        },
      );
    }
    return breaks;
  });
}

/** The create_events read-back of one event: every field as sent (E3, E4, G5, G6). */
function eventProblem(sent: Body, view: Body, sessionId: string): string | undefined {
  if (view.type !== kindOf(sent)) return `type ${view.type}, sent ${kindOf(sent)}`;
  if (view.session_id !== sessionId) return `session_id ${show(view.session_id)}`;
  const init = given(sent.init_timestamp)
    ? utcOf(sent.init_timestamp)
    : given(sent.timestamp)
      ? utcOf(sent.timestamp)
      : undefined;
  if (init !== undefined ? view.init_timestamp !== init : utcOf(view.init_timestamp) !== view.init_timestamp) {
    return `init_timestamp ${view.init_timestamp}, sent ${show(sent.init_timestamp)} / ${show(sent.timestamp)}`;
  }
  const end = given(sent.end_timestamp) ? utcOf(sent.end_timestamp) : null;
  if (view.end_timestamp !== end) return `end_timestamp ${view.end_timestamp}, expected ${end}`;
  if (given(sent.timestamp) && view.timestamp !== sent.timestamp && view.timestamp !== utcOf(sent.timestamp)) {
    return `timestamp ${show(view.timestamp)}, sent ${show(sent.timestamp)}`;
  }
  for (const key of Object.keys(sent)) {
    if (["type", "id", "session_id", "init_timestamp", "end_timestamp", "timestamp"].includes(key)) continue;
    const value = own(sent, key);
    if (value === null && EVENT_NAMED.has(key)) continue; // null means not given
    if (!Object.hasOwn(view, key)) return `${show(key)} is not stored`;
    const problem = sameValue(own(view, key), value, show(key));
    if (problem) return problem;
  }
  return undefined;
}

interface EventsBefore {
  records: Map<string, EventRecord>;
  views: Map<string, Body>;
}

async function eventsNow(ctx: Ctx): Promise<EventsBefore> {
  const records = await inspect(ctx.api.store).listEvents(ctx.sessionId);
  return {
    records: new Map(records.map((r) => [r.id, r])),
    views: new Map(records.map((r) => [r.id, eventView(r, ctx.sessionId) as Body])),
  };
}

const createEventsPlan: Plan = {
  fix(body, ctx, pick) {
    const events = (body.events as Body[]).map((e) => fixEvent(e, ctx, pick, true));
    // E3: now and then an id the session already has (a retry), or an earlier event's (the later copy wins).
    for (const [i, event] of events.entries()) {
      const choice = pick(8);
      if (choice === 0) event.id = ctx.eventIds[pick(ctx.eventIds.length)];
      if (choice === 1 && i > 0) event.id = events[pick(i)]?.id ?? null;
    }
    return { ...clone(body), events };
  },
  breaks: (body, ctx) => eventBreaks(body, ctx, false),
  before: eventsNow,
  async readback(ctx, sent, res, before: EventsBefore) {
    const ids: unknown[] = res.json().event_ids;
    const events = sent.events as Body[];
    if (!Array.isArray(ids) || ids.length !== events.length)
      return `event_ids ${show(ids)} for ${events.length} events`;
    const after = await eventsNow(ctx);
    const last = new Map<string, Body>(); // E3: the same id twice in one call keeps the later copy
    for (const [i, event] of events.entries()) {
      if (given(event.id) && ids[i] !== event.id) return `event_ids[${i}] is ${show(ids[i])}, sent ${show(event.id)}`;
      last.set(ids[i] as string, event);
    }
    for (const [id, view] of after.views) {
      const old = before.views.get(id);
      const event = last.get(id);
      if (old !== undefined) {
        // E3: an id already stored is not stored again; untouched events stay as they were.
        const problem = sameValue(view, old, `event ${show(id)} (stored before)`);
        if (problem) return problem;
      } else if (event === undefined) return `event ${show(id)} appeared from nowhere`;
      else {
        const problem = eventProblem(event, view, ctx.sessionId);
        if (problem) return `event ${show(id)}: ${problem}`;
      }
    }
    for (const id of last.keys()) if (!after.views.has(id)) return `event ${show(id)} is not stored`;
    return undefined;
  },
};

/** Fields whose read view depends on the event's kind and its alias history (E4 aliases). */
const ALIASED = new Set(["name", "tool_name", "input", "output", "params", "returns", "timestamp"]);

const updateEventsPlan: Plan = {
  fix(body, ctx, pick) {
    const events = (body.events as Body[]).map((raw) => {
      const event = fixEvent(raw, ctx, pick, false);
      const id = ctx.eventIds[pick(ctx.eventIds.length)] as string;
      const form = pick(3);
      event.event_id = form === 2 ? null : id;
      event.id = form === 0 ? null : id;
      if (form === 0 && pick(2) === 0) delete event.id;
      return event;
    });
    return { ...clone(body), events };
  },
  breaks: (body, ctx) => eventBreaks(body, ctx, true),
  before: eventsNow,
  async readback(ctx, sent, res, before: EventsBefore) {
    const entries = sent.events as Body[];
    const named = new Map<string, Body[]>();
    for (const entry of entries) {
      const id = given(entry.event_id) ? entry.event_id : entry.id;
      named.set(id, [...(named.get(id) ?? []), entry]);
    }
    if (res.json().updated !== named.size) return `updated ${res.json().updated}, expected ${named.size}`;
    const after = await eventsNow(ctx);
    if (after.views.size !== before.views.size) return "update_events changed the number of events";
    for (const [id, view] of after.views) {
      const old = before.views.get(id) as Body;
      const record = before.records.get(id) as EventRecord;
      const list = named.get(id);
      if (list === undefined) {
        const problem = sameValue(view, old, `event ${show(id)} (not named)`);
        if (problem) return problem;
        continue;
      }
      // Entries naming the same event apply in order: the last value given for each field wins.
      const expected = new Map<string, unknown>();
      let kind = record.type as string;
      let init: string | undefined;
      let end: string | undefined;
      for (const entry of list) {
        kind = kindOf(entry) ?? kind;
        if (given(entry.init_timestamp) || given(entry.timestamp))
          init = utcOf(entry.init_timestamp ?? entry.timestamp);
        if (given(entry.end_timestamp)) end = utcOf(entry.end_timestamp);
        for (const key of Object.keys(entry)) {
          const value = own(entry, key);
          if (["type", "event_type", "id", "event_id", "session_id", "init_timestamp", "end_timestamp"].includes(key))
            continue;
          if (ALIASED.has(key) || (value === null && EVENT_NAMED.has(key))) continue;
          expected.set(key, value);
        }
      }
      if (view.type !== kind) return `event ${show(id)}: type ${view.type}, expected ${kind}`;
      if (init !== undefined && view.init_timestamp !== init)
        return `event ${show(id)}: init_timestamp ${view.init_timestamp}, expected ${init}`;
      if (end !== undefined && view.end_timestamp !== end)
        return `event ${show(id)}: end_timestamp ${view.end_timestamp}, expected ${end}`;
      if (list.some((e) => given(e.event_type)) && view.event_type !== PLURAL[kind])
        return `event ${show(id)}: event_type ${view.event_type}`;
      for (const [key, value] of expected) {
        const problem = sameValue(own(view, key), value, `event ${show(id)} ${show(key)}`);
        if (problem) return problem;
      }
      // An aliased field given reads as given (E4, E6), whatever the kind and the alias history;
      // left out: several entries for one event, and an older value kept under the name as an
      // unknown field (a tool alias that differed from its canonical field).
      const [only] = list;
      if (list.length === 1 && only) {
        for (const key of ALIASED) {
          const value = own(only, key);
          if (!given(value) || Object.hasOwn(record.extra, key)) continue;
          const read = own(view, key);
          const ok =
            key === "timestamp"
              ? read === value || read === utcOf(value as string)
              : canonical(read) === canonical(value);
          if (!ok) return `event ${show(id)} ${key}: read ${show(read)}, sent ${show(value)}`;
        }
      }
    }
    return undefined;
  },
};

const PLANS: Record<string, Plan> = {
  createSession: {
    fix: (body, _ctx, pick, id) => ({ ...clone(body), session: fixSessionIds(body.session, pick, id) }),
    breaks: (body, ctx) => sessionBreaks(body, ["session"], ctx, true),
    before: (ctx, sent) => storedSession(ctx.api.store, sessionIdOf(sent.session)),
    readback: (ctx, sent, res, before) => sessionReadback(ctx, sent.session, res, before),
  },
  createSessionUnversioned: {
    fix(body, _ctx, pick, id) {
      if (isWrapped(body)) {
        const wrapped: Body = { ...clone(body), session: fixSessionIds(body.session, pick, id) };
        // G5: null means "not given", so a null top-level id leaves the body wrapped.
        if (pick(4) === 0) wrapped[pick(2) === 0 ? "id" : "session_id"] = null;
        return wrapped;
      }
      return fixSessionIds(body, pick, id);
    },
    breaks(body, ctx) {
      const breaks = sessionBreaks(body, isWrapped(body) ? ["session"] : [], ctx, true);
      if (isWrapped(body)) {
        breaks.push({
          what: "a wrapped body beside a null top-level id, with a bad session id (S1, G5)",
          expect: { status: 400, error: "Invalid request" },
          body: pickFrom<unknown>(5, "", "x".repeat(257), {}, ["x"], true).map((bad) =>
            setAt(setAt(setAt(body, ["session", "session_id"], DELETE), ["session", "id"], bad), ["id"], null),
          ),
        });
      }
      return breaks;
    },
    before: (ctx, sent) => storedSession(ctx.api.store, sessionIdOf(isWrapped(sent) ? sent.session : sent)),
    readback: (ctx, sent, res, before) => sessionReadback(ctx, isWrapped(sent) ? sent.session : sent, res, before),
  },
  updateSession: {
    fix: (body, ctx, pick, id) => ({ ...clone(body), session: fixSessionIds(body.session, pick, id, ctx.sessionId) }),
    breaks: (body, ctx) => sessionBreaks(body, ["session"], ctx, false),
    before: (ctx) => storedSession(ctx.api.store, ctx.sessionId),
    async readback(ctx, sent, res, before: Body) {
      const fields = sent.session as Body;
      const expected = clone(before);
      for (const key of ["end_state_reason", "tags", "host_env"]) if (given(fields[key])) expected[key] = fields[key];
      for (const key of ["init_timestamp", "end_timestamp"]) if (given(fields[key])) expected[key] = utcOf(fields[key]);
      if (given(fields.end_state)) expected.end_state = canonicalState(fields.end_state);
      const merged = objectOf([...Object.entries(expected), ...unknownOf(fields, SESSION_NAMED)]);
      const stored = await storedSession(ctx.api.store, ctx.sessionId);
      const body = res.json();
      if (!/^\d+\.\d{2,12}$/.test(body.token_cost)) return `token_cost ${body.token_cost}`;
      return (
        sameValue(stored, merged, "the updated session (S4)") ??
        sameValue(body.session, stored, "the answered session (S6)")
      );
    },
  },
  createEvents: createEventsPlan,
  createEventsUnversioned: createEventsPlan,
  updateEvents: updateEventsPlan,
  createAgent: {
    fix(body, ctx, pick) {
      const agent = clone(body);
      if (given(agent.session_id)) agent.session_id = pick(2) === 0 ? ctx.sessionId : null;
      return agent;
    },
    breaks: (body, ctx) => [
      {
        what: "session_id names another session (E7)",
        expect: { status: 403, error: "Forbidden" },
        body: fc.constant(setAt(body, ["session_id"], ctx.otherSessionId)),
      },
    ],
    before: async (ctx) => new Map((await inspect(ctx.api.store).listAgents(ctx.sessionId)).map((a) => [a.id, a])),
    async readback(ctx, sent, res, before: Map<string, { name: string | null; extra: Body }>) {
      if (res.json().agent_id !== sent.id) return `agent_id ${show(res.json().agent_id)}`;
      const after = new Map((await inspect(ctx.api.store).listAgents(ctx.sessionId)).map((a) => [a.id, a]));
      for (const [id, agent] of after) {
        const old = before.get(id);
        if (id !== sent.id) {
          const problem = sameValue(agent, old, `agent ${show(id)} (not named)`);
          if (problem) return problem;
          continue;
        }
        // E7: an upsert; a null name keeps the stored one, unknown fields merge (G5).
        const expected = {
          id,
          name: sent.name ?? old?.name ?? null,
          extra: objectOf([...Object.entries(old?.extra ?? {}), ...unknownOf(sent, AGENT_NAMED)]),
        };
        const problem = sameValue(agent, expected, "the stored agent");
        if (problem) return problem;
      }
      return after.has(sent.id) ? undefined : "the agent is not stored";
    },
  },
  reauthorizeJwt: {
    fix: (body, ctx, pick) => ({ ...clone(body), session_id: ctx.sessionIds[pick(ctx.sessionIds.length)] }),
    breaks: (body, ctx) => [
      {
        what: "a session the project does not have (4.5)",
        expect: { status: 404, error: "Not found" },
        body: fc
          .oneof(idArb, fc.constant(ctx.foreignSessionId))
          .filter((id) => !ctx.sessionIds.includes(id))
          .map((id) => setAt(body, ["session_id"], id)),
      },
    ],
    before: async (ctx) => ctx.digest(),
    async readback(ctx, sent, res, before: string) {
      const { claims } = decodeJwt(res.json().jwt);
      if (claims.session_id !== sent.session_id) return `the JWT names ${show(claims.session_id)}`;
      return ctx.digest() === before ? undefined : "reauthorize_jwt changed the database";
    },
  },
};

/** Operations added to the spec later: generic checks only, until they get a plan. */
const GENERIC_PLAN: Plan = {
  fix: (body) => body,
  breaks: () => [],
  before: async () => undefined,
  readback: async () => undefined,
};
const hasPlan = (op: Operation) => Object.hasOwn(PLANS, op.operationId);
const planOf = (op: Operation) => (hasPlan(op) ? (PLANS[op.operationId] as Plan) : GENERIC_PLAN);

/** What a valid body is made of: the schema's value (at most 100 levels deep), unbiased choices for the fix-up, an id. */
type Input = [unknown, number[], string];
const inputs = (op: Operation): fc.Arbitrary<Input> =>
  fc
    .tuple(conv.valid(op.body), fc.array(fc.noBias(fc.nat()), { minLength: 16, maxLength: 16 }), idArb)
    .filter(([body]) => depthOf(body) <= 100);

/** The input made valid under the contract too, in this app and session. */
function validBody(op: Operation, [body, picks, id]: Input, ctx: Ctx): Body {
  let next = 0;
  const pick: Pick = (n) => (picks[next++ % picks.length] as number) % n;
  return planOf(op).fix(body as Body, ctx, pick, id);
}

const validBodies = (op: Operation, ctx: Ctx): fc.Arbitrary<Body> =>
  inputs(op).map((input) => validBody(op, input, ctx));

// ---------------------------------------------------------------------------------- valid bodies

t.comment(`fast-check seed ${SEED} (set FUZZ_SEED to replay another), scale ${SCALE}`);

t.test("valid bodies of every operation are answered 200 and read back intact", async (t) => {
  for (const op of withBody) {
    t.test(`${op.operationId}: ${op.method} ${op.path}`, async (t) => {
      const app = await fuzzApp(t);
      const plan = planOf(op);
      if (!hasPlan(op)) t.comment(`${op.operationId} has no read-back oracle yet: generic checks only`);
      await property(
        t,
        `${op.operationId} valid`,
        inputs(op),
        RUNS.valid,
        async (input) => {
          // JWT operations write into a new session each time, so read-backs stay small.
          const ctx = op.security === "jwt" ? await fresh(app) : app;
          const payload = JSON.stringify(validBody(op, input, ctx));
          const sent = JSON.parse(payload) as Body;
          const before = await plan.before(ctx, sent);
          const res = await send(ctx, op, payload);
          checkAnswer(res, op.operationId);
          if (hasPlan(op) && res.statusCode !== 200)
            fail(`a valid body got ${res.statusCode}: ${res.body.slice(0, 600)}`);
          if (res.statusCode === 200 && res.json().status !== "success") fail(`G1: ${res.body.slice(0, 300)}`);
          const problem = res.statusCode === 200 ? await plan.readback(ctx, sent, res, before) : undefined;
          if (problem) fail(`${op.operationId} read-back: ${problem}`);
        },
        op,
      );
      await stillServes(t, app);
    });
  }
});

// ---------------------------------------------------------------------------------- one change away

/** Anywhere a string is, as a value or as a key, with the path of the object holding it. */
function stringSites(value: unknown, path: Segment[] = [], out: { path: Segment[]; key?: string }[] = []) {
  if (out.length > 200) return out;
  if (typeof value === "string") out.push({ path });
  else if (Array.isArray(value)) {
    for (const [i, v] of value.slice(0, 20).entries()) stringSites(v, [...path, i], out);
  } else if (isObject(value)) {
    for (const key of Object.keys(value).slice(0, 40)) {
      out.push({ path, key });
      stringSites(own(value, key), [...path, key], out);
    }
  }
  return out;
}

/** Changes any body can take that the JSON reader refuses: a lone surrogate, nesting past 100 levels. */
function universalBreaks(body: Body): Break[] {
  const sites = stringSites(body);
  const surrogate = pickFrom("\ud800", "\udfff", "\udbff", "\udc00x", "a\ud83d");
  const bad: Break[] = [
    {
      what: "nested past 100 levels (L1)",
      expect: { status: 400, error: "Bad request" },
      body: fc.integer({ min: 100, max: 400 }).map((levels) => setAt(body, ["deep"], nested(levels))),
    },
  ];
  if (sites.length > 0) {
    bad.push({
      what: "a lone UTF-16 surrogate in a string or key",
      expect: { status: 400, error: "Bad request" },
      body: fc.tuple(fc.noBias(fc.nat(sites.length - 1)), surrogate).map(([i, lone]) => {
        const site = sites[i] as { path: Segment[]; key?: string };
        if (site.key === undefined) {
          const text = site.path.reduce((at: any, k) => own(at, String(k)) ?? at[k], body) as string;
          return setAt(body, site.path, `${text}${lone}`);
        }
        const holder = site.path.reduce((at: any, k) => at[k], clone(body));
        const renamed = objectOf(Object.keys(holder).map((k) => [k === site.key ? `${k}${lone}` : k, own(holder, k)]));
        return setAt(body, site.path, renamed);
      }),
    });
  }
  return bad;
}

function schemaBreak(body: Body, m: Mutation): Break {
  return {
    what: `${m.what} at ${pathText(m.path) || "the root"}`,
    kind: m.what,
    expect: { status: 400, error: "Invalid request", path: m.expectPath },
    body: m.value.map((v) => setAt(body, m.path, v)),
  };
}

t.test("bodies one change away from valid are refused with G2 and change nothing", async (t) => {
  for (const op of withBody) {
    t.test(`${op.operationId}: ${op.method} ${op.path}`, async (t) => {
      const ctx = await fuzzApp(t);
      const plan = planOf(op);
      const cases = validBodies(op, ctx).chain((body) => {
        const kinds = new Map<string, Break[]>();
        for (const b of [
          ...conv.mutations(op.body, body).map((m) => schemaBreak(body, m)),
          ...plan.breaks(body, ctx),
          ...universalBreaks(body),
        ]) {
          kinds.set(b.kind ?? b.what, [...(kinds.get(b.kind ?? b.what) ?? []), b]);
        }
        // A kind of change first (wrong type, missing field, S1, E2, ...), then where.
        return pickFrom(...kinds.values())
          .chain((group) => pickFrom(...group))
          .chain((b) => b.body.map((changed) => ({ what: b.what, expect: b.expect, changed })));
      });
      await property(
        t,
        `${op.operationId} invalid`,
        cases,
        RUNS.invalid,
        async ({ what, expect, changed }) => {
          const payload = JSON.stringify(changed);
          await checkRefused(ctx, op, payload, expect, `${op.operationId}, ${what}`);
        },
        op,
      );
      await stillServes(t, ctx);
    });
  }
});

// ---------------------------------------------------------------------------------- raw bodies

interface RawCase {
  what: string;
  payload: string | Buffer;
  headers: Record<string, string | undefined>;
  /** The statuses the contract allows here, when it names them; otherwise any 2xx or 4xx. */
  statuses?: number[];
  /** A query string for the URL. */
  query?: string;
}

const NOT_JSON_TYPES = [
  "text/plain",
  "text/html",
  "application/x-www-form-urlencoded",
  "multipart/form-data; boundary=x",
  "application/xml",
  "application/yaml",
  "application/octet-stream",
  "application/jsonx",
  "json",
];

function rawCases(op: Operation, ctx: Ctx): fc.Arbitrary<RawCase> {
  const valid = validBodies(op, ctx).map((body) => JSON.stringify(body));
  const placeholder = '"@@raw-token@@"';
  // A bad credential must get 401 (or 429 once an address has failed too often, 4.6).
  const refusedKey = op.security === "none" ? undefined : [401, 429];
  return fc.oneof(
    fc
      .string({ unit: "binary", maxLength: 200 })
      .map((text): RawCase => ({ what: "random text", payload: text, headers: {} })),
    fc
      .uint8Array({ maxLength: 200 })
      .map((bytes): RawCase => ({ what: "random bytes", payload: Buffer.from(bytes), headers: {} })),
    fc
      .jsonValue()
      .filter((v) => !isObject(v))
      .map(
        (v): RawCase => ({
          what: "JSON that is not an object",
          payload: JSON.stringify(v),
          headers: {},
          statuses: [400],
        }),
      ),
    pickFrom("", " ", "\n", "\ufeff").map(
      (text): RawCase => ({ what: "an empty body", payload: text, headers: {}, statuses: [400] }),
    ),
    fc.tuple(valid, fc.noBias(fc.nat())).map(
      ([text, n]): RawCase => ({
        what: "a truncated body",
        payload: text.slice(0, n % text.length),
        headers: {},
        statuses: [400],
      }),
    ),
    fc.tuple(valid, pickFrom(...NOT_JSON_TYPES)).map(
      ([text, type]): RawCase => ({
        what: `Content-Type ${type}`,
        payload: text,
        headers: { "content-type": type },
        statuses: [415],
      }),
    ),
    valid.map(
      (text): RawCase => ({
        what: "no Content-Type",
        payload: text,
        headers: { "content-type": undefined },
        statuses: [415],
      }),
    ),
    fc.tuple(valid, pickFrom("gzip", "x-gzip", "deflate", "GZIP", "identity, gzip")).map(
      ([text, coding]): RawCase => ({
        what: `a valid body, Content-Encoding ${coding}`,
        payload: /deflate/.test(coding) ? deflateSync(text) : gzipSync(text),
        headers: { "content-encoding": coding },
        statuses: [200],
      }),
    ),
    fc
      .tuple(valid, pickFrom("application/json; charset=utf-8", "application/json;charset=UTF-8", "Application/JSON"))
      .map(
        ([text, type]): RawCase => ({
          what: `a valid body, Content-Type ${type} (G4)`,
          payload: text,
          headers: { "content-type": type },
          statuses: [200],
        }),
      ),
    valid.map(
      (text): RawCase => ({
        what: "a valid body, the key under X-Agentops-Api-Key (4.2)",
        payload: text,
        headers: op.security === "apiKey" ? { "x-agentmon-api-key": undefined, "x-agentops-api-key": API_KEY } : {},
        statuses: [200],
      }),
    ),
    fc.tuple(valid, fc.array(fc.tuple(textArb(0, 10), textArb(0, 10)), { minLength: 1, maxLength: 3 })).map(
      ([text, pairs]): RawCase => ({
        what: "a valid body, a query string beside it",
        payload: text,
        headers: {},
        query: pairs.map(([k, v]) => `${encodeURIComponent(k)}=${encodeURIComponent(v)}`).join("&"),
        statuses: [200],
      }),
    ),
    fc.tuple(fc.uint8Array({ maxLength: 100 }), pickFrom("gzip", "deflate")).map(
      ([bytes, coding]): RawCase => ({
        what: `garbage as ${coding}`,
        payload: Buffer.from(bytes),
        headers: { "content-encoding": coding },
        statuses: [400],
      }),
    ),
    fc.tuple(valid, fc.noBias(fc.nat())).map(([text, n]): RawCase => {
      const zipped = gzipSync(text);
      return {
        what: "truncated gzip",
        payload: zipped.subarray(0, n % zipped.length),
        headers: { "content-encoding": "gzip" },
        statuses: [400],
      };
    }),
    fc.tuple(valid, pickFrom("br", "compress", "zstd", "gzip, gzip", "bogus")).map(
      ([text, coding]): RawCase => ({
        what: `Content-Encoding ${coding}`,
        payload: text,
        headers: { "content-encoding": coding },
        statuses: [415],
      }),
    ),
    fc
      .tuple(valid, pickFrom("1e999", "-1e999", "1e-999", "-0", "1E400", "123456789012345678901234567890", "0.1e1"))
      .map(
        ([text, token]): RawCase => ({
          what: `an unknown field holding the number ${token}`,
          payload: text.replace(/^\{/, `{"odd-number":${placeholder},`).replace(placeholder, token),
          headers: {},
        }),
      ),
    fc
      .tuple(valid, fc.string({ maxLength: 60 }), pickFrom("authorization", "x-agentmon-api-key", "x-agentops-api-key"))
      .map(
        ([text, value, header]): RawCase => ({
          what: `${header}: random text`,
          payload: text,
          headers: { authorization: undefined, "x-agentmon-api-key": undefined, [header]: value },
          ...(refusedKey ? { statuses: refusedKey } : {}),
        }),
      ),
  );
}

t.test("raw bodies, content types, encodings and credentials never get a 5xx", async (t) => {
  for (const op of withBody) {
    t.test(`${op.operationId}: ${op.method} ${op.path}`, async (t) => {
      const ctx = await fuzzApp(t);
      let address = 0;
      await property(
        t,
        `${op.operationId} raw`,
        rawCases(op, ctx),
        RUNS.raw,
        async (c) => {
          const label = `${op.operationId}, ${c.what}`;
          // Each case from its own address, so failed credentials (4.6) do not spill into the next.
          const from = `10.0.${(++address >> 8) & 255}.${address & 255}`;
          const before = ctx.digest();
          const res = await send(ctx, op, c.payload, c.headers, from, c.query);
          checkAnswer(res, label);
          const allowed = c.statuses?.filter((s) => s !== 200 || hasPlan(op));
          if (allowed !== undefined && allowed.length > 0 && !allowed.includes(res.statusCode)) {
            fail(`${label}: expected ${allowed.join(" or ")}, got ${res.statusCode} ${res.body.slice(0, 300)}`);
          }
          if (res.statusCode >= 400 && ctx.digest() !== before) fail(`${label}: a refused call changed the database`);
        },
        op,
      );
      await stillServes(t, ctx);
    });
  }
});

// ---------------------------------------------------------------------------------- depth and size

t.test("nesting around the 100-level limit: 200 up to it, 400 past it (L1)", async (t) => {
  for (const op of withBody) {
    t.test(`${op.operationId}: ${op.method} ${op.path}`, async (t) => {
      const ctx = await fuzzApp(t);
      const cases = fc
        .tuple(validBodies(op, ctx), fc.integer({ min: 94, max: 104 }))
        .map(([body, levels]) => setAt(body, ["deep"], nested(levels)));
      await property(
        t,
        `${op.operationId} depth`,
        cases,
        RUNS.depth,
        async (body) => {
          const payload = JSON.stringify(body);
          const deep = depthOf(body) > 100;
          if (deep) {
            await checkRefused(
              ctx,
              op,
              payload,
              { status: 400, error: "Bad request" },
              `${op.operationId}, depth ${depthOf(body)}`,
            );
            return;
          }
          const res = await send(ctx, op, payload);
          checkAnswer(res, op.operationId);
          if (hasPlan(op) && res.statusCode !== 200)
            fail(`depth ${depthOf(body)}: ${res.statusCode} ${res.body.slice(0, 300)}`);
        },
        op,
      );
      await stillServes(t, ctx);
    });
  }
});

t.test("bodies near the 5 MiB limit: 200 up to it with the string stored whole, 413 past it (L1, G4)", async (t) => {
  const ctx = await fuzzApp(t);
  const create = operations.find((op) => op.operationId === "createSession") as Operation;
  const cases = fc.record({
    id: idArb,
    chunk: textArb(1, 8),
    delta: fc.integer({ min: -64, max: 64 }),
    gzip: fc.boolean(),
  });
  await property(t, "5 MiB", cases, RUNS.big, async ({ id, chunk, delta, gzip }) => {
    const target = 5 * MIB + delta;
    const body = { session: { id, pad: "" } };
    const empty = Buffer.byteLength(JSON.stringify(body));
    const unit = Buffer.byteLength(JSON.stringify(chunk)) - 2;
    body.session.pad = chunk.repeat(Math.max(0, Math.floor((target - empty - 64) / unit)));
    body.session.pad += "x".repeat(target - Buffer.byteLength(JSON.stringify(body)));
    const text = JSON.stringify(body);
    if (Buffer.byteLength(text) !== target) fail(`built ${Buffer.byteLength(text)} bytes, not ${target}`);
    const payload = gzip ? gzipSync(text) : text;
    const headers = gzip ? { "content-encoding": "gzip" } : {};
    const label = `${target} bytes${gzip ? " gzipped" : ""}`;
    if (delta > 0) {
      await checkRefused(ctx, create, payload, { status: 413, error: "Payload too large" }, label, headers);
      return;
    }
    const before = await storedSession(ctx.api.store, id);
    const res = await send(ctx, create, payload, headers);
    checkAnswer(res, label);
    if (res.statusCode !== 200) fail(`${label}: ${res.statusCode} ${res.body.slice(0, 300)}`);
    const stored = await storedSession(ctx.api.store, id);
    if (before === undefined && own(stored, "pad") !== body.session.pad)
      fail(`${label}: the padding was not stored whole`);
  });
  await stillServes(t, ctx);
});

// ---------------------------------------------------------------------------------- no body: parameters and methods

/** A query or path value: valid for the parameter's schema, a stored session's (odd) id, or anything at all. */
function parameterValue(schema: unknown): fc.Arbitrary<string> {
  const valid = conv.valid(schema ?? true).map((v) => (typeof v === "string" ? v : JSON.stringify(v)));
  const odd = pickFrom("", "-1", "0", "NaN", "1e999", "null", "%", "%zz", "\0", "'", "[]", "x".repeat(5000));
  return fc.oneof(valid, pickFrom(...SEEDED_SESSIONS), textArb(0, 30), odd);
}

function readRequests(op: Operation) {
  const encode = (value: string, raw: boolean) =>
    raw ? value.replace(/[^\x21-\x7e]/gu, encodeURIComponent) : encodeURIComponent(value);
  const params = op.parameters.filter((p) => p.in === "query" || p.in === "path");
  const chosen = params.map((p) =>
    p.required || p.in === "path" ? parameterValue(p.schema) : fc.option(parameterValue(p.schema), { nil: undefined }),
  );
  return fc
    .record({
      values: fc.tuple(...chosen),
      extra: fc.array(fc.tuple(textArb(0, 12), textArb(0, 30)), { maxLength: 3 }),
      raw: fc.boolean(),
      credentials: pickFrom("right", "none", "garbage"),
      etag: fc.option(pickFrom("*", '"x"', 'W/"x"', ""), { nil: undefined }),
    })
    .map(({ values, extra, raw, credentials: creds, etag }) => {
      let path = op.path;
      const query: string[] = [];
      params.forEach((p, i) => {
        const value = values[i];
        if (value === undefined) return;
        if (p.in === "path") path = path.replace(`{${p.name}}`, encode(value, raw));
        else query.push(`${encodeURIComponent(p.name)}=${encode(value, raw)}`);
      });
      for (const [k, v] of extra) query.push(`${encode(k, raw)}=${encode(v, raw)}`);
      return { url: query.length > 0 ? `${path}?${query.join("&")}` : path, creds, etag };
    });
}

t.test(
  "operations without a body: fuzzed path parameters, query strings and headers never get a 5xx; reads write nothing",
  async (t) => {
    const ctx = await fuzzApp(t);
    let address = 0;
    for (const op of withoutBody) {
      await property(
        t,
        `${op.operationId} ${op.method} ${op.path}`,
        readRequests(op),
        RUNS.read,
        async ({ url, creds, etag }) => {
          const headers: Record<string, string> =
            creds === "right"
              ? credentials(ctx, op)
              : creds === "garbage"
                ? { authorization: "Bearer x.y.z", "x-agentmon-api-key": "nope" }
                : {};
          if (etag !== undefined) headers["if-none-match"] = etag;
          const before = ctx.digest();
          // Each case from its own address, so failed credentials (4.6) do not spill into the next.
          const remoteAddress = `10.1.${(++address >> 8) & 255}.${address & 255}`;
          const res = await ctx.api.inject({ method: op.method as "GET", url, headers, remoteAddress });
          const label = `${op.method} ${url.slice(0, 200)}`;
          checkAnswer(res, label);
          if (
            res.statusCode === 200 &&
            /^application\/json/.test(String(res.headers["content-type"])) &&
            res.json().status !== "success"
          ) {
            fail(`G1: ${label}: ${res.body.slice(0, 300)}`);
          }
          if ((op.method === "GET" || res.statusCode >= 400) && ctx.digest() !== before) {
            fail(`${label}: ${res.statusCode >= 400 ? "a refused call" : "a read"} changed the database`);
          }
        },
        op,
      );
    }
    await stillServes(t, ctx);
  },
);

t.test("every path answers the methods it does not declare with 405 and Allow (G3)", async (t) => {
  const ctx = await fuzzApp(t);
  const paths = Object.keys(spec.paths);
  const cases = fc.record({
    path: pickFrom(...paths),
    method: pickFrom("GET", "POST", "PUT", "DELETE", "PATCH", "OPTIONS"),
    segment: textArb(1, 20),
    body: fc.option(fc.jsonValue(), { nil: undefined }),
  });
  await property(
    t,
    "methods",
    cases.filter(({ path, method }) => !spec.paths[path]?.[method.toLowerCase()]),
    RUNS.methods,
    async (c) => {
      const url = c.path.replace(/\{[^}]+\}/g, () => encodeURIComponent(c.segment));
      const payload = c.body === undefined ? undefined : JSON.stringify(c.body);
      const res = await ctx.api.inject({
        method: c.method as "GET",
        url,
        ...(payload === undefined ? {} : { payload, headers: { "content-type": "application/json" } }),
      });
      const label = `${c.method} ${url}`;
      checkAnswer(res, label);
      if (res.statusCode !== 405 || res.json().error !== "Method not allowed")
        fail(`${label}: ${res.statusCode} ${res.body.slice(0, 300)}`);
      const declared = Object.keys(spec.paths[c.path] ?? {}).map((m) => m.toUpperCase());
      const allow = String(res.headers.allow ?? "").split(/, */);
      if (!declared.every((m) => allow.includes(m))) fail(`${label}: Allow is "${res.headers.allow}"`);
    },
  );
  await stillServes(t, ctx);
});

// ---------------------------------------------------------------------------------- the generators themselves

t.test("the generators agree with the schemas: valid bodies match, schema breaks do not", async (t) => {
  for (const op of withBody) {
    const cases = inputs(op).chain(([body]) => {
      const breaks = conv.mutations(op.body, body).filter((m) => m.expectPath !== undefined);
      const changed =
        breaks.length === 0
          ? fc.constant(undefined)
          : pickFrom(...breaks).chain((m) => m.value.map((v) => setAt(body, m.path, v)));
      return fc.tuple(fc.constant(body), changed);
    });
    await property(t, `${op.operationId} generators`, cases, 40, async ([body, changed]) => {
      if (!conv.matches(op.body, body)) fail(`a generated body breaks the schema: ${show(body, 2000)}`);
      if (changed !== undefined && conv.matches(op.body, clone(changed)))
        fail(`a schema break still matches: ${show(changed, 2000)}`);
    });
  }
  t.equal(
    utcOf("2026-11-22T10:39:43.640361+05:30"),
    "2026-11-22T05:09:43.640361Z",
    "G6's own example converts as documented",
  );
  t.equal(utcOf("2026-11-22 05:09Z"), "2026-11-22T05:09:00Z", "seconds may be omitted");
  t.equal(utcOf("0001-01-01T00:30+01:00"), "0000-12-31T23:30:00Z", "offsets cross a year boundary");
  t.equal(utcOf("2026-11-22"), undefined, "a date alone is not a timestamp");
});

// ---------------------------------------------------------------------------------- coverage and known bugs

t.test("every operation of openapi.yaml is fuzzed, and a few thousand cases ran", async (t) => {
  t.ok(withBody.length > 0 && withoutBody.length > 0, "the spec has operations with and without a body");
  for (const op of operations) {
    t.ok((perOperation.get(op.operationId) ?? 0) >= 50, `${op.operationId}: ${perOperation.get(op.operationId)} cases`);
  }
  t.ok(counted >= 2000, `${counted} cases ran`);
  t.ok(({} as Record<string, unknown>).polluted === undefined, "Object.prototype was never polluted");
});

t.test("what the fuzzer found while the read API was being written, fixed since", async (t) => {
  const ctx = await fuzzApp(t);
  // Each of these answered 500, stored bad data or read back other data than sent before its fix.
  const wrapped = await ctx.api.withKey("/create_session", { id: null, session: { id: 5 } });
  checkAnswer(wrapped, "a wrapped body beside a null id");
  t.equal(wrapped.statusCode, 400, '{"id": null, "session": {"id": 5}} is refused, not stored as session "5" (S1, G5)');
  const state = await ctx.api.withKey("/v2/create_session", { session: { id: "s5-proto", end_state: "Constructor" } });
  checkAnswer(state, "end_state Constructor");
  t.equal(state.statusCode, 400, 'end_state "Constructor" is the S5 400, not a 500 from Object.prototype');
  await ctx.api.withJwt("/v2/create_events", { events: [{ id: "a", type: "tool", params: "I" }] }, ctx.jwt);
  await ctx.api.withJwt("/v2/update_events", { events: [{ event_id: "a", type: "llm", params: "X" }] }, ctx.jwt);
  await ctx.api.withJwt("/v2/create_events", { events: [{ id: "b", type: "tool", params: "A", input: "B" }] }, ctx.jwt);
  await ctx.api.withJwt("/v2/update_events", { events: [{ event_id: "b", params: "W" }] }, ctx.jwt);
  const views = new Map(
    (await inspect(ctx.api.store).listEvents(ctx.sessionId)).map((e) => [e.id, eventView(e, ctx.sessionId)]),
  );
  t.equal(
    own(views.get("a"), "params"),
    "X",
    "params X sent with a change from tool to llm reads X, not the old input",
  );
  t.equal(own(views.get("b"), "params"), "W", "params W sent last reads W, not an older unknown copy");
  const tokens = await ctx.api.withJwt(
    "/v2/create_events",
    { events: [{ type: "llm", prompt_tokens: 2 ** 63 }] },
    ctx.jwt,
  );
  checkAnswer(tokens, "prompt_tokens 2^63");
  t.equal(tokens.statusCode, 400, "prompt_tokens 2^63 is a 400 (it was a 500: the STRICT INTEGER column refused it)");
  const headers = { "x-agentmon-api-key": API_KEY };
  const badUrl = await ctx.api.inject({ method: "GET", url: "/v2/sessions/%", headers });
  checkAnswer(badUrl, "GET /v2/sessions/%");
  t.same(Object.keys(badUrl.json()).sort(), ["error", "message"], "a malformed percent-escape answers a G2 body");
  const long = await ctx.api.inject({ method: "GET", url: `/v2/sessions/${"x".repeat(5000)}`, headers });
  checkAnswer(long, "GET /v2/sessions/<5000 characters>");
  t.same(Object.keys(long.json()).sort(), ["error", "message"], "a 5000-character path parameter answers a G2 body");
  const method = await ctx.api.inject({ method: "DELETE", url: "/v2/sessions/x/export" });
  t.equal(method.statusCode, 405, "an undeclared method on a path with a parameter is 405 (G3)");
  t.match(method.headers.allow, /GET/, "and Allow names the declared method");
});
