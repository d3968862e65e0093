/**
 * Keys with scopes (openapi.yaml 4.7, issue 16 part 4): every operation of openapi.yaml × every
 * scope set, with the expected status, generated from the spec (an operation without a scope
 * rule, or without a request below, fails here); then the G3 order of the 403, that a refused call
 * stores nothing, tokens, and 4.6. Runs on PostgreSQL with STORE=postgres.
 */
import { readFileSync } from "node:fs";
import type { LightMyRequestResponse } from "fastify";
import t, { type Test } from "tap";
import { parse } from "yaml";
import { hashApiKey, keyPrefix, SCOPES } from "../domain/keys.ts";
import type { Scope } from "../domain/types.ts";
import { routesOf, type Spec } from "../http/routes.ts";
import { API_KEY, build, INVALID_JWT, inspect, isAnswer, isError, OTHER_PROJECT_KEY, type TestApp } from "./helper.ts";
import { decodeStatus, encodeTraces } from "./otlp.encode.ts";
import { SMALL, TRACE, TRACE_SESSION } from "./otlp.helpers.ts";

const SPEC_TEXT = readFileSync(new URL("../openapi.yaml", import.meta.url), "utf8");
const spec = parse(SPEC_TEXT) as Spec & { paths: Record<string, Record<string, Record<string, unknown>>> };

interface Operation {
  method: string;
  path: string;
  id: string;
  scope: unknown;
  schemes: string[];
  otlp: boolean;
}
const operations: Operation[] = Object.entries(spec.paths).flatMap(([path, item]) =>
  Object.entries(item).map(([method, op]) => ({
    method: method.toUpperCase(),
    path,
    id: op.operationId as string,
    scope: op["x-agentmon-scope"],
    schemes: ((op.security ?? []) as Record<string, string[]>[]).flatMap((s) => Object.keys(s)),
    otlp: (op["x-fastify-config"] as { otlp?: string } | undefined)?.otlp !== undefined,
  })),
);

/** What a request is sent with: the key under test, and the JWT it obtained (when it could). */
interface Ctx {
  api: TestApp;
  key: string;
  jwt: string | undefined;
  /** A name no other case uses, for the ids a case creates. */
  unique: string;
}

type Send = (c: Ctx) => Promise<LightMyRequestResponse>;
const keyHeader = (c: Ctx) => ({ "x-agentmon-api-key": c.key });
const jwtHeader = (c: Ctx) => (c.jwt === undefined ? keyHeader(c) : { authorization: `Bearer ${c.jwt}` });
const get =
  (url: string, headers?: (c: Ctx) => Record<string, string>): Send =>
  (c) =>
    c.api.inject({ method: "GET", url: url.replace("{u}", c.unique), headers: headers?.(c) ?? {} });
const post =
  (url: string, body: (c: Ctx) => unknown, headers: (c: Ctx) => Record<string, string>): Send =>
  (c) =>
    c.api.post(url, body(c), headers(c));
const otlp =
  (url: string, body: unknown): Send =>
  (c) =>
    c.api.inject({
      method: "POST",
      url,
      headers: { "content-type": "application/json", authorization: `Bearer ${c.key}` },
      payload: JSON.stringify(body),
    });

/** A session every read case finds: made with the all-scope key, with an event and a score. */
const SEEN = "scopes-seen";
const SEEN_SCORE = "scopes-seen-score";

/**
 * For every operation: a request that succeeds given the right credential, and its success status.
 * The credential is the one its security names: the key in its header, the JWT the key obtained,
 * the key as an OTLP bearer token, or none at all.
 */
