/**
 * The `agentmon serve` command as a real process on a real port: it answers, logs, stops on
 * SIGTERM, keeps its data, and refuses bad settings with one line.
 */
import { spawn } from "node:child_process";
import { randomUUID } from "node:crypto";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import t from "tap";
import { openDb } from "../db/sqlite/open.ts";
import { sqliteStore } from "../db/sqlite/store.ts";
import { checkFetched } from "./conformance.ts";
import { API_KEY, build, eventIds, inspect, tempDir } from "./helper.ts";
import { encodeTraces } from "./otlp.encode.ts";
import { grpcClient } from "./otlp.grpc.helpers.ts";
import { SMALL, TRACE_SESSION } from "./otlp.helpers.ts";
import { agentmon, childEnv, LISTENING, WAIT_MS } from "./process.ts";
import { allCells, keysIn, run, seedKeys, UUID } from "./server.helpers.ts";

async function postJson(url: string, body: unknown, headers: Record<string, string>) {
  const res = await fetch(url, {
    method: "POST",
    headers: { "content-type": "application/json", ...headers },
    body: JSON.stringify(body),
    signal: AbortSignal.timeout(WAIT_MS),
  });
  // The conformance layer (decision 030) on the real process's answers too.
  return { status: res.status, body: JSON.parse(await checkFetched("POST", url, res)) as Record<string, unknown> };
}

/** The JSON lines of a process's stdout. */
function jsonLines(stdout: string): Record<string, unknown>[] {
  return stdout
    .split("\n")
    .filter((line) => line.startsWith("{"))
    .map((line) => JSON.parse(line) as Record<string, unknown>);
}

t.test("serve: a real process answers, logs each request once, stops on SIGTERM and keeps its data", async (t) => {
  const dir = tempDir(t);
  const db = join(dir, "a.db");
  const key = randomUUID();
  const env = childEnv({ AGENTMON_API_KEY: key, AGENTMON_LOG_LEVEL: "info" });
  const server = agentmon(t, ["serve", "--port", "0", "--db", db], env);
  const base = (await server.waitFor(LISTENING))[1] ?? "";
  t.match(base, /^http:\/\/127\.0\.0\.1:\d+$/, "listens on 127.0.0.1 on a port of its own");
  t.notMatch(base, /:0$/, "a real port");

  const created = await postJson(
    `${base}/v2/create_session`,
    { session: { id: "real-1" } },
    {
      "x-agentmon-api-key": key,
    },
  );
  t.equal(created.status, 200, `create_session: ${JSON.stringify(created.body)}`);
  const jwt = String(created.body.jwt);
  t.equal(created.body.session_id, "real-1");
  const sessionUrl = String(created.body.session_url);
  t.ok(sessionUrl.startsWith(`${base}/`), `S2: session_url ${sessionUrl} is an address on this server (${base})`);

  const refused = await postJson(
    `${base}/v2/create_session`,
    { session: { id: "real-2" } },
    {
      "x-agentmon-api-key": randomUUID(),
    },
  );
  t.equal(refused.status, 401, "an unknown key is refused by the real server");

  const events = await postJson(
    `${base}/v2/create_events`,
    { events: [{ type: "llm", id: "ev-1" }] },
    {
      authorization: `Bearer ${jwt}`,
    },
  );
  t.equal(events.status, 200, `create_events: ${JSON.stringify(events.body)}`);
  t.same(events.body.event_ids, ["ev-1"]);

  // L4 from the bundle the command runs (decision 013: the plugin's files and yaml, found there).
  for (const path of ["/docs", "/docs/static/swagger-ui-bundle.js", "/docs/json", "/docs/yaml"]) {
    const res = await fetch(`${base}${path}`, { signal: AbortSignal.timeout(WAIT_MS) });
    await res.arrayBuffer();
    t.equal(res.status, 200, `GET ${path}`);
  }

  await server.waitFor(/"\/v2\/create_events"/);
  server.child.kill("SIGTERM");
  const { code, signal } = await server.exited();
  t.equal(code, 0, "exit code 0 after SIGTERM");
  t.equal(signal, null, "exited by itself, not killed");

  // Two create_session calls (one refused) and one create_events call: one JSON line each.
  const logs = jsonLines(server.stdout());
  for (const [url, requests] of [
    ["/v2/create_session", 2],
    ["/v2/create_events", 1],
  ] as const) {
    const lines = logs.filter((line) => JSON.stringify(line).includes(`"${url}"`));
    t.equal(lines.length, requests, `${url}: one JSON log line per request`);
  }
  const output = server.stdout() + server.stderr();
  t.notOk(output.includes(key), "the API key is never logged");
  t.notOk(output.includes(jwt), "the JWT is never logged");

  const store = sqliteStore(openDb(db));
  const session = await inspect(store).getSession("real-1");
  t.equal(session?.id, "real-1", "the session is in the database");
  t.same(await eventIds(store, "real-1"), ["ev-1"], "and its event");
  await store.close();

  // 4.4: the secret was generated at first start and kept in the database; a restart keeps JWTs valid.
  const again = agentmon(t, ["serve", "--port", "0", "--db", db], env);
  const base2 = (await again.waitFor(LISTENING))[1] ?? "";
  const later = await postJson(
    `${base2}/v2/create_events`,
    { events: [{ type: "tool", id: "ev-2" }] },
    {
      authorization: `Bearer ${jwt}`,
    },
  );
  t.equal(later.status, 200, `the JWT still works after a restart: ${JSON.stringify(later.body)}`);
  again.child.kill("SIGTERM");
  t.equal((await again.exited()).code, 0, "second run exits 0");
  t.notOk(again.stdout().includes(key), "the configured key is not printed");
});

