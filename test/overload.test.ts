/**
 * Overload and slow clients (openapi.yaml O1-O3) and the health probes: request, header and
 * keep-alive timeouts over a real socket, 503 under event-loop saturation, the per-key rate limit,
 * GET /healthz and GET /readyz.
 */
import { randomUUID } from "node:crypto";
import { connect, type Socket } from "node:net";
import { join } from "node:path";
import t, { type Test } from "tap";
import { loadConfig } from "../cli/config.ts";
import { openDb } from "../db/sqlite/open.ts";
import { sqliteStore } from "../db/sqlite/store.ts";
import { checkFetched } from "./conformance.ts";
import { API_KEY, build, inspect, OTHER_PROJECT_KEY, tempDir, UNKNOWN_KEY } from "./helper.ts";
import { agentmon, childEnv, LISTENING } from "./process.ts";

/** A raw TCP client: everything the server writes, and whether it closed the connection. */
function rawClient(port: number) {
  const socket: Socket = connect(port, "127.0.0.1");
  let received = "";
  socket.setEncoding("utf8");
  socket.on("data", (chunk: string) => {
    received += chunk;
  });
  const closed = new Promise<void>((resolve) => socket.on("close", () => resolve()));
  socket.on("error", () => {});
  return { socket, closed, received: () => received };
}

async function listening(t: Test, options: Parameters<typeof build>[1]) {
  const { app } = await build(t, options);
  await app.listen({ port: 0, host: "127.0.0.1" });
  const address = app.server.address();
  if (address === null || typeof address === "string") throw new Error("not listening on a port");
  return address.port;
}

/** The JSON body of a raw HTTP response. */
const bodyOf = (raw: string) => JSON.parse(raw.slice(raw.indexOf("\r\n\r\n") + 4));

t.test("O1: headers that never finish get 408 with a JSON body, and the connection is closed", async (t) => {
  const port = await listening(t, { requestTimeoutMs: 300 });
  const client = rawClient(port);
  client.socket.write("POST /v2/create_session HTTP/1.1\r\nHost: agentmon\r\nX-Slow: ");
  await client.closed;
  t.match(client.received(), /^HTTP\/1\.1 408 Request Timeout\r\n/, "status line 408");
  t.match(client.received(), /\r\nContent-Type: application\/json/i, "JSON content type");
  t.same(bodyOf(client.received()), {
    error: "Request timeout",
    message: "The request did not arrive in time; send it again",
  });
});

t.test("O1: a body that trickles in slower than the request timeout gets 408 and nothing is stored", async (t) => {
  const { app, store } = await build(t, { requestTimeoutMs: 300 });
  await app.listen({ port: 0, host: "127.0.0.1" });
  const port = (app.server.address() as { port: number }).port;
  const client = rawClient(port);
  const body = JSON.stringify({ session: { id: "slow-body" } });
  client.socket.write(
    `POST /v2/create_session HTTP/1.1\r\nHost: agentmon\r\nContent-Type: application/json\r\nX-Agentmon-Api-Key: ${API_KEY}\r\nContent-Length: ${body.length}\r\n\r\n${body.slice(0, 5)}`,
  );
  await client.closed;
  t.match(client.received(), /^HTTP\/1\.1 408 /, "408");
  t.equal(await inspect(store).getSession("slow-body"), undefined, "the session was not created");
});

t.test("O1: an idle keep-alive connection is closed by the server after the keep-alive timeout", async (t) => {
  const port = await listening(t, { keepAliveTimeoutMs: 200 });
  const client = rawClient(port);
  client.socket.write("GET /healthz HTTP/1.1\r\nHost: agentmon\r\nConnection: keep-alive\r\n\r\n");
  await client.closed;
  t.match(client.received(), /^HTTP\/1\.1 200 OK\r\n/, "the request was answered");
  t.match(client.received(), /\r\nKeep-Alive: timeout=0?\.?\d*/i, "the answer announces the keep-alive timeout");
  t.equal(client.socket.destroyed, true, "then the server closed the idle connection");
});