const REQUESTS: Record<string, { ok: number; send: Send }> = {
  createSession: {
    ok: 200,
    send: post("/v2/create_session", (c) => ({ session: { id: `cs-${c.unique}` } }), keyHeader),
  },
  createSessionUnversioned: { ok: 200, send: post("/create_session", (c) => ({ id: `csu-${c.unique}` }), keyHeader) },
  reauthorizeJwt: { ok: 200, send: post("/v2/reauthorize_jwt", () => ({ session_id: SEEN }), keyHeader) },
  createDeveloperError: {
    ok: 200,
    send: post("/v2/developer_errors", () => ({ type: "AttributeError", message: "x" }), keyHeader),
  },
  updateSession: {
    ok: 200,
    send: post("/v2/update_session", () => ({ session: { end_state: "Success" } }), jwtHeader),
  },
  createEvents: {
    ok: 200,
    send: post("/v2/create_events", () => ({ events: [{ type: "llm", id: "e1" }] }), jwtHeader),
  },
  createEventsUnversioned: {
    ok: 200,
    send: post("/create_events", () => ({ events: [{ type: "tool", id: "e2" }] }), jwtHeader),
  },
  updateEvents: {
    ok: 200,
    send: async (c) => {
      await c.api.post("/v2/create_events", { events: [{ type: "llm", id: "e3" }] }, jwtHeader(c));
      return c.api.post("/v2/update_events", { events: [{ event_id: "e3", completion: "done" }] }, jwtHeader(c));
    },
  },
  createAgent: { ok: 200, send: post("/v2/create_agent", () => ({ id: "agent-1", name: "planner" }), jwtHeader) },
  createThread: { ok: 200, send: post("/v2/create_thread", () => ({ id: "thread-1" }), jwtHeader) },
  getOpenapiSpec: { ok: 200, send: get("/v2/openapi.yaml") },
  listSessions: { ok: 200, send: get("/v2/sessions", keyHeader) },
  getSession: { ok: 200, send: get(`/v2/sessions/${SEEN}`, keyHeader) },
  listSessionEvents: { ok: 200, send: get(`/v2/sessions/${SEEN}/events`, keyHeader) },
  getSessionStats: { ok: 200, send: get(`/v2/sessions/${SEEN}/stats`, keyHeader) },
  exportSession: { ok: 200, send: get(`/v2/sessions/${SEEN}/export`, keyHeader) },
  exportSessions: { ok: 200, send: get("/v2/export?format=csv", keyHeader) },
  getAnalyticsTimeseries: { ok: 200, send: get("/v2/analytics/timeseries?bucket=hour&tz=Asia/Kolkata", keyHeader) },
  getAnalyticsBreakdown: { ok: 200, send: get("/v2/analytics/breakdown?by=model", keyHeader) },
  getScoreTimeseries: { ok: 200, send: get("/v2/analytics/scores?name=helpfulness", keyHeader) },
  getScoreBreakdown: { ok: 200, send: get("/v2/analytics/scores/breakdown?name=helpfulness&by=model", keyHeader) },
  getSessionLogs: { ok: 200, send: get(`/v2/sessions/${TRACE_SESSION}/logs`, keyHeader) },
  deleteSession: {
    ok: 200,
    send: async (c) => {
      await c.api.withKey("/v2/create_session", { session: { id: `del-${c.unique}` } }, ALL_KEY);
      return c.api.inject({ method: "DELETE", url: `/v2/sessions/del-${c.unique}`, headers: keyHeader(c) });
    },
  },
  deleteSessions: {
    ok: 200,
    send: async (c) => {
      await c.api.withKey("/v2/create_session", { session: { id: `bulk-${c.unique}`, tags: [c.unique] } }, ALL_KEY);
      return c.api.post("/v2/delete_sessions", { tag: [c.unique] }, keyHeader(c));
    },
  },
  exportTraces: { ok: 200, send: otlp("/v1/traces", SMALL) },
  exportTracesSlash: { ok: 200, send: otlp("/v1/traces/", SMALL) },
  exportLogs: { ok: 200, send: otlp("/v1/logs", { resourceLogs: [] }) },
  exportMetrics: { ok: 200, send: otlp("/v1/metrics", { resourceMetrics: [] }) },
  createOtlpToken: {
    ok: 200,
    send: post(
      "/v3/auth/token",
      (c) => ({ api_key: c.key }),
      () => ({}),
    ),
  },
  uploadLogs: {
    ok: 200,
    send: (c) =>
      c.api.inject({
        method: "POST",
        url: "/v4/logs/upload/",
        headers: { authorization: `Bearer ${c.key}`, "content-type": "application/json", "trace-id": TRACE },
        payload: JSON.stringify({ body: "line\n" }),
      }),
  },
  getUiSessions: { ok: 302, send: get(`/sessions?trace_id=${TRACE}`) },
  getUiDrilldownRedirect: { ok: 302, send: get(`/drilldown?session_id=${SEEN}`) },
  getHealth: { ok: 200, send: get("/healthz") },
  getHealthAlias: { ok: 200, send: get("/health") },
  getReadiness: { ok: 200, send: get("/readyz") },
  // Without AGENTMON_METRICS_TOKEN the main port has no /metrics (404), whatever the key.
  getMetrics: { ok: 404, send: get("/metrics", keyHeader) },
  getUiHome: { ok: 200, send: get("/", keyHeader) },
  getUiSession: { ok: 200, send: get(`/sessions/${SEEN}`, keyHeader) },
  getUiAsset: { ok: 200, send: get("/ui/app.css", keyHeader) },
  // People (decision 035): no API-key scope; an API key is no person (test/people.roles.test.ts
  // covers them by role). Sign-in and the links answer their 400 for these bodies, whatever the key.
  logIn: { ok: 401, send: post("/v2/auth/login", () => ({ email: "a@b.c", password: "p" }), keyHeader) },
  signUp: {
    ok: 400,
    send: post("/v2/auth/signup", () => ({ token: "x", email: "a@b.c", name: "A", password: "p" }), keyHeader),
  },
  resetPassword: { ok: 400, send: post("/v2/auth/reset_password", () => ({ token: "x", password: "p" }), keyHeader) },
  logOut: { ok: 401, send: post("/v2/auth/logout", () => ({}), keyHeader) },
  logOutEverywhere: { ok: 401, send: post("/v2/auth/logout_everywhere", () => ({}), keyHeader) },
  getMe: { ok: 401, send: get("/v2/auth/me", keyHeader) },
  createInvitation: {
    ok: 401,
    send: post("/v2/people/invitations", () => ({ email: "a@b.c", role: "viewer" }), keyHeader),
  },
  createResetLink: { ok: 401, send: post("/v2/people/someone/reset_link", () => ({}), keyHeader) },
  listAudit: { ok: 200, send: get("/v2/audit", keyHeader) },
  exportAudit: { ok: 200, send: get("/v2/audit/export", keyHeader) },
  // No identity provider is configured here: a 404, whatever the key.
  listSignInMethods: { ok: 200, send: get("/v2/auth/providers", keyHeader) },
  startOidc: { ok: 404, send: get("/v2/auth/oidc/corp/start", keyHeader) },
  finishOidc: { ok: 404, send: get("/v2/auth/oidc/corp/callback?code=x&state=y", keyHeader) },
  listProjects: { ok: 401, send: get("/v2/projects", keyHeader) },
  createProject: { ok: 401, send: post("/v2/projects", () => ({ name: "p" }), keyHeader) },
  listKeys: { ok: 200, send: get("/v2/keys", keyHeader) },
  createKey: { ok: 200, send: post("/v2/keys", () => ({ scopes: ["read"] }), keyHeader) },
  revokeKey: { ok: 404, send: post("/v2/keys/no-such-key/revoke", () => ({}), keyHeader) },
  listMembers: { ok: 200, send: get("/v2/members", keyHeader) },
  setMember: {
    ok: 404,
    send: (c) =>
      c.api.inject({
        method: "PUT",
        url: "/v2/members/nobody",
        headers: { ...keyHeader(c), "content-type": "application/json" },
        payload: JSON.stringify({ role: "viewer" }),
      }),
  },
  removeMember: {
    ok: 404,
    send: (c) => c.api.inject({ method: "DELETE", url: "/v2/members/nobody", headers: keyHeader(c) }),
  },
  setProjectRetention: {
    ok: 200,
    send: (c) =>
      c.api.inject({
        method: "PUT",
        url: "/v2/retention",
        headers: { ...keyHeader(c), "content-type": "application/json" },
        payload: JSON.stringify({ days: 30 }),
      }),
  },
  setUserDisabled: { ok: 401, send: post("/v2/people/someone/disabled", () => ({ disabled: true }), keyHeader) },
  // Scores (issue 25): with the API key (a JWT's scoring is test/scores.test.ts').
  createScores: {
    ok: 200,
    send: post(
      "/v2/scores",
      (c) => ({ scores: [{ id: `sc-${c.unique}`, name: "x", value: 1, session_id: SEEN }] }),
      keyHeader,
    ),
  },
  listScores: { ok: 200, send: get("/v2/scores", keyHeader) },
  getScore: { ok: 200, send: get(`/v2/scores/${SEEN_SCORE}`, keyHeader) },
  updateScore: {
    ok: 200,
    send: (c) =>
      c.api.inject({
        method: "PATCH",
        url: `/v2/scores/${SEEN_SCORE}`,
        headers: { ...keyHeader(c), "content-type": "application/json" },
        payload: JSON.stringify({ comment: c.unique }),
      }),
  },
  deleteScore: {
    ok: 200,
    send: async (c) => {
      const scores = [{ id: `del-${c.unique}`, name: "x", value: 1, session_id: SEEN }];
      await c.api.withKey("/v2/scores", { scores }, ALL_KEY);
      return c.api.inject({ method: "DELETE", url: `/v2/scores/del-${c.unique}`, headers: keyHeader(c) });
    },
  },
  listScoreConfigs: { ok: 200, send: get("/v2/score-configs", keyHeader) },
  putScoreConfig: {
    ok: 200,
    send: (c) =>
      c.api.inject({
        method: "PUT",
        url: `/v2/score-configs/cfg-${c.unique}`,
        headers: { ...keyHeader(c), "content-type": "application/json" },
        payload: JSON.stringify({ data_type: "boolean" }),
      }),
  },
};

