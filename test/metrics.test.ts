/**
 * GET /metrics (docs/decisions/012-metrics.md): after a load run over real HTTP, every counter
 * says exactly what was sent (requests by operation and status, refusals by reason, what was
 * ingested, the group commit's calls and rows); the token of the main port and the 404 without
 * one; the port of its own; the storage thread's figures (STORE=sqlite-thread, scripts/check.sh).
 */
import type { AddressInfo } from "node:net";
import t, { type Test } from "tap";
import { StorageFault } from "../db/errors.ts";
import { openDb } from "../db/sqlite/open.ts";
import { sqliteStore } from "../db/sqlite/store.ts";
import type { Store } from "../db/store.ts";
import { metricsListener } from "../http/metrics.ts";
import { Metrics } from "../services/metrics.ts";
import { checkFetched } from "./conformance.ts";
import {
  API_KEY,
  build,
  isError,
  OTHER_PROJECT_KEY,
  rawExchange,
  storeKind,
  type TestApp,
  UNKNOWN_KEY,
} from "./helper.ts";
import { request, span } from "./otlp.helpers.ts";

const TOKEN = "metrics-token-0123456789abcdef";
const bearer = { authorization: `Bearer ${TOKEN}` };

// ----------------------------------------------------------------------------- reading the text format

type Samples = Map<string, number>;

/** `name{a="1",b="2"}` with the labels in name order: how a sample is looked up. */
function key(name: string, labels: Record<string, string | number> = {}): string {
  const pairs = Object.keys(labels)
    .sort()
    .map((label) => `${label}="${labels[label]}"`);
  return pairs.length === 0 ? name : `${name}{${pairs.join(",")}}`;
}

/** Every sample of a Prometheus text exposition, by key(); a line of any other shape fails the test. */
function parse(t: Test, text: string): Samples {
  const samples: Samples = new Map();
  for (const line of text.split("\n")) {
    if (line === "" || line.startsWith("# HELP ") || line.startsWith("# TYPE ")) continue;
    const match = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!match) {
      t.fail(`not a sample line: ${line}`);
      continue;
    }
    const labels: Record<string, string> = {};
    for (const [, name, value] of (match[2] ?? "").matchAll(/([a-zA-Z_]\w*)="((?:[^"\\]|\\.)*)"/g)) {
      labels[name as string] = value as string;
    }
    const sample = key(match[1] as string, labels);
    if (samples.has(sample)) t.fail(`a sample twice: ${sample}`);
    samples.set(sample, Number(match[3]));
  }
  return samples;
}

/** The sum of every sample of `name` whose labels include `labels`. */
function total(samples: Samples, name: string, labels: Record<string, string> = {}): number {
  let sum = 0;
  for (const [sample, value] of samples) {
    if (sample !== name && !sample.startsWith(`${name}{`)) continue;
    if (Object.entries(labels).every(([label, v]) => sample.includes(`${label}="${v}"`))) sum += value;
  }
  return sum;
}

async function scrape(t: Test, api: TestApp, headers: Record<string, string> = bearer): Promise<Samples> {
  const res = await api.inject({ method: "GET", url: "/metrics", headers });
  t.equal(res.statusCode, 200, `GET /metrics${res.statusCode === 200 ? "" : `: ${res.body.slice(0, 200)}`}`);
  t.equal(res.headers["content-type"], "text/plain; version=0.0.4; charset=utf-8", "Prometheus's text format 0.0.4");
  return parse(t, res.body);
}

// ----------------------------------------------------------------------------- the load run

/** A span id of 16 hex digits. */
const spanId = (n: number) => n.toString(16).padStart(16, "0");

