/**
 * Shared test setup: the real app on a real SQLite database (`:memory:` unless a file is asked
 * for; with STORE=sqlite-thread, the storage thread on a file), with one project and API key
 * ready, and small helpers for the calls every test makes, the exact error bodies of the contract
 * and the assertions the test files share.
 */
import { createHmac } from "node:crypto";
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { connect } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Database from "better-sqlite3";
import type { FastifyInstance, InjectOptions, LightMyRequestResponse } from "fastify";
import type { Test } from "tap";
import { type AppOptions, buildApp } from "../app.ts";
import { openDb } from "../db/sqlite/open.ts";
import { projectorFunctions } from "../db/sqlite/projector.ts";
import { searchFunctions } from "../db/sqlite/search.ts";
import { sqliteStore } from "../db/sqlite/store.ts";
import { openThreadedStore } from "../db/sqlite/thread.ts";
import type { Store } from "../db/store.ts";
import { hashApiKey, keyPrefix } from "../domain/keys.ts";
import { eventView, sessionView } from "../domain/views.ts";
import { fromRoot } from "../lib/paths.ts";
import { checkAnswer } from "./conformance.ts";
import { testPostgresStore } from "./postgres.ts";

export const API_KEY = "11111111-1111-4111-8111-111111111111";
export const OTHER_PROJECT_KEY = "22222222-2222-4222-8222-222222222222";
export const JWT_SECRET = "test-secret-test-secret-test-secret!";

/** The smallest part of tap's `t` that build() needs, so any test object fits. */
interface Teardown {
  teardown(fn: () => unknown): void;
}

export interface TestApp {
  app: FastifyInstance;
  store: Store;
  /** POST a JSON body with exactly these headers (and a JSON content type), from this client address. */
  post(
    url: string,
    body: unknown,
    headers?: Record<string, string>,
    remoteAddress?: string,
  ): Promise<LightMyRequestResponse>;
  /** POST a JSON body with the API key (or the key given). */
  withKey(url: string, body: unknown, key?: string): Promise<LightMyRequestResponse>;
  /** POST a JSON body with a bearer JWT. */
  withJwt(url: string, body: unknown, jwt: string): Promise<LightMyRequestResponse>;
  /** Creates a session and answers its JWT. */
  session(id: string, fields?: Record<string, unknown>, key?: string): Promise<string>;
  inject(options: InjectOptions): Promise<LightMyRequestResponse>;
}

/**
 * The stores build() can make when the caller gives none, by `STORE`: `sqlite` (the default), the
 * in-thread store, on `:memory:` unless a file is asked for; `sqlite-thread`, the storage thread
 * production uses for a file (db/sqlite/thread.ts), on the file asked for or a temporary one;
 * `postgres`, the PostgreSQL store on a new database of its own (test/postgres.ts), unless a
 * SQLite file is asked for (`dbPath`: the test is about that file, so it gets the SQLite store).
 */
const STORES = ["sqlite", "sqlite-thread", "postgres"] as const;
type StoreKind = (typeof STORES)[number];

/** STORE, checked: an unknown value stops the test file rather than testing the wrong store. */
export function storeKind(value = process.env.STORE): StoreKind {
  if (value === undefined || value === "") return "sqlite";
  if ((STORES as readonly string[]).includes(value)) return value as StoreKind;
  throw new Error(`STORE=${value} is not a store the tests know (${STORES.join(", ")})`);
}

/** The store build() would make (by STORE), for a test that wraps it before it builds the app. */
export async function defaultStore(t: Teardown, dbPath?: string): Promise<Store> {
  const kind = storeKind();
  if (kind === "postgres" && dbPath === undefined) return testPostgresStore(t);
  if (kind !== "sqlite-thread") return sqliteStore(openDb(dbPath ?? ":memory:"));
  // The temporary file's folder goes after the store has closed: teardowns run last first.
  const path = dbPath ?? join(tempDir(t), "agentmon.db");
  const store = await openThreadedStore({ path });
  t.teardown(() => store.close());
  return store;
}