t.test("serve: an empty database and no AGENTMON_API_KEY prints a new key and a curl line", async (t) => {
  const db = join(tempDir(t), "first.db");
  const server = agentmon(t, ["serve", "--port", "0", "--db", db], childEnv({ AGENTMON_LOG_LEVEL: "warn" }));
  const base = (await server.waitFor(LISTENING))[1] ?? "";
  const lines = server.stdout().split("\n");
  const key = lines.map((line) => line.trim()).find((line) => UUID.test(line));
  t.ok(key, "a line is the created key");
  const curl = lines.find((line) => line.includes("curl"));
  t.ok(curl, "a curl how-to line");
  t.ok(curl?.includes(`${key}`), "the curl line carries the key");
  const url = /curl\s.*?(https?:\/\/[^\s'"]+)/.exec(curl ?? "")?.[1];
  t.equal(url, `${base}/v2/create_session`, "the curl line calls this server's create_session");
  const body = /-d\s+'([^']*)'/.exec(curl ?? "")?.[1] ?? "";
  const tried = await postJson(`${base}/v2/create_session`, JSON.parse(body), { "x-agentmon-api-key": key ?? "" });
  t.equal(tried.status, 200, `the curl line's request works: ${JSON.stringify(tried.body)}`);
  t.equal((await keysIn(db)).length, 1, "one key created");
  t.ok(
    allCells(db).every((cell) => !cell.includes(key ?? "")),
    "stored only as a hash",
  );
  server.child.kill("SIGTERM");
  t.equal((await server.exited()).code, 0, "exit 0");
});

t.test("serve: a bad PORT exits 1 with one line on stderr and no stack trace", async (t) => {
  const dir = tempDir(t);
  const server = agentmon(t, ["serve", "--db", join(dir, "bad.db")], childEnv({ PORT: "not-a-port" }));
  const { code } = await server.exited();
  t.equal(code, 1, "exit 1");
  const stderr = server.stderr().trim();
  t.equal(stderr.split("\n").length, 1, `one line: ${stderr}`);
  t.match(stderr, /PORT/, "names PORT");
  t.notMatch(stderr, /^\s+at |Error:|node:internal/m, "no stack trace");
  t.notMatch(server.stdout(), /listening/, "does not listen");
});

t.test("serve: on a wildcard host, session_url names localhost, not the wildcard", async (t) => {
  const key = "44444444-4444-4444-8444-444444444444";
  const env = childEnv({ AGENTMON_API_KEY: key, AGENTMON_LOG_LEVEL: "warn", AGENTMON_DB: ":memory:" });
  const server = agentmon(t, ["serve", "--port", "0", "--host", "::"], env);
  const address = (await server.waitFor(LISTENING))[1] ?? "";
  t.match(address, /^http:\/\/\[::\]:\d+$/, "it listens on every address");
  const port = new URL(address).port;
  const created = await postJson(
    `http://127.0.0.1:${port}/v2/create_session`,
    { session: { id: "wild" } },
    { "x-agentmon-api-key": key },
  );
  t.equal(created.status, 200);
  t.equal(created.body.session_url, `http://localhost:${port}/sessions/wild`);
  server.child.kill("SIGTERM");
  t.equal((await server.exited()).code, 0, "exit 0");
});