t.test("O1: headers over 16 KiB get 431 with a JSON body", async (t) => {
  const port = await listening(t, {});
  const client = rawClient(port);
  client.socket.write(`GET /healthz HTTP/1.1\r\nHost: agentmon\r\nX-Big: ${"a".repeat(20_000)}\r\n\r\n`);
  await client.closed;
  t.match(client.received(), /^HTTP\/1\.1 431 /, "431");
  t.equal(bodyOf(client.received()).error, "Request header fields too large");
});

t.test("O1: a request that is not HTTP gets 400 with a JSON body", async (t) => {
  const port = await listening(t, {});
  const client = rawClient(port);
  client.socket.write("HELLO\r\n\r\n");
  await client.closed;
  t.match(client.received(), /^HTTP\/1\.1 400 /, "400");
  t.same(bodyOf(client.received()), { error: "Bad request", message: "The request is not valid HTTP/1.1" });
});

/** Blocks the event loop, as a burst of synchronous work would. */
function blockFor(ms: number) {
  const until = Date.now() + ms;
  while (Date.now() < until) {
    // busy: nothing else runs meanwhile
  }
}

t.test("O2: while the event loop lags, new requests get 503 with Retry-After; /healthz still answers", async (t) => {
  const { app, withKey, store } = await build(t, { maxEventLoopDelayMs: 100 });
  // Lag until the sampler (once a second) has seen it: each block is a 600 ms stall.
  const lag = () => app.memoryUsage().eventLoopDelay;
  while (!(lag() > 100 && Number.isFinite(lag()))) {
    blockFor(600);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
  const refused = await withKey("/v2/create_session", { session: { id: "under-pressure" } });
  t.equal(refused.statusCode, 503, "503");
  t.equal(refused.headers["retry-after"], "2", "Retry-After");
  t.equal(refused.json().error, "Service unavailable");
  t.match(refused.json().message, /^The server is overloaded \(event loop lag \d+ ms\); retry after 2 seconds$/);
  t.equal(await inspect(store).getSession("under-pressure"), undefined, "nothing was stored");

  const health = await app.inject({ method: "GET", url: "/healthz" });
  t.equal(health.statusCode, 200, "/healthz is never refused");
  const ready = await app.inject({ method: "GET", url: "/readyz" });
  t.equal(ready.statusCode, 503, "/readyz says not ready");
  t.match(ready.json().message, /^Not ready: the server is overloaded \(event loop lag \d+ ms\)$/);

  // Once the loop is idle again, the next samples clear the pressure and work is taken again.
  while (lag() > 100) await new Promise((resolve) => setTimeout(resolve, 100));
  const accepted = await withKey("/v2/create_session", { session: { id: "under-pressure" } });
  t.equal(accepted.statusCode, 200, "accepted again once the lag is gone");
});

t.test("O2: AGENTMON_MAX_EVENT_LOOP_DELAY=0 turns the check off", async (t) => {
  const { app, withKey } = await build(t, { maxEventLoopDelayMs: 0 });
  blockFor(1200);
  await new Promise((resolve) => setTimeout(resolve, 1100));
  t.equal(app.isUnderPressure(), false, "never under pressure");
  t.equal((await withKey("/v2/create_session", { session: { id: "no-check" } })).statusCode, 200);
});

t.test("O3: the rate limit is per API key, counts JWT calls, and answers 429 with Retry-After", async (t) => {
  let clock = Date.parse("2026-11-22T10:00:00Z");
  const { withKey, withJwt, session, store } = await build(t, { rateLimit: 3, now: () => clock });
  const jwt = await session("rl-1"); // 1
  const first = await withJwt("/v2/create_events", { events: [{ id: "e1", type: "llm" }] }, jwt); // 2
  t.equal(first.statusCode, 200);
  const third = await withKey("/v2/reauthorize_jwt", { session_id: "rl-1" }); // 3
  t.equal(third.statusCode, 200);

  const refused = await withJwt("/v2/create_events", { events: [{ id: "e2", type: "llm" }] }, jwt);
  t.equal(refused.statusCode, 429, "the 4th call in the minute is refused");
  t.equal(refused.headers["retry-after"], "20", "one request comes back every 20 s at 3 per minute");
  t.same(refused.json(), {
    error: "Too many requests",
    message: "This API key is over its request rate limit; retry after 20 seconds",
  });
  t.same(
    (await inspect(store).listEvents("rl-1")).map((e) => e.id),
    ["e1"],
    "the refused call stored nothing",
  );
  t.equal((await withKey("/v2/create_session", { session: { id: "rl-x" } })).statusCode, 429, "API-key calls too");

  const other = await withKey("/v2/create_session", { session: { id: "rl-other" } }, OTHER_PROJECT_KEY);
  t.equal(other.statusCode, 200, "another key has its own bucket");
  const bad = await withKey("/v2/create_session", { session: { id: "rl-y" } }, UNKNOWN_KEY);
  t.equal(bad.statusCode, 401, "a bad key is a 401 first, and takes nothing from anyone's bucket");

  clock += 19_000;
  const early = await withJwt("/v2/create_events", { events: [{ id: "e2", type: "llm" }] }, jwt);
  t.equal(early.headers["retry-after"], "1", "19 s later, 1 s to wait");
  clock += 1_000;
  t.equal((await withJwt("/v2/create_events", { events: [{ id: "e2", type: "llm" }] }, jwt)).statusCode, 200);
  t.equal((await withJwt("/v2/create_events", { events: [{ id: "e3", type: "llm" }] }, jwt)).statusCode, 429);
  clock += 60_000;
  for (const id of ["e3", "e4", "e5"]) {
    t.equal((await withJwt("/v2/create_events", { events: [{ id, type: "llm" }] }, jwt)).statusCode, 200, id);
  }
});

t.test("O3: without AGENTMON_RATE_LIMIT there is no per-key limit", async (t) => {
  const { withKey } = await build(t);
  for (let i = 0; i < 200; i++) {
    const res = await withKey("/v2/create_session", { session: { id: `many-${i}` } });
    if (res.statusCode !== 200) t.fail(`call ${i} answered ${res.statusCode}`);
  }
  t.pass("200 calls in a row all answered 200");
});

t.test("GET /healthz answers 200 with the uptime, without credentials", async (t) => {
  let clock = Date.parse("2026-11-22T10:00:00Z");
  const { app } = await build(t, { now: () => clock });
  clock += 65_500;
  const res = await app.inject({ method: "GET", url: "/healthz" });
  t.equal(res.statusCode, 200);
  t.same(res.json(), { status: "success", uptime_s: 65 });
  t.equal((await app.inject({ method: "POST", url: "/healthz" })).statusCode, 405, "POST is 405");
});

t.test("GET /readyz answers 200 with the schema version, and 503 once the database is gone", async (t) => {
  const { app, store } = await build(t);
  const res = await app.inject({ method: "GET", url: "/readyz" });
  t.equal(res.statusCode, 200);
  t.same(res.json(), { status: "success", database: "ok", schema_version: res.json().schema_version });
  t.ok(Number.isInteger(res.json().schema_version) && res.json().schema_version >= 1, "a schema version");

  await store.close();
  const down = await app.inject({ method: "GET", url: "/readyz" });
  t.equal(down.statusCode, 503);
  t.equal(down.headers["retry-after"], "5");
  t.same(down.json(), { error: "Service unavailable", message: "Not ready: the server is stopping" });
  const health = await app.inject({ method: "GET", url: "/healthz" });
  t.equal(health.statusCode, 200, "liveness does not depend on storage");
});

t.test("O1-O3 settings: defaults, environment variables and flags, and bad values", async (t) => {
  const defaults = loadConfig({}, {});
  t.same(
    [
      defaults.requestTimeoutSeconds,
      defaults.keepAliveTimeoutSeconds,
      defaults.maxEventLoopDelayMs,
      defaults.rateLimit,
    ],
    [30, 72, 1000, 0],
    "30 s, 72 s, 1000 ms, no rate limit",
  );
  const env = loadConfig(
    {
      AGENTMON_REQUEST_TIMEOUT: "5",
      AGENTMON_KEEPALIVE_TIMEOUT: "10",
      AGENTMON_MAX_EVENT_LOOP_DELAY: "0",
      AGENTMON_RATE_LIMIT: "600",
    },
    { "rate-limit": "60" },
  );
  t.same(
    [env.requestTimeoutSeconds, env.keepAliveTimeoutSeconds, env.maxEventLoopDelayMs, env.rateLimit],
    [5, 10, 0, 60],
    "read from the environment; a flag wins",
  );
  for (const name of ["AGENTMON_REQUEST_TIMEOUT", "AGENTMON_RATE_LIMIT", "AGENTMON_MAX_EVENT_LOOP_DELAY"]) {
    const wanted = { message: new RegExp(`^${name} must be a whole number from \\d+ to \\d+ \\(got "`) };
    t.throws(() => loadConfig({ [name]: "-1" }, {}), wanted, `${name}=-1 is refused`);
    t.throws(() => loadConfig({ [name]: "fast" }, {}), wanted, `${name}=fast is refused`);
  }
  t.throws(
    () => loadConfig({ AGENTMON_KEEPALIVE_TIMEOUT: "0" }, {}),
    { message: /^AGENTMON_KEEPALIVE_TIMEOUT must be a whole number from 1 to 3600/ },
    "a keep-alive timeout of 0 is refused",
  );
});

t.test("O3: AGENTMON_RATE_LIMIT reaches a real `agentmon serve` process", async (t) => {
  const dir = tempDir(t);
  const key = randomUUID();
  const env = childEnv({ AGENTMON_API_KEY: key, AGENTMON_RATE_LIMIT: "2", AGENTMON_LOG_LEVEL: "silent" });
  const server = agentmon(t, ["serve", "--port", "0", "--db", join(dir, "a.db")], env);
  const base = (await server.waitFor(LISTENING))[1] ?? "";
  const create = async (id: string) => {
    const res = await fetch(`${base}/v2/create_session`, {
      method: "POST",
      headers: { "content-type": "application/json", "x-agentmon-api-key": key },
      body: JSON.stringify({ session: { id } }),
    });
    await checkFetched("POST", "/v2/create_session", res); // decision 030, on the real process
    return res;
  };
  t.equal((await create("a")).status, 200);
  t.equal((await create("b")).status, 200);
  const third = await create("c");
  t.equal(third.status, 429, "the third call in the minute is refused");
  t.equal(third.headers.get("retry-after"), "30", "one call comes back every 30 s at 2 per minute");
  const health = await fetch(`${base}/healthz`);
  t.equal(health.status, 200, "the probes are not rate limited");
});

t.test("GET /readyz answers 503 naming both versions when the database is not at this server's schema", async (t) => {
  const db = openDb(":memory:");
  const { app } = await build(t, { store: sqliteStore(db) });
  const version = db.pragma("user_version", { simple: true }) as number;
  db.pragma(`user_version = ${version + 1}`); // another, newer agentmon migrated it meanwhile
  const res = await app.inject({ method: "GET", url: "/readyz" });
  t.equal(res.statusCode, 503);
  t.equal(res.headers["retry-after"], "5");
  t.same(res.json(), {
    error: "Service unavailable",
    message: `Not ready: the database is at schema version ${version + 1}; this server needs ${version}`,
  });
  db.pragma(`user_version = ${version}`);
  t.equal((await app.inject({ method: "GET", url: "/readyz" })).statusCode, 200, "ready once it matches again");
});