t.test("after a load run over real HTTP, the counters say exactly what was sent", async (t) => {
  const api = await build(t, { metricsToken: TOKEN, bodyLimit: 64 * 1024, otlpBodyLimit: 64 * 1024 });
  await api.app.listen({ port: 0, host: "127.0.0.1" });
  const base = `http://127.0.0.1:${(api.app.server.address() as AddressInfo).port}`;
  const send = async (method: string, path: string, body?: unknown, headers: Record<string, string> = {}) => {
    const res = await fetch(`${base}${path}`, {
      method,
      headers: body === undefined ? headers : { "content-type": "application/json", ...headers },
      ...(body === undefined ? {} : { body: typeof body === "string" ? body : JSON.stringify(body) }),
    });
    // Over real HTTP the conformance layer (decision 030) is this test's to call.
    return { status: res.status, body: JSON.parse(await checkFetched(method, path, res)) as Record<string, unknown> };
  };
  const withKey = (path: string, body: unknown, key = API_KEY) =>
    send("POST", path, body, { "x-agentmon-api-key": key });
  const withJwt = (path: string, body: unknown, jwt: string) =>
    send("POST", path, body, { authorization: `Bearer ${jwt}` });
  const otlp = (body: unknown, key = API_KEY) => send("POST", "/v1/traces", body, { authorization: `Bearer ${key}` });
  const expect = async (what: string, status: number, answer: Promise<{ status: number; body: unknown }>) => {
    const res = await answer;
    t.equal(res.status, status, `${what}: ${JSON.stringify(res.body).slice(0, 300)}`);
    return res.body as Record<string, unknown>;
  };

  // Sessions: four new ones, one through the unversioned path, and a retry of the first (not new).
  const jwts: string[] = [];
  for (let i = 1; i <= 4; i++) {
    jwts.push(
      String((await expect(`session m-${i}`, 200, withKey("/v2/create_session", { session: { id: `m-${i}` } }))).jwt),
    );
  }
  const flat = String((await expect("session m-5", 200, withKey("/create_session", { id: "m-5" }))).jwt);
  await expect("session m-1 again", 200, withKey("/v2/create_session", { session: { id: "m-1" } }));

  // Events: 3 + 6 + 9 + 12 through /v2, 2 through the unversioned path.
  for (const [index, jwt] of jwts.entries()) {
    const events = Array.from({ length: 3 * (index + 1) }, (_, n) => ({ type: "tool", name: `tool-${n}` }));
    await expect(`${events.length} events`, 200, withJwt("/v2/create_events", { events }, jwt));
  }
  await expect(
    "2 events, unversioned",
    200,
    withJwt("/create_events", { events: [{ type: "llm" }, { type: "action" }] }, flat),
  );

  // 401: two unknown keys, two bad JWTs, one bad OTLP credential.
  await expect("unknown key", 401, withKey("/v2/create_session", { session: { id: "x-1" } }, UNKNOWN_KEY));
  await expect("no key", 401, send("POST", "/v2/create_session", { session: { id: "x-2" } }));
  await expect("garbage JWT", 401, withJwt("/v2/create_events", { events: [{ type: "llm" }] }, "a.b.c"));
  await expect("no JWT", 401, send("POST", "/v2/create_events", { events: [{ type: "llm" }] }));
  await expect("OTLP, unknown key", 401, otlp(request(span(spanId(1), undefined, 0)), UNKNOWN_KEY));

  // 413: two create_events bodies and one OTLP body over their 64 KiB limits.
  const big = { events: [{ type: "tool", name: "x".repeat(70 * 1024) }] };
  await expect("a body over the limit", 413, withJwt("/v2/create_events", big, jwts[0] as string));
  await expect("another", 413, withJwt("/v2/create_events", JSON.stringify(big), jwts[1] as string));
  const bigSpan = span(spanId(2), undefined, 0, { name: "y".repeat(70 * 1024) });
  await expect("an OTLP body over the limit", 413, otlp(request(bigSpan)));

  // OTLP: a trace stored whole (2 spans); a partial success (2 stored, 1 refused: a zero span id);
  // a request whose one span is refused (a zero trace id); another project's trace (2 spans)
  // that this project's spans then cannot join (2 refused: T9).
  const traceA = "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa1";
  const traceB = "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb2";
  const traceC = "ccccccccccccccccccccccccccccccc3";
  const of = (trace: string, id: number, parent?: number) =>
    span(spanId(id), parent === undefined ? undefined : spanId(parent), id, { traceId: trace });
  await expect("OTLP, all stored", 200, otlp(request(of(traceA, 1), of(traceA, 2, 1))));
  const partial = await expect("OTLP, partial", 200, otlp(request(of(traceB, 1), of(traceB, 2, 1), of(traceB, 0))));
  t.match(partial, { partialSuccess: { rejectedSpans: "1" } }, "one span refused");
  const none = await expect("OTLP, nothing stored", 200, otlp(request(of("0".repeat(32), 5))));
  t.match(none, { partialSuccess: { rejectedSpans: "1" } }, "its one span refused");
  await expect("OTLP, another project's trace", 200, otlp(request(of(traceC, 1), of(traceC, 2, 1)), OTHER_PROJECT_KEY));
  const foreign = await expect("OTLP, into that trace", 200, otlp(request(of(traceC, 3, 1), of(traceC, 4, 1))));
  t.match(foreign, { partialSuccess: { rejectedSpans: "2" } }, "both spans refused");

  await expect("an unknown route", 404, send("GET", "/no/such/route"));
  await expect("liveness", 200, send("GET", "/healthz"));

  const res = await fetch(`${base}/metrics`, { headers: bearer });
  t.equal(res.status, 200, "GET /metrics over HTTP");
  const samples = parse(t, await res.text());
  const requests = (operation: string, status: number) =>
    samples.get(key("agentmon_http_requests_total", { operation, status }));
  const sent: [string, number, number][] = [
    ["createSession", 200, 5],
    ["createSessionUnversioned", 200, 1],
    ["createSession", 401, 2],
    ["createEvents", 200, 4],
    ["createEventsUnversioned", 200, 1],
    ["createEvents", 401, 2],
    ["createEvents", 413, 2],
    ["exportTraces", 200, 5],
    ["exportTraces", 401, 1],
    ["exportTraces", 413, 1],
    ["none", 404, 1],
    ["getHealth", 200, 1],
  ];
  for (const [operation, status, count] of sent) {
    t.equal(requests(operation, status), count, `${operation} ${status}: ${count}`);
    t.equal(
      samples.get(key("agentmon_http_request_duration_seconds_count", { operation, status })),
      count,
      `${operation} ${status}: ${count} durations`,
    );
    t.equal(
      samples.get(key("agentmon_http_request_duration_seconds_bucket", { le: "+Inf", operation, status })),
      count,
      `${operation} ${status}: every duration in the +Inf bucket`,
    );
  }
  const allSent = sent.reduce((sum, [, , count]) => sum + count, 0);
  t.equal(total(samples, "agentmon_http_requests_total"), allSent, `${allSent} requests in all, no other`);

  const rejected = (reason: string) => samples.get(key("agentmon_requests_rejected_total", { reason }));
  t.equal(rejected("unauthorized"), 5, "5 refused as unauthorized");
  t.equal(rejected("payload_too_large"), 3, "3 refused as too large");
  for (const reason of ["too_many_requests", "unavailable", "storage_behind", "storage_full", "storage_busy"]) {
    t.equal(rejected(reason), 0, `none refused as ${reason} (the series exists at 0)`);
  }

  const ingested = (kind: string) => samples.get(key("agentmon_ingested_total", { kind }));
  t.equal(ingested("sessions"), 5 + 3, "5 sessions created (a retry is not a new one), and 3 by traces A, B and C");
  t.equal(ingested("events"), 32, "32 events");
  t.equal(ingested("spans"), 6, "6 spans stored (2 + 2 + the other project's 2)");
  t.equal(ingested("log_records"), 0, "no log records");
  t.equal(samples.get(key("agentmon_rejected_total", { kind: "spans" })), 4, "4 spans refused in partial successes");
  t.equal(samples.get(key("agentmon_rejected_total", { kind: "log_records" })), 0);

  // The group commit, from wherever it runs (this thread, or the storage thread's own figures):
  // 6 create_session writes, 5 create_events, 4 OTLP requests with something to store.
  t.equal(samples.get("agentmon_storage_up"), 1, "the store answered");
  t.equal(samples.get("agentmon_storage_group_calls_sum"), 15, "15 write calls committed");
  t.equal(samples.get("agentmon_storage_group_rows_sum"), 6 + 32 + 8, "their rows: 6 sessions, 32 events, 8 spans");
  const groups = samples.get("agentmon_storage_group_calls_count");
  t.ok(groups !== undefined && groups >= 1 && groups <= 15, `${groups} groups`);
  t.equal(samples.get(key("agentmon_storage_groups_total", { outcome: "committed" })), groups, "every group committed");
  t.equal(samples.get(key("agentmon_storage_groups_total", { outcome: "failed" })), 0, "none failed");
  t.equal(samples.get("agentmon_storage_group_rows_count"), groups);
  t.equal(samples.get("agentmon_storage_commit_duration_seconds_count"), groups, "a commit time per group");
  t.equal(samples.get(key("agentmon_storage_group_calls_bucket", { le: "+Inf" })), groups);
  t.equal(samples.get("agentmon_storage_queued_calls"), 0, "nothing waits now");
  t.equal(samples.get("agentmon_storage_queued_rows"), 0);
  t.ok((samples.get(key("agentmon_database_bytes", { file: "main" })) ?? 0) > 0, "the database has bytes");
  t.ok(samples.has(key("agentmon_database_bytes", { file: "wal" })), "and a WAL figure");
  if (storeKind() === "sqlite-thread") {
    t.equal(samples.get("agentmon_storage_thread_backlog_limit_rows"), 20_000, "the thread's bound (O2)");
    t.equal(samples.get("agentmon_storage_thread_backlog_rows"), 0, "nothing in flight");
    t.equal(samples.get("agentmon_storage_thread_pending_calls"), 0);
  } else {
    t.notOk(samples.has("agentmon_storage_thread_backlog_rows"), "no storage thread, no thread figures");
  }

  for (const name of [
    "process_cpu_user_seconds_total",
    "process_resident_memory_bytes",
    "nodejs_eventloop_lag_seconds",
  ]) {
    t.ok(samples.has(name), `the process's ${name}`);
  }
  t.ok((samples.get("nodejs_heap_size_used_bytes") ?? 0) > 0, "heap in use");

  const again = await scrape(t, api);
  t.equal(
    again.get(key("agentmon_http_requests_total", { operation: "getMetrics", status: 200 })),
    1,
    "a scrape counts itself next time",
  );
  t.equal(again.get(key("agentmon_ingested_total", { kind: "events" })), 32, "and counts nothing else");
});