t.test(
  "serve: a configured AGENTMON_API_KEY that was revoked or belongs to another project stops the start",
  async (t) => {
    const dir = tempDir(t);
    const revoked = join(dir, "revoked.db");
    await seedKeys(revoked, "default", [API_KEY]);
    t.equal((await run(["keys", "revoke", API_KEY], revoked)).code, 0);
    const first = await run(["serve", "--port", "0", "--api-key", API_KEY], revoked);
    t.equal(first.code, 1, "exit 1");
    t.same(first.err, ["agentmon: AGENTMON_API_KEY names a key that was revoked"]);
    t.notOk(
      first.out.some((line) => line.includes("listening")),
      "does not listen",
    );

    const foreign = join(dir, "foreign.db");
    await seedKeys(foreign, "team-a", [API_KEY]);
    const second = await run(["serve", "--port", "0", "--api-key", API_KEY], foreign);
    t.equal(second.code, 1);
    t.same(second.err, ['agentmon: AGENTMON_API_KEY belongs to project "team-a", not "default"']);
    t.same((await keysIn(foreign)).length, 1, "the database was closed and is unchanged");
  },
);

t.test("serve: a database that cannot be opened stops the start with one line", async (t) => {
  const file = join(tempDir(t), "not-a-folder");
  await seedKeys(file, "default", []); // a file where a folder is needed
  const res = await run(["serve", "--port", "0"], join(file, "agentmon.db"));
  t.equal(res.code, 1);
  t.equal(res.err.length, 1);
  t.match(res.err[0], /^agentmon: cannot open the database .*not-a-folder\/agentmon\.db: /);
});

t.test("serve: a port in use exits 1 with one line, and the first key created is still shown", async (t) => {
  const { app } = await build(t);
  await app.listen({ port: 0, host: "127.0.0.1" });
  const { port } = app.server.address() as { port: number };
  const db = join(tempDir(t), "busy.db");
  const res = await run(["serve", "--port", String(port), "--host", "127.0.0.1"], db);
  t.equal(res.code, 1);
  t.match(res.err.join("\n"), /^agentmon: listen EADDRINUSE.*; choose another PORT$/);
  const shown = res.out.map((line) => line.trim()).find((line) => /^[0-9a-f-]{36}$/.test(line));
  const [stored] = await keysIn(db);
  t.equal(stored?.prefix, shown?.slice(0, 8), "the key that was created is the one printed");
});

t.test("serve: a short AGENTMON_JWT_SECRET is used, with a warning", async (t) => {
  const { app } = await build(t);
  await app.listen({ port: 0, host: "127.0.0.1" });
  const { port } = app.server.address() as { port: number };
  const res = await run(
    ["serve", "--port", String(port), "--host", "127.0.0.1", "--jwt-secret", "short"],
    join(tempDir(t), "w.db"),
  );
  t.ok(
    res.err.includes(
      "agentmon: warning: AGENTMON_JWT_SECRET is shorter than 32 characters; use a longer random secret",
    ),
  );
  t.equal(res.code, 1, "(the port is taken here, so it stops after warning)");
});