const ALL_KEY = "a0000000-0000-4000-8000-000000000000";
/** The keys of the table, all of project `default`, by their scopes. */
const KEYS: Record<string, Scope[]> = {
  [ALL_KEY]: ["ingest", "read", "admin", "annotate"],
  "a7000000-0000-4000-8000-000000000000": ["annotate"],
  "a8000000-0000-4000-8000-000000000000": ["ingest", "read", "admin"],
  "a9000000-0000-4000-8000-000000000000": ["ingest", "admin", "annotate"],
  "aa000000-0000-4000-8000-000000000000": ["ingest", "read", "annotate"],
  "ab000000-0000-4000-8000-000000000000": ["read", "admin", "annotate"],
  "a1000000-0000-4000-8000-000000000000": ["ingest"],
  "a2000000-0000-4000-8000-000000000000": ["read"],
  "a3000000-0000-4000-8000-000000000000": ["admin"],
  "a4000000-0000-4000-8000-000000000000": ["read", "admin"],
  "a5000000-0000-4000-8000-000000000000": ["ingest", "admin"],
  "a6000000-0000-4000-8000-000000000000": ["ingest", "read"],
};
const keyOf = (scopes: readonly Scope[]) =>
  Object.entries(KEYS).find(([, s]) => s.join() === SCOPES.filter((x) => scopes.includes(x)).join())?.[0] as string;

