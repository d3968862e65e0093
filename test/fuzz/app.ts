/**
 * The app under fuzzing: the real app on a real SQLite file, seeded with sessions, events and an
 * agent of odd ids, a digest of every row to prove a refused call changed nothing, and how a case
 * is sent.
 */
import { createHash } from "node:crypto";
import { join } from "node:path";
import Database from "better-sqlite3";
import type { LightMyRequestResponse } from "fastify";
import type { Test } from "tap";
import { TOTALS } from "../../db/projections/projections.ts";
import type { Operation } from "../arbitraries/spec.ts";
import { PROJECTION_TABLES } from "../db/sqlite-committed.ts";
import { API_KEY, build, OTHER_PROJECT_KEY, type TestApp, tempDir } from "../helper.ts";
import { person, signIn } from "../people.helpers.ts";
import { PLURAL } from "./rules.ts";

export interface Ctx {
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
  /** The headers of a signed-in owner's browser (decision 035): cookie, CSRF token, project. */
  person: Record<string, string>;
}

export const SEEDED_SESSIONS = [
  "fuzz-main",
  "fuzz-other",
  "' OR '1'='1';--",
  "a\u0001b", // a control character; not U+0000, which no request may hold (decision 017)
  "%_\\",
  "😀".repeat(256),
  "x".repeat(256),
];
const SEEDED_EVENTS = ["ev-llm", "ev-tool", "ev-action", "ev-error", "'\";--", "\u0001", "🇺🇳\u202e"];

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
export async function fresh(ctx: Ctx): Promise<Ctx> {
  const sessionId = `fuzz-case-${++freshSessions}`;
  return { ...ctx, sessionId, jwt: await seededSession(ctx.api, sessionId) };
}

/** GET /metrics's bearer token on the fuzzed app. */
export const METRICS_TOKEN = "fuzz-metrics-token-0123456789";

export async function fuzzApp(t: Test): Promise<Ctx> {
  const dbPath = join(tempDir(t), "fuzz.db");
  const api = await build(t, { dbPath, metricsToken: METRICS_TOKEN });
  for (const id of SEEDED_SESSIONS.slice(1)) await api.session(id, { tags: ["seed"] });
  const foreignSessionId = "fuzz-foreign";
  await api.session(foreignSessionId, {}, OTHER_PROJECT_KEY);
  const jwt = await seededSession(api, "fuzz-main");
  const otherJwt = await api.session("fuzz-other");
  await api.withJwt("/v2/create_events", { events: [{ id: "ev-elsewhere", type: "llm" }] }, otherJwt);

  await person(api.store, "fuzz-owner@example.com", { owner: true });
  const browser = await signIn(api, "fuzz-owner@example.com");
  const personHeaders = { cookie: browser.cookie, "x-csrf-token": browser.csrf, "x-agentmon-project": "default" };

  const reader = new Database(dbPath, { readonly: true, fileMustExist: true });
  t.teardown(() => reader.close());
  // The raw rows only: the projections (docs/decisions/033-projections.md) catch up on earlier
  // writes whenever the projector runs, which is no write of the call under test.
  const tables = (
    reader.prepare("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name").pluck().all() as string[]
  ).filter((name) => !PROJECTION_TABLES.test(name));
  const columnsOf = (name: string) =>
    (reader.prepare(`SELECT name FROM pragma_table_info('${name}')`).pluck().all() as string[])
      .filter((column) => name !== "sessions" || !(TOTALS as readonly string[]).includes(column))
      .map((column) => `"${column}"`)
      .join(", ");
  const reads = tables.map((name) => ({ name, all: reader.prepare(`SELECT ${columnsOf(name)} FROM "${name}"`).raw() }));
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
    person: personHeaders,
  };
}

export function credentials(ctx: Ctx, op: Operation): Record<string, string> {
  if (op.security === "apiKey") return { "x-agentmon-api-key": API_KEY };
  if (op.security === "jwt") return { authorization: `Bearer ${ctx.jwt}` };
  if (op.security === "metrics") return { authorization: `Bearer ${METRICS_TOKEN}` };
  // Signing out would end the session every other case uses: those two are sent without it (401).
  if (op.security === "person" && !["logOut", "logOutEverywhere"].includes(op.operationId)) return ctx.person;
  return {};
}

/** The operation's URL, path parameters filled in with `value` (percent-encoded). */
const urlOf = (op: Operation, value = "fuzz-main") => op.path.replace(/\{[^}]+\}/g, () => encodeURIComponent(value));

export function send(
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