t.test("a retried create_events counts its events once: only the events really stored (E3, G8)", async (t) => {
  const api = await build(t, { metricsToken: TOKEN });
  const jwt = await api.session("retried");
  const events = (ids: string[]) => ({ events: ids.map((id) => ({ type: "tool", id, name: id })) });
  const ingested = async () => (await scrape(t, api)).get(key("agentmon_ingested_total", { kind: "events" }));

  const first = await api.withJwt("/v2/create_events", events(["r-1", "r-2", "r-3"]), jwt);
  t.equal(first.statusCode, 200);
  t.equal(await ingested(), 3, "3 events stored");
  const retry = await api.withJwt("/v2/create_events", events(["r-1", "r-2", "r-3"]), jwt);
  t.equal(retry.statusCode, 200, "the retry succeeds (G8)");
  t.same(retry.json(), first.json(), "with the same answer");
  t.equal(await ingested(), 3, "and counts nothing: its events were there already");
  const more = await api.withJwt("/v2/create_events", events(["r-3", "r-4", "r-4"]), jwt);
  t.equal(more.statusCode, 200);
  t.equal(await ingested(), 4, "a retry with one new id (sent twice): 1 more");
  const unversioned = await api.withJwt("/create_events", events(["r-1", "r-5"]), jwt);
  t.equal(unversioned.statusCode, 200);
  t.equal(await ingested(), 5, "the unversioned path the same");
});