t.test("npm start and the agentmon bin's first line give node no V8 flag (decision 039)", async (t) => {
  const root = new URL("../", import.meta.url);
  const start: string = JSON.parse(readFileSync(new URL("package.json", root), "utf8")).scripts.start;
  const bin = readFileSync(new URL("bin/agentmon.js", root), "utf8");
  const docker = readFileSync(new URL("Dockerfile", root), "utf8");
  t.equal(start, "node bin/agentmon.js serve");
  t.equal(bin.split("\n")[0], "#!/usr/bin/env node");
  t.notMatch(bin, /setFlagsFromString\(/, "no V8 flag is set before the start");
  t.match(docker, /^CMD \["node", "bin\/agentmon\.js", "serve"\]$/m);

  // The bin runs directly, through its first line, as npx runs it.
  const res = await new Promise<{ code: number | null; out: string }>((resolve) => {
    const child = spawn(new URL("bin/agentmon.js", root).pathname, ["help"], { stdio: ["ignore", "pipe", "pipe"] });
    let out = "";
    child.stdout.on("data", (chunk) => {
      out += chunk;
    });
    child.stderr.on("data", (chunk) => {
      out += chunk;
    });
    child.on("exit", (code) => resolve({ code, out }));
  });
  t.match(res.out, /agentmon serve/, "it starts and answers with its usage");
});

t.test("serve: AGENTMON_OTLP_GRPC_PORT opens OTLP/gRPC beside HTTP; SIGTERM drains it and exits 0", async (t) => {
  const dir = tempDir(t);
  const db = join(dir, "grpc.db");
  const key = randomUUID();
  const plain = agentmon(
    t,
    ["serve", "--port", "0", "--db", join(dir, "plain.db")],
    childEnv({ AGENTMON_API_KEY: key }),
  );
  await plain.waitFor(LISTENING);
  t.notMatch(plain.stdout(), /OTLP\/gRPC/, "off by default: no gRPC port");
  plain.child.kill("SIGTERM");
  t.equal((await plain.exited()).code, 0);

  // O2 off, as build() has it: this machine's noisy cores must not turn the answer into an overload refusal.
  const env = childEnv({ AGENTMON_API_KEY: key, AGENTMON_OTLP_GRPC_PORT: "0", AGENTMON_MAX_EVENT_LOOP_DELAY: "0" });
  const server = agentmon(t, ["serve", "--port", "0", "--db", db], env);
  const address = (await server.waitFor(/agentmon: OTLP\/gRPC on http:\/\/(127\.0\.0\.1:\d+)/))[1] ?? "";
  await server.waitFor(LISTENING);
  const client = grpcClient(t, address);
  const outcome = await client.call("traces", encodeTraces(SMALL), { authorization: `Bearer ${key}` });
  t.equal(outcome.code, 0, `the spans are accepted over gRPC: ${outcome.details}`);
  client.close();
  server.child.kill("SIGTERM");
  t.equal((await server.exited()).code, 0, "exit code 0 after SIGTERM");
  const store = sqliteStore(openDb(db));
  t.equal(
    (await inspect(store).getSession(TRACE_SESSION))?.id,
    TRACE_SESSION,
    "the trace is a session in the database",
  );
  await store.close();
});

t.test("serve: the bundle's cached routes refuse bad requests as the parsed openapi.yaml does", async (t) => {
  // The bundle reads its routes from dist/openapi.json, without the schemas' descriptions and
  // examples (bin/build.js forRuntime); the sources parse openapi.yaml. Same answers expected.
  const server = agentmon(
    t,
    ["serve", "--port", "0", "--db", join(tempDir(t), "a.db")],
    childEnv({ AGENTMON_API_KEY: API_KEY }),
  );
  const base = (await server.waitFor(LISTENING))[1] ?? "";
  const app = await build(t);
  const bundleJwt = String(
    (await postJson(`${base}/v2/create_session`, { session: { id: "s" } }, { "x-agentmon-api-key": API_KEY })).body.jwt,
  );
  const sourceJwt = await app.session("s");
  const requests: { method: "GET" | "POST"; url: string; body?: unknown; jwt?: boolean }[] = [
    { method: "POST", url: "/v2/create_session", body: { session: { id: 5, tags: "one" } } },
    { method: "POST", url: "/v2/create_session", body: { session: { id: "x", end_state: "Maybe", nope: 1 } } },
    {
      method: "POST",
      url: "/v2/create_events",
      body: { events: [{ type: "llm", init_timestamp: "soon" }] },
      jwt: true,
    },
    { method: "POST", url: "/v2/create_events", body: { events: "all of them" }, jwt: true },
    { method: "POST", url: "/v2/update_session", body: { session: { end_state: 3 } }, jwt: true },
    { method: "GET", url: "/v2/sessions?limit=lots&sort=sideways" },
    { method: "GET", url: "/v2/analytics/timeseries?bucket=fortnight&min_cost=cheap" },
    { method: "POST", url: "/v2/scores", body: { scores: [{ name: "", value: "high" }] } },
  ];
  for (const { method, url, body, jwt } of requests) {
    const headers: Record<string, string> = jwt ? {} : { "x-agentmon-api-key": API_KEY };
    if (body !== undefined) headers["content-type"] = "application/json";
    const payload = body === undefined ? undefined : JSON.stringify(body);
    const real = await fetch(`${base}${url}`, {
      method,
      headers: jwt ? { ...headers, authorization: `Bearer ${bundleJwt}` } : headers,
      ...(payload === undefined ? {} : { body: payload }),
      signal: AbortSignal.timeout(WAIT_MS),
    });
    const source = await app.inject({
      method,
      url,
      headers: jwt ? { ...headers, authorization: `Bearer ${sourceJwt}` } : headers,
      ...(payload === undefined ? {} : { payload }),
    });
    t.equal(real.status, source.statusCode, `${method} ${url}`);
    t.ok(real.status >= 400, `${method} ${url} is refused (${real.status})`);
    t.same(await real.json(), source.json(), `${method} ${url}: the same error body`);
  }
});