/** The scope sets every operation is tried with: each alone, all, and all but the ones it takes. */
const scopeSets = (needs: readonly Scope[] | undefined): [string, Scope[]][] => [
  ["ingest", ["ingest"]],
  ["read", ["read"]],
  ["admin", ["admin"]],
  ["annotate", ["annotate"]],
  ["all", [...SCOPES]],
  ["none matching", SCOPES.filter((s) => !(needs ?? ["ingest"]).includes(s))],
];

const denial = (has: readonly Scope[], needs: Scope | readonly Scope[]) =>
  `This API key has scope${has.length === 1 ? "" : "s"} ${has.join(", ")}; this operation needs ${[needs].flat().join(" or ")}`;

/** An operation's `x-agentmon-scope` as a list (any one will do), or undefined for `none`. */
const scopesOf = (op: { scope: unknown }): Scope[] | undefined =>
  op.scope === "none" ? undefined : ([op.scope].flat() as Scope[]);

async function app(t: Test) {
  const api = await build(t);
  const now = new Date().toISOString();
  for (const [key, scopes] of Object.entries(KEYS)) {
    await api.store.createApiKey(hashApiKey(key), keyPrefix(key), "default", now, scopes);
  }
  const jwt = await api.session(SEEN, {}, ALL_KEY);
  await api.withJwt("/v2/create_events", { events: [{ type: "llm", id: "seen-1" }] }, jwt);
  await api.withKey("/v2/scores", { scores: [{ id: SEEN_SCORE, name: "x", value: 1, session_id: SEEN }] }, ALL_KEY);
  return api;
}