// ----------------------------------------------------------------------------- protection

t.test("without AGENTMON_METRICS_TOKEN the main port answers 404, whatever the credential", async (t) => {
  const api = await build(t);
  for (const headers of [{}, bearer, { authorization: `Bearer ${API_KEY}` }, { "x-agentmon-api-key": API_KEY }]) {
    const res = await api.inject({ method: "GET", url: "/metrics", headers });
    const body = isError(t, res, 404, "Not found");
    t.match(body.message, /AGENTMON_METRICS_TOKEN/, "the message says how to turn metrics on");
    t.notOk(res.body.includes("agentmon_"), "no metric leaks");
  }
});

t.test("with a token: no or another credential is a 401 with a G2 body; the token is a 200", async (t) => {
  const api = await build(t, { metricsToken: TOKEN });
  const refused: [string, Record<string, string>][] = [
    ["no Authorization", {}],
    ["an empty bearer", { authorization: "Bearer " }],
    ["another token of the same length", { authorization: `Bearer ${TOKEN.slice(0, -1)}x` }],
    ["the token cut short", { authorization: `Bearer ${TOKEN.slice(0, -1)}` }],
    ["the token and more", { authorization: `Bearer ${TOKEN}x` }],
    ["the token as Basic credentials", { authorization: `Basic ${Buffer.from(`x:${TOKEN}`).toString("base64")}` }],
    ["the token without a scheme", { authorization: TOKEN }],
    ["the token in the API-key header", { "x-agentmon-api-key": TOKEN }],
    ["a live API key as the bearer", { authorization: `Bearer ${API_KEY}` }],
    ["two tokens", { authorization: `Bearer ${TOKEN} ${TOKEN}` }],
  ];
  for (const [what, headers] of refused) {
    const res = await api.inject({ method: "GET", url: "/metrics", headers });
    isError(t, res, 401, "Invalid metrics token");
    t.equal(res.headers["www-authenticate"], 'Bearer realm="agentmon metrics"', `${what}: WWW-Authenticate`);
    t.notOk(res.body.includes("agentmon_"), `${what}: no metric leaks`);
  }
  const lower = await api.inject({ method: "GET", url: "/metrics", headers: { authorization: `bearer  ${TOKEN}` } });
  t.equal(lower.statusCode, 200, "the scheme is case-insensitive (RFC 9110)");
  const headRefused = await api.inject({ method: "HEAD", url: "/metrics" });
  t.equal(headRefused.statusCode, 401, "HEAD without the token: 401 too");
  const head = await api.inject({ method: "HEAD", url: "/metrics", headers: bearer });
  t.equal(head.statusCode, 200, "HEAD with the token");
  t.equal(head.body, "", "HEAD has no body");
  const post = await api.inject({ method: "POST", url: "/metrics", headers: bearer, payload: "{}" });
  isError(t, post, 405, "Method not allowed");
  t.match(post.headers.allow, /GET/, "Allow names GET");

  const samples = await scrape(t, api);
  t.equal(
    samples.get(key("agentmon_requests_rejected_total", { reason: "unauthorized" })),
    refused.length + 1,
    "each refused scrape (and the HEAD) is counted as unauthorized",
  );
  t.equal(
    samples.get(key("agentmon_http_requests_total", { operation: "getMetrics", status: 401 })),
    refused.length + 1,
  );
});