export async function build(t: Teardown, options: Partial<AppOptions> & { dbPath?: string } = {}): Promise<TestApp> {
  const { dbPath, ...appOptions } = options;
  const store = appOptions.store ?? (await defaultStore(t, dbPath));
  const now = new Date().toISOString();
  if ((await store.listApiKeys()).length === 0) {
    await store.createApiKey(hashApiKey(API_KEY), keyPrefix(API_KEY), "default", now);
    await store.createApiKey(hashApiKey(OTHER_PROJECT_KEY), keyPrefix(OTHER_PROJECT_KEY), "other", now);
  }
  // O2 (503 while the event loop lags) is off unless a test asks for it: this machine's noisy
  // cores must not turn an expected answer into a 503.
  const app = await buildApp({
    jwtSecret: JWT_SECRET,
    publicUrl: "http://agentmon.test",
    maxEventLoopDelayMs: 0,
    ...appOptions,
    store,
  });
  await app.ready();
  t.teardown(() => app.close());
  checkEveryAnswer(app);

  const post = (url: string, body: unknown, headers: Record<string, string> = {}, remoteAddress?: string) =>
    app.inject({
      method: "POST",
      url,
      headers: { "content-type": "application/json", ...headers },
      payload: JSON.stringify(body),
      ...(remoteAddress === undefined ? {} : { remoteAddress }),
    });
  const withKey = (url: string, body: unknown, key = API_KEY) => post(url, body, { "x-agentmon-api-key": key });
  const withJwt = (url: string, body: unknown, jwt: string) => post(url, body, { authorization: `Bearer ${jwt}` });
  const session = async (id: string, fields: Record<string, unknown> = {}, key = API_KEY) => {
    const res = await withKey("/v2/create_session", { session: { id, ...fields } }, key);
    if (res.statusCode !== 200) throw new Error(`create_session answered ${res.statusCode}: ${res.body}`);
    return (res.json() as { jwt: string }).jwt;
  };
  return { app, store, post, withKey, withJwt, session, inject: (o) => app.inject(o) };
}

/**
 * The conformance layer (decision 030, test/conformance.ts): every answer of app.inject is checked
 * against openapi.yaml (status, media type, the JSON body against its closed schema) before the
 * test sees it; an answer that does not conform rejects the inject with the reason, failing the
 * test that made it.
 */
function checkEveryAnswer(app: FastifyInstance) {
  const inject = app.inject.bind(app) as (options?: unknown, callback?: unknown) => unknown;
  const checked = (options?: InjectOptions | string, callback?: unknown) => {
    if (options === undefined || callback !== undefined) return inject(options, callback);
    return (inject(options) as Promise<LightMyRequestResponse>).then((res) => {
      const request = res.raw.req as { method?: string; url?: string };
      checkAnswer({
        method: request.method ?? "GET",
        url: request.url ?? "/",
        status: res.statusCode,
        contentType: res.headers["content-type"] as string | undefined,
        body: res.body,
      });
      return res;
    });
  };
  app.inject = checked as typeof app.inject;
}