t.test("openapi.yaml: every operation has a scope rule that matches its credential", async (t) => {
  t.ok(operations.length >= 30, `${operations.length} operations`);
  for (const op of operations) {
    t.ok(
      op.scope === "none" || [op.scope].flat().every((s) => SCOPES.includes(s as Scope)),
      `${op.id}: x-agentmon-scope is none, or one or more of ${SCOPES.join(", ")}`,
    );
    const apiKey = op.schemes.includes("agentmonApiKey") || op.id === "createOtlpToken";
    const credential = apiKey || op.schemes.includes("bearerAuth");
    t.equal(op.scope !== "none", credential, `${op.id}: a scope exactly when an API key or its JWT is the credential`);
    if (op.schemes.includes("bearerAuth"))
      t.ok(scopesOf(op)?.includes("ingest"), `${op.id}: a JWT carries ingest alone`);
    if (op.otlp) t.equal(op.scope, "ingest", `${op.id}: OTLP ingests`);
    t.ok(REQUESTS[op.id], `${op.id}: the table below has a request for it`);
    const responses = (spec.paths[op.path]?.[op.method.toLowerCase()]?.responses ?? {}) as Record<
      string,
      { $ref?: string }
    >;
    if (apiKey) {
      t.equal(
        responses["403"]?.$ref,
        op.otlp
          ? "#/components/responses/OtlpPermissionDenied"
          : op.schemes.includes("bearerAuth")
            ? "#/components/responses/ForbiddenOrMissingScope"
            : "#/components/responses/MissingScope",
        `${op.id}: declares the 403 of a missing scope`,
      );
    }
  }
  const broken = structuredClone(spec);
  const listing = broken.paths["/v2/sessions"]?.get as Record<string, unknown>;
  delete listing["x-agentmon-scope"];
  t.throws(() => routesOf(broken), /listSessions needs x-agentmon-scope/, "the app is not built without one");
});