t.test(
  "AGENTMON_METRICS_PORT: a listener of its own serves /metrics without a credential, and only that",
  async (t) => {
    const store = sqliteStore(openDb(":memory:"));
    const metrics = new Metrics(() => store.stats());
    const api = await build(t, { store, metrics });
    await api.session("on-the-main-port");
    const listener = await metricsListener(metrics, "127.0.0.1", 0);
    t.teardown(() => listener.close());
    t.match(listener.url, /^http:\/\/127\.0\.0\.1:\d+\/metrics$/);
    const port = new URL(listener.url).port;

    const res = await fetch(listener.url);
    t.equal(res.status, 200, "no credential needed");
    t.equal(res.headers.get("content-type"), "text/plain; version=0.0.4; charset=utf-8");
    const samples = parse(t, await res.text());
    t.equal(samples.get(key("agentmon_ingested_total", { kind: "sessions" })), 1, "the app's own figures");
    t.equal(samples.get(key("agentmon_http_requests_total", { operation: "createSession", status: 200 })), 1);

    const query = await fetch(`${listener.url}?name=x`);
    t.equal(query.status, 200, "a query string changes nothing");
    await query.text();
    const head = await fetch(listener.url, { method: "HEAD" });
    t.equal(head.status, 200, "HEAD");
    t.equal(await head.text(), "", "HEAD has no body");

    for (const path of ["/", "/metricsx", "/metrics/", "/v2/create_session", "/healthz"]) {
      const other = await fetch(`http://127.0.0.1:${port}${path}`);
      t.equal(other.status, 404, `${path}: 404`);
      t.same(await other.json(), { error: "Not found", message: "This port serves only GET /metrics" }, `${path}: G2`);
    }
    for (const method of ["POST", "PUT", "DELETE"]) {
      const other = await fetch(listener.url, { method, body: "{}" });
      t.equal(other.status, 405, `${method}: 405`);
      t.equal(other.headers.get("allow"), "GET, HEAD");
      t.match(await other.json(), { error: "Method not allowed" });
    }

    // Raw HTTP/1.1 without Host, and a request that is not HTTP: G2 bodies, not Node's bare 400.
    for (const [request, says] of [
      ["GET /metrics HTTP/1.1\r\n\r\n", /Host header/],
      ["NOT HTTP\r\n\r\n", /not valid HTTP/],
    ] as const) {
      const raw = await rawExchange(Number(port), request);
      t.match(raw, /^HTTP\/1\.1 400 /, `${JSON.stringify(request)}: 400`);
      const body = JSON.parse(raw.slice(raw.indexOf("\r\n\r\n") + 4));
      t.same(Object.keys(body).sort(), ["error", "message"], "a G2 body");
      t.match(body.message, says);
    }

    const taken = await metricsListener(metrics, "127.0.0.1", Number(port)).then(
      () => undefined,
      (error: NodeJS.ErrnoException) => error,
    );
    t.equal(taken?.code, "EADDRINUSE", "a port in use is refused, not shared");
  },
);