/** Asserts nothing internal leaks into an error body (G2); `stack_trace` is a field of C2's body, not a leak. */
export function leaksNothing(body: string): boolean {
  return !/\bat \S+ \(|node_modules|\/work\/|\.ts:\d|SQLITE|sqlite|SELECT |INSERT |stack(?!_trace)/i.test(body);
}

export const UNKNOWN_KEY = "33333333-3333-4333-8333-333333333333";
export const MIB = 1024 * 1024;
export const json = "application/json";

// ----------------------------------------------------------------------------- error bodies (G2)

export interface Detail {
  path: string;
  message: string;
}

export interface ErrorBody {
  error: string;
  message: string;
  details?: Detail[];
}

export const INVALID_API_KEY = { error: "Invalid API key", message: "Please check your API key and try again" };

export const INVALID_JWT = {
  error: "Invalid or expired JWT",
  message: "Please reauthorize using the /v2/reauthorize_jwt endpoint",
};

/** The G2 body of a 400 with exactly one problem. */
export const invalid = (detail: Detail) => ({
  error: "Invalid request",
  message: `The request body is not valid: ${detail.path} ${detail.message}`,
  details: [detail],
});

/** The 403 body for a JWT of session `own` naming session `other`. */
export const forbidden = (own: string, other: string) => ({
  error: "Forbidden",
  message: `This JWT belongs to session ${own}; it cannot write to session ${other}`,
});

// ----------------------------------------------------------------------------- assertions

/** Asserts the status and that the JSON body is exactly `body`; both assertions carry the message, if one is given. */
export function isAnswer(
  t: Test,
  res: LightMyRequestResponse,
  status: number,
  body: unknown,
  ...message: [] | [string]
) {
  t.equal(res.statusCode, status, ...message);
  t.strictSame(res.json(), body, ...message);
}

/** G1: 200, a JSON object, `status: "success"`, and exactly the keys the operation documents. */
export function isSuccess(t: Test, res: LightMyRequestResponse, keys: string[]) {
  t.equal(res.statusCode, 200, `200 (body: ${res.body.slice(0, 300)})`);
  t.match(res.headers["content-type"], /^application\/json/, "JSON content type");
  const body = res.json();
  t.ok(typeof body === "object" && body !== null && !Array.isArray(body), "the body is a JSON object");
  t.equal(body.status, "success", "status is success");
  t.same(Object.keys(body).sort(), ["status", ...keys].sort(), "exactly the documented keys");
  return body;
}

/** G2: the status, a JSON object of error/message (and details only where allowed), nothing internal. */
export function isError(t: Test, res: LightMyRequestResponse, status: number, error?: string): ErrorBody {
  t.equal(res.statusCode, status, `status ${status} (body: ${res.body.slice(0, 300)})`);
  t.match(res.headers["content-type"], /^application\/json/, "JSON content type");
  const body = res.json() as ErrorBody;
  t.ok(typeof body === "object" && body !== null && !Array.isArray(body), "the body is a JSON object");
  const keys = Object.keys(body).sort();
  t.ok(
    JSON.stringify(keys) === '["error","message"]' || JSON.stringify(keys) === '["details","error","message"]',
    `only error, message and details (got ${keys.join(", ")})`,
  );
  t.type(body.error, "string");
  t.type(body.message, "string");
  t.ok(body.error.length > 0 && body.message.length > 0, "error and message are not empty");
  if (error !== undefined) t.equal(body.error, error, `error is "${error}"`);
  if (body.details !== undefined) {
    t.ok(Array.isArray(body.details), "details is an array");
    for (const detail of body.details) {
      t.same(Object.keys(detail).sort(), ["message", "path"], "each detail is {path, message}");
      t.type(detail.path, "string");
      t.type(detail.message, "string");
      t.ok(detail.message.length > 0, "each detail has a message");
    }
  }
  t.ok(leaksNothing(res.body), `nothing internal leaks: ${res.body.slice(0, 300)}`);
  return body;
}

/** A 400 schema violation whose details name exactly these paths, one entry each. */
export function isInvalid(t: Test, res: LightMyRequestResponse, paths: string[]): ErrorBody {
  const body = isError(t, res, 400, "Invalid request");
  t.ok(Array.isArray(body.details), "a schema violation carries details");
  t.same((body.details ?? []).map((d) => d.path).sort(), [...paths].sort(), `details name ${paths.join(", ")}`);
  return body;
}

// ----------------------------------------------------------------------------- requests and readback

/**
 * What a test reads back of a session, whichever project holds it: the Store answers only
 * project-scoped reads, so this looks in each project that has a key.
 */
export function inspect(store: Store) {
  const find = async (id: string) => {
    const projects = new Set((await store.listApiKeys()).map((key) => key.project_id));
    for (const project of projects) {
      const found = await store.readSession(project, id, { agents: true, events: true });
      if (found) return found;
    }
    return undefined;
  };
  return {
    getSession: async (id: string) => (await find(id))?.session,
    listEvents: async (id: string) => (await find(id))?.events ?? [],
    listAgents: async (id: string) => (await find(id))?.agents ?? [],
    tokenCost: async (id: string) => (await find(id))?.totals.cost ?? 0,
  };
}

/** POST a raw payload with exactly the headers given. */
export const rawPost = (api: TestApp, url: string, payload: string | Buffer, headers: Record<string, string>) =>
  api.inject({ method: "POST", url, headers, payload });

/** A session's stored events, as clients read them. */
export async function eventViews(store: Store, sessionId: string) {
  return (await inspect(store).listEvents(sessionId)).map((event) => eventView(event, sessionId));
}

/** The ids of a session's stored events. */
export async function eventIds(store: Store, sessionId: string) {
  return (await inspect(store).listEvents(sessionId)).map((event) => event.id);
}

/** A session as stored, in the shape clients read it (S6); undefined when there is none. */
export async function storedSession(store: Store, id: string) {
  const record = await inspect(store).getSession(id);
  return record === undefined ? undefined : sessionView(record);
}

/** The header and claims of a JWT, read without checking it (the server checks it when it is used). */
export function decodeJwt(jwt: string): { header: Record<string, unknown>; claims: Record<string, unknown> } {
  const [header = "", claims = ""] = jwt.split(".");
  return {
    header: JSON.parse(Buffer.from(header, "base64url").toString("utf8")),
    claims: JSON.parse(Buffer.from(claims, "base64url").toString("utf8")),
  };
}

/**
 * An HS256 JWT of the 4.4 claims (exp = iat + 24 h) built by hand with node:crypto: the algorithm
 * agentmon signed with before @fastify/jwt did (decision 010), so tests can forge tokens
 * independently of the app's signer.
 */
export function hs256Jwt(
  claims: { session_id: string; project_id: string; key_id: string; iat: number },
  secret = JWT_SECRET,
): string {
  const encode = (value: unknown) => Buffer.from(JSON.stringify(value)).toString("base64url");
  const input = `${encode({ alg: "HS256", typ: "JWT" })}.${encode({ ...claims, exp: claims.iat + 24 * 60 * 60 })}`;
  return `${input}.${createHmac("sha256", secret).update(input).digest("base64url")}`;
}

/** A temporary directory, removed when the test ends. */
export function tempDir(t: Teardown): string {
  const dir = mkdtempSync(join(tmpdir(), "agentmon-test-"));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

/**
 * A SQLite file as schema version `version` left it (migrations 001 to `version`, user_version
 * saying so), for the migration tests to fill with rows as that version stored them. The search
 * functions are registered, as openDb does: migration 008 indexes the events with them.
 */
export function fileAtVersion(path: string, version: number): Database.Database {
  const db = new Database(path);
  db.pragma("journal_mode = WAL");
  searchFunctions(db);
  projectorFunctions(db);
  const folder = fromRoot("db/sqlite/migrations/");
  for (const name of readdirSync(folder)
    .filter((n) => /^\d{3}-.*\.sql$/.test(n) && Number(n.slice(0, 3)) <= version)
    .sort()) {
    db.exec(readFileSync(new URL(name, folder), "utf8"));
  }
  db.pragma(`user_version = ${version}`);
  return db;
}

/** Sends `request` as raw bytes to 127.0.0.1:`port` and answers all the server sent until it closed. */
export function rawExchange(port: number, request: string): Promise<string> {
  return new Promise<string>((resolve, reject) => {
    const socket = connect(port, "127.0.0.1");
    let received = "";
    socket.setEncoding("utf8");
    socket.on("data", (chunk: string) => {
      received += chunk;
    });
    socket.on("error", reject);
    socket.on("close", () => resolve(received));
    socket.write(request);
  });
}