t.test("every operation × every scope set: the status the spec's scope rule gives", async (t) => {
  const api = await app(t);
  let n = 0;
  for (const op of operations) {
    const request = REQUESTS[op.id];
    if (!request) continue; // reported by the test above
    const needs = scopesOf(op);
    for (const [name, scopes] of scopeSets(needs)) {
      n += 1;
      const key = keyOf(scopes);
      const what = `${op.method} ${op.path} (${op.id}, needs ${op.scope}) with a key of ${name} [${scopes.join(",")}]`;
      let jwt: string | undefined;
      const jwtOnly = op.schemes.includes("bearerAuth") && !op.schemes.includes("agentmonApiKey");
      if (jwtOnly) {
        const res = await api.withKey("/v2/create_session", { session: { id: `jwt-${n}` } }, key);
        if (res.statusCode === 200) jwt = (res.json() as { jwt: string }).jwt;
        else isAnswer(t, res, 403, { error: "Forbidden", message: denial(scopes, "ingest") }, `${what}: no JWT`);
      }
      const res = await request.send({ api, key, jwt, unique: String(n) });
      if (needs === undefined || needs.some((s) => scopes.includes(s))) {
        t.equal(res.statusCode, request.ok, `${what}: ${request.ok} (${res.body.slice(0, 200)})`);
      } else if (jwtOnly) {
        isAnswer(t, res, 401, INVALID_JWT, `${what}: without a JWT, the key alone is no credential`);
      } else if (op.otlp) {
        isAnswer(t, res, 403, { code: 7, message: denial(scopes, needs) }, `${what}: PERMISSION_DENIED`);
      } else {
        isAnswer(t, res, 403, { error: "Forbidden", message: denial(scopes, needs) }, what);
      }
    }
  }
  t.equal(n, operations.length * 6, "every operation, six scope sets each");
});

t.test("G3: a missing scope is a 403 after 401, 413, 415 and 400, before 404 and 409", async (t) => {
  const api = await app(t);
  const read = keyOf(["read"]);
  const ingest = keyOf(["ingest"]);
  const forbidden = (has: Scope, needs: Scope) => ({ error: "Forbidden", message: denial([has], needs) });
  // 401 first: a bad key is a bad key, whatever it could have done.
  t.equal(
    (await api.withKey("/v2/create_session", { session: { id: "g3" } }, "b0000000-0000-4000-8000-000000000000"))
      .statusCode,
    401,
  );
  // 415 and 400 (the schema's and the operation's own) come before the 403.
  const text = await api.inject({
    method: "POST",
    url: "/v2/create_session",
    headers: { "content-type": "text/plain", "x-agentmon-api-key": read },
    payload: "hello",
  });
  isError(t, text, 415, "Unsupported media type");
  isError(t, await api.withKey("/v2/create_session", { session: {} }, read), 400, "Invalid request");
  isError(
    t,
    await api.withKey("/v2/create_session", { session: { id: "g3", init_timestamp: "yesterday" } }, read),
    400,
  );
  isError(t, await api.withKey("/v2/create_session", { session: { id: "g3", tags: "x" } }, read), 400);
  isError(
    t,
    await api.inject({ method: "GET", url: "/v2/sessions?limit=100000", headers: { "x-agentmon-api-key": ingest } }),
    400,
  );
  isError(
    t,
    await api.inject({ method: "GET", url: "/v2/sessions?cursor=nope", headers: { "x-agentmon-api-key": ingest } }),
    400,
  );
  // 413 too.
  const big = await api.withKey(
    "/v2/create_session",
    { session: { id: "g3", pad: "x".repeat(6 * 1024 * 1024) } },
    read,
  );
  isError(t, big, 413, "Payload too large");
  // Then the 403, before the 409 of another project's id and the 404 of an unknown session.
  await api.session("theirs", {}, OTHER_PROJECT_KEY);
  isAnswer(
    t,
    await api.withKey("/v2/create_session", { session: { id: "theirs" } }, read),
    403,
    forbidden("read", "ingest"),
  );
  isAnswer(
    t,
    await api.withKey("/v2/reauthorize_jwt", { session_id: "nowhere" }, read),
    403,
    forbidden("read", "ingest"),
  );
  const unknown = await api.inject({
    method: "GET",
    url: "/v2/sessions/nowhere",
    headers: { "x-agentmon-api-key": ingest },
  });
  isAnswer(t, unknown, 403, forbidden("ingest", "read"));
  const gone = await api.inject({
    method: "DELETE",
    url: "/v2/sessions/nowhere",
    headers: { "x-agentmon-api-key": read },
  });
  isAnswer(t, gone, 403, forbidden("read", "admin"));
  // OTLP: an undecodable body is T10's 400, a decodable one the 403, both as google.rpc.Status.
  const otlp = (payload: Buffer) =>
    api.inject({
      method: "POST",
      url: "/v1/traces",
      headers: { "content-type": "application/x-protobuf", authorization: `Bearer ${read}` },
      payload,
    });
  const broken = await otlp(Buffer.from([0x0a, 0xff, 0xff]));
  t.equal(broken.statusCode, 400);
  t.equal(decodeStatus(broken.rawPayload).code, 3, "INVALID_ARGUMENT");
  const denied = await otlp(Buffer.from(encodeTraces(SMALL)));
  t.equal(denied.statusCode, 403);
  t.match(denied.headers["content-type"], /^application\/x-protobuf/, "in the request's media type");
  t.strictSame(decodeStatus(denied.rawPayload), { code: 7, message: denial(["read"], "ingest") }, "PERMISSION_DENIED");
});