// ----------------------------------------------------------------------------- reasons, and a store that cannot answer

/** The in-thread store with some methods replaced. */
function failing(overrides: Partial<Store>): Store {
  const store = sqliteStore(openDb(":memory:"));
  return Object.assign(Object.create(null), store, overrides) as Store;
}

t.test("refusals by reason: 429 after failed keys, 503 by storage fault", async (t) => {
  const store = failing({
    insertEvents: async () => {
      throw new StorageFault("full", "the disk is full");
    },
    updateSession: async () => {
      throw new StorageFault("behind", "writes arrive faster than the disk takes them");
    },
  });
  const api = await build(t, { store, metricsToken: TOKEN, authFailLimit: 2 });
  for (const status of [401, 401, 429, 429]) {
    const res = await api.withKey("/v2/create_session", { session: { id: "x" } }, UNKNOWN_KEY);
    t.equal(res.statusCode, status, `a bad key: ${status}`);
  }
  const opened = await api.post(
    "/v2/create_session",
    { session: { id: "s" } },
    { "x-agentmon-api-key": API_KEY },
    "10.9.9.9",
  );
  t.equal(opened.statusCode, 200, "another address may still open a session");
  const jwt = (opened.json() as { jwt: string }).jwt;
  t.equal((await api.withJwt("/v2/create_events", { events: [{ type: "llm" }] }, jwt)).statusCode, 503);
  t.equal((await api.withJwt("/v2/create_events", { events: [{ type: "llm" }] }, jwt)).statusCode, 503);
  t.equal((await api.withJwt("/v2/update_session", { session: { end_state: "Success" } }, jwt)).statusCode, 503);

  const samples = await scrape(t, api);
  const rejected = (reason: string) => samples.get(key("agentmon_requests_rejected_total", { reason }));
  t.equal(rejected("unauthorized"), 2);
  t.equal(rejected("too_many_requests"), 2);
  t.equal(rejected("storage_full"), 2, "the disk-full 503s");
  t.equal(rejected("storage_behind"), 1, "the backlog 503");
  t.equal(rejected("unavailable"), 0, "no other 503");
  t.equal(samples.get(key("agentmon_ingested_total", { kind: "events" })), 0, "nothing counted as ingested");
});

t.test(
  "a store that cannot give its figures: agentmon_storage_up 0, and every other metric still served",
  async (t) => {
    const api = await build(t, {
      store: failing({
        stats: async () => {
          throw new StorageFault("unavailable", "the storage thread stopped");
        },
      }),
      metricsToken: TOKEN,
    });
    await api.session("still-counted");
    const samples = await scrape(t, api);
    t.equal(samples.get("agentmon_storage_up"), 0, "storage did not answer");
    t.notOk(samples.has("agentmon_storage_queued_calls"), "no stale storage figure");
    t.notOk(samples.has("agentmon_storage_group_calls_count"));
    t.equal(samples.get(key("agentmon_ingested_total", { kind: "sessions" })), 1, "the rest is served");
    t.ok(samples.has("process_cpu_user_seconds_total"));
  },
);

t.test("each app counts its own requests; the process's figures appear once", async (t) => {
  const one = await build(t, { metricsToken: TOKEN });
  const two = await build(t, { metricsToken: TOKEN });
  await one.session("only-on-one");
  const res = await two.inject({ method: "GET", url: "/metrics", headers: bearer });
  const samples = parse(t, res.body);
  t.equal(samples.get(key("agentmon_ingested_total", { kind: "sessions" })), 0, "the other app saw nothing");
  t.notOk(samples.has(key("agentmon_http_requests_total", { operation: "createSession", status: 200 })));
  t.equal(res.body.match(/^# TYPE process_cpu_user_seconds_total /gm)?.length, 1, "process metrics once");
  t.equal(res.body.match(/^# TYPE agentmon_http_requests_total /gm)?.length, 1, "app metrics once");
});

/** Holds the event loop for `ms` (a busy wait), as a slow synchronous task would. */
function blockFor(ms: number) {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    // busy
  }
}

t.test(
  "O2: while the event loop lags, GET /metrics still answers, and the 503s are counted as unavailable",
  async (t) => {
    const api = await build(t, { metricsToken: TOKEN, maxEventLoopDelayMs: 100 });
    const lag = () => api.app.memoryUsage().eventLoopDelay;
    while (!(lag() > 100 && Number.isFinite(lag()))) {
      blockFor(600);
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
    const refused = await api.withKey("/v2/create_session", { session: { id: "under-pressure" } });
    t.equal(refused.statusCode, 503, "new work is refused");
    t.ok(lag() > 100, "still lagging as it is scraped");
    const samples = await scrape(t, api);
    t.equal(
      samples.get(key("agentmon_requests_rejected_total", { reason: "unavailable" })),
      1,
      "counted as unavailable",
    );
    t.equal(samples.get(key("agentmon_http_requests_total", { operation: "createSession", status: 503 })), 1);
    t.equal(samples.get(key("agentmon_ingested_total", { kind: "sessions" })), 0, "nothing ingested");
  },
);