t.test("a refused call reads, writes and issues nothing", async (t) => {
  const api = await app(t);
  const store = inspect(api.store);
  const read = keyOf(["read"]);
  const ingest = keyOf(["ingest"]);
  t.equal((await api.withKey("/v2/create_session", { session: { id: "not-made" } }, read)).statusCode, 403);
  t.equal(await store.getSession("not-made"), undefined, "create_session stored nothing");
  t.equal(
    (
      await api.post(
        "/v2/developer_errors",
        { type: "E", message: "m", session_id: SEEN },
        { "x-agentmon-api-key": read },
      )
    ).statusCode,
    403,
  );
  t.equal((await store.listEvents(SEEN)).length, 1, "developer_errors stored no event");
  const del = await api.inject({
    method: "DELETE",
    url: `/v2/sessions/${SEEN}`,
    headers: { "x-agentmon-api-key": ingest },
  });
  t.equal(del.statusCode, 403);
  t.ok(await store.getSession(SEEN), "the session was not deleted");
  const traces = await api.inject({
    method: "POST",
    url: "/v1/traces",
    headers: { "content-type": "application/json", authorization: `Bearer ${read}` },
    payload: JSON.stringify(SMALL),
  });
  t.equal(traces.statusCode, 403);
  t.equal(await store.getSession(TRACE_SESSION), undefined, "no trace stored");
  const token = await api.post("/v3/auth/token", { api_key: read }, {});
  isAnswer(t, token, 403, { error: "Forbidden", message: denial(["read"], "ingest") }, "no T5 token for a read key");
});

t.test("tokens carry ingest: a T5 token and a JWT of an ingest key write, and never read", async (t) => {
  const api = await app(t);
  const ingest = keyOf(["ingest"]);
  const token = (await api.post("/v3/auth/token", { api_key: ingest }, {})).json().token as string;
  const traces = await api.inject({
    method: "POST",
    url: "/v1/traces",
    headers: { "content-type": "application/json", authorization: `Bearer ${token}` },
    payload: JSON.stringify(SMALL),
  });
  t.equal(traces.statusCode, 200, "the token writes");
  const jwt = await api.session("ingest-only", {}, ingest);
  t.equal(
    (await api.withJwt("/v2/create_events", { events: [{ type: "llm" }] }, jwt)).statusCode,
    200,
    "the JWT writes",
  );
  for (const credential of [token, jwt]) {
    const res = await api.inject({
      method: "GET",
      url: "/v2/sessions",
      headers: { authorization: `Bearer ${credential}` },
    });
    t.equal(res.statusCode, 401, "neither is a read credential");
  }
});

t.test("4.6: a missing scope is no failed key check", async (t) => {
  const api = await app(t);
  const read = keyOf(["read"]);
  for (let i = 0; i < 25; i += 1) {
    t.equal((await api.withKey("/v2/create_session", { session: { id: `x${i}` } }, read)).statusCode, 403);
  }
  t.equal((await api.withKey("/v2/create_session", { session: { id: "still" } }, API_KEY)).statusCode, 200, "no 429");
});
