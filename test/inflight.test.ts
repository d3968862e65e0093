/**
 * The ceiling on memory (issue 16 part 5, docs/decisions/019-inflight-memory.md), over real
 * sockets: bodies held from before they are read until their answer is sent, counted raw and
 * inflated; a body that does not fit gets 503 with Retry-After before it is read (or the moment a
 * body without a length passes the budget), stores nothing, and bodiless requests are never
 * refused; the gauge returns to 0 whatever happened (success, error, abort, timeout). Then the
 * issue's load test at a small scale: 100 concurrent 1 MiB create_events calls against a 16 MiB
 * budget, every call 200 or 503, every 200's events all stored, every 503's none, /healthz
 * answering throughout.
 */
import { Agent, request as httpRequest, type IncomingHttpHeaders } from "node:http";
import { connect, type Socket } from "node:net";
import { gzipSync } from "node:zlib";
import t, { type Test } from "tap";
import type { Store } from "../db/store.ts";
import { parsedSize, UNPARSED_COST } from "../http/inflight.ts";
import { InflightBytes } from "../services/inflight.ts";
import { API_KEY, build, inspect, MIB } from "./helper.ts";
import { encodeTraces } from "./otlp.encode.ts";
import { SMALL } from "./otlp.helpers.ts";

const TOKEN = "metrics-token-metrics-token";

interface Answer {
  status: number;
  headers: IncomingHttpHeaders;
  body: string;
}

/**
 * Keep-alive connections, as SDK clients use: a refusal sent while the body is still being sent
 * leaves the connection open as the server drops the rest (with `Connection: close` Node would
 * close it under the client, which may then see a reset instead of the 503).
 */
const agent = new Agent({ keepAlive: true, maxSockets: Number.POSITIVE_INFINITY });
t.teardown(() => agent.destroy());

/** One request; the body whole (with its length), or chunked when the headers say so. */
function send(
  port: number,
  method: string,
  path: string,
  headers: Record<string, string>,
  body?: Buffer | string,
): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = httpRequest({ host: "127.0.0.1", port, method, path, headers, agent }, (res) => {
      let text = "";
      res.setEncoding("utf8");
      res.on("data", (chunk: string) => {
        text += chunk;
      });
      res.on("end", () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: text }));
    });
    req.on("error", reject);
    req.on("socket", (socket) => socket.on("error", () => {}));
    req.end(body);
  });
}

/** A raw connection that sends what it is told when it is told: for bodies that arrive slowly, or never. */
function rawClient(port: number) {
  const socket: Socket = connect(port, "127.0.0.1");
  let received = "";
  socket.setEncoding("utf8");
  socket.on("data", (chunk: string) => {
    received += chunk;
  });
  socket.on("error", () => {});
  const closed = new Promise<void>((resolve) => socket.on("close", () => resolve()));
  return { socket, closed, received: () => received };
}

const head = (path: string, headers: Record<string, string | number>) =>
  `POST ${path} HTTP/1.1\r\nHost: agentmon\r\n${Object.entries(headers)
    .map(([name, value]) => `${name}: ${value}\r\n`)
    .join("")}\r\n`;

/** create_events with `n` events (ids `<prefix>-<i>`) whose JSON is about `bytes` long. */
function eventsBody(bytes: number, prefix = "ev", n = 50): string {
  const filler = "x".repeat(Math.max(0, Math.floor(bytes / n) - 120));
  const events = Array.from({ length: n }, (_, i) => ({
    id: `${prefix}-${i}`,
    type: "llm",
    model: "gpt-4o-mini",
    prompt: [{ role: "user", content: filler }],
  }));
  return JSON.stringify({ events });
}

async function listening(t: Test, options: Parameters<typeof build>[1]) {
  const app = await build(t, { metricsToken: TOKEN, ...options });
  await app.app.listen({ port: 0, host: "127.0.0.1" });
  const port = (app.app.server.address() as { port: number }).port;
  return { ...app, port };
}

/** A sample of GET /metrics: `agentmon_inflight_bytes`, or the refusals counted by reason. */
async function metric(port: number, pattern: RegExp): Promise<number> {
  const res = await send(port, "GET", "/metrics", { authorization: `Bearer ${TOKEN}` });
  const match = pattern.exec(res.body);
  if (res.status !== 200 || match?.[1] === undefined) throw new Error(`GET /metrics: ${res.status} ${res.body}`);
  return Number(match[1]);
}
const inflightBytes = (port: number) => metric(port, /^agentmon_inflight_bytes (\d+)$/m);
const refusals = (port: number) => metric(port, /^agentmon_requests_rejected_total\{reason="inflight_bytes"\} (\d+)$/m);

/** Waits until GET /metrics shows `bytes` in flight (the server gets to a body in its own time). */
async function untilInflight(port: number, test: (bytes: number) => boolean): Promise<number> {
  for (let i = 0; i < 500; i++) {
    const bytes = await inflightBytes(port);
    if (test(bytes)) return bytes;
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  throw new Error("the bytes in flight never got there");
}

const json = { "content-type": "application/json" };
const bearer = (jwt: string) => ({ ...json, authorization: `Bearer ${jwt}` });

function isRefusal(t: Test, answer: Answer, message = "503") {
  t.equal(answer.status, 503, message);
  t.equal(answer.headers["retry-after"], "2", "Retry-After: 2");
  const body = JSON.parse(answer.body);
  t.equal(body.error, "Service unavailable");
  t.match(
    body.message,
    /^The server holds as many request bodies as its memory budget allows \(\d+(\.\d)? MiB, AGENTMON_INFLIGHT_BYTES\); nothing was stored\. Retry after 2 seconds$/,
  );
}

const storedEvents = async (store: Store, session: string) => (await inspect(store).listEvents(session)).length;

t.test("the ledger: holds, growth, release once, and a body alone always fits", async (t) => {
  const ledger = new InflightBytes(100);
  const a = ledger.open(60);
  t.ok(a, "60 of 100 fit");
  t.equal(ledger.open(50), undefined, "50 more do not");
  const b = ledger.open(40);
  t.ok(b, "40 more do");
  t.equal(b?.grow(1), false, "and not one byte past the budget");
  t.equal(ledger.bytes, 100);
  a?.release();
  a?.release();
  t.equal(ledger.bytes, 40, "a release counts once");
  t.equal(b?.grow(60), true);
  b?.release();
  t.equal(ledger.bytes, 0);
  t.equal(ledger.holds, 0);
  const alone = ledger.open(500);
  t.ok(alone, "a body alone in flight fits even past the budget (the body limit bounds it)");
  t.equal(alone?.grow(500), true, "and may grow");
  t.equal(ledger.open(0), undefined, "but nothing else fits beside it");
  alone?.release();
  t.equal(ledger.bytes, 0);
});

t.test("a parsed body is counted by what it takes: many small values weigh more than their text", async (t) => {
  const small = JSON.stringify({
    events: Array.from({ length: 2000 }, (_, i) => ({ id: `e${i}`, n: i, x: 1.5, ok: true })),
  });
  const long = JSON.stringify({ events: [{ id: "e", output: "y".repeat(small.length) }] });
  const smallSize = parsedSize(JSON.parse(small));
  const longSize = parsedSize(JSON.parse(long));
  t.ok(smallSize > 2 * small.length, `small values: ${(smallSize / small.length).toFixed(2)} bytes a byte of text`);
  t.ok(longSize > long.length && longSize < 1.01 * long.length, "one long string: about its text");
  t.equal(parsedSize(null), 0);
  t.equal(parsedSize(7), 0, "a small integer is no object of its own");
  t.equal(parsedSize(0.5), 16, "a double is a heap number");
});

t.test("a declared body is held before it is read; one that does not fit gets 503 before it is sent", async (t) => {
  const { port, session, store, withKey } = await listening(t, { inflightBytes: 12 * MIB });
  const jwt = await session("held");
  const other = await session("refused");
  // 4 MiB declared, 10 bytes sent: the whole length is held from the start.
  const slow = rawClient(port);
  slow.socket.write(head("/v2/create_events", { ...bearer(jwt), "content-length": 4 * MIB }));
  slow.socket.write('{"events":');
  t.equal(
    await untilInflight(port, (b) => b > 0),
    4 * MIB * UNPARSED_COST,
    "the declared 4 MiB are held, with room for their parse",
  );

  // 3 MiB more do not fit: refused on the headers alone, the body never sent.
  const refused = rawClient(port);
  refused.socket.write(head("/v2/create_events", { ...bearer(other), "content-length": 3 * MIB }));
  while (!refused.received().includes("\r\n\r\n{")) await new Promise((resolve) => setTimeout(resolve, 10));
  const [status, ...rest] = refused.received().split("\r\n");
  t.match(status, /^HTTP\/1\.1 503 /, "503 before a byte of the body was sent");
  const retryAfter = rest.find((line) => /^retry-after:/i.test(line));
  t.equal(retryAfter?.toLowerCase(), "retry-after: 2");
  refused.socket.destroy();

  // Requests without a body are never refused.
  t.equal((await send(port, "GET", "/healthz", {})).status, 200, "/healthz answers");
  t.equal((await send(port, "GET", "/readyz", {})).status, 200, "/readyz answers");
  t.equal(
    (await send(port, "GET", "/v2/sessions/held", { "x-agentmon-api-key": API_KEY })).status,
    200,
    "reads answer",
  );
  // A small body still fits beside the 4 MiB.
  t.equal((await withKey("/v2/create_session", { session: { id: "small" } })).statusCode, 200, "a small body fits");

  // The client goes away mid-body: the hold is released.
  slow.socket.destroy();
  await untilInflight(port, (b) => b === 0);
  t.equal(await refusals(port), 1, "GET /metrics counted the refusal (reason inflight_bytes)");
  t.equal(await storedEvents(store, "held"), 0, "the aborted call stored nothing");
  t.equal(await storedEvents(store, "refused"), 0, "the refused call stored nothing");
});

t.test("a chunked body is counted as it arrives and refused the moment it would pass the budget", async (t) => {
  const { port, session, store } = await listening(t, { inflightBytes: 4 * MIB * UNPARSED_COST });
  const jwt = await session("chunked");
  const other = await session("other");
  // Another body holds 3 MiB, so the chunked one has 1 MiB before the budget is passed.
  const holder = rawClient(port);
  holder.socket.write(head("/v2/create_events", { ...bearer(other), "content-length": 3 * MIB }));
  await untilInflight(port, (b) => b === 3 * MIB * UNPARSED_COST);

  const body = eventsBody(2 * MIB, "c");
  const chunks = [body.slice(0, 512 * 1024), body.slice(512 * 1024)];
  const answer = await new Promise<Answer>((resolve, reject) => {
    const req = httpRequest(
      {
        host: "127.0.0.1",
        port,
        method: "POST",
        path: "/v2/create_events",
        headers: { ...bearer(jwt), "transfer-encoding": "chunked" },
        agent,
      },
      (res) => {
        let text = "";
        res.setEncoding("utf8").on("data", (chunk: string) => {
          text += chunk;
        });
        res.on("end", () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: text }));
      },
    );
    req.on("error", reject);
    req.write(chunks[0]);
    // Half a MiB fits: it is held, and the call is still waiting for the rest.
    untilInflight(port, (b) => b >= (3 * MIB + 512 * 1024) * UNPARSED_COST).then(() => req.end(chunks[1]), reject);
  });
  isRefusal(t, answer, "the rest passes the budget: 503");
  t.equal(await storedEvents(store, "chunked"), 0, "nothing stored");
  holder.socket.destroy();
  await untilInflight(port, (b) => b === 0);
  t.pass("the gauge is back to 0");

  // Alone, the same chunked body fits and is stored.
  const alone = await send(port, "POST", "/v2/create_events", { ...bearer(jwt), "transfer-encoding": "chunked" }, body);
  t.equal(alone.status, 200, "stored when it fits");
  t.equal(await storedEvents(store, "chunked"), 50);
  t.equal(await inflightBytes(port), 0);
});

t.test("gzip and deflate bodies are counted inflated", async (t) => {
  const { port, session, store } = await listening(t, { inflightBytes: 3 * MIB * UNPARSED_COST });
  const jwt = await session("gz");
  const other = await session("other");
  const body = eventsBody(2 * MIB, "g");
  const gz = gzipSync(body);
  t.ok(gz.length < 200 * 1024, "2 MiB of JSON compress to little");
  // Another body holds 1.5 MiB: the compressed bytes fit, the inflated ones do not.
  const holder = rawClient(port);
  holder.socket.write(head("/v2/create_events", { ...bearer(other), "content-length": 1.5 * MIB }));
  await untilInflight(port, (b) => b === 1.5 * MIB * UNPARSED_COST);
  const gzHeaders = { ...bearer(jwt), "content-encoding": "gzip" };
  isRefusal(t, await send(port, "POST", "/v2/create_events", gzHeaders, gz), "503 while inflating");
  isRefusal(
    t,
    await send(port, "POST", "/v2/create_events", { ...gzHeaders, "transfer-encoding": "chunked" }, gz),
    "503 while inflating a chunked body",
  );
  t.equal(await storedEvents(store, "gz"), 0, "nothing stored");
  // The connection that was refused mid-body is still usable by another request after it.
  holder.socket.destroy();
  await untilInflight(port, (b) => b === 0);
  const stored = await send(port, "POST", "/v2/create_events", gzHeaders, gz);
  t.equal(stored.status, 200, "alone, it fits");
  t.equal(await storedEvents(store, "gz"), 50);
  t.equal(await inflightBytes(port), 0, "the gauge is back to 0");
});

t.test("every way a request ends releases its hold: success, 400, 413, 415, 401, abort, timeout", async (t) => {
  const { port, session } = await listening(t, { inflightBytes: 16 * MIB, requestTimeoutMs: 1000 });
  const jwt = await session("ends");
  const ok = await send(port, "POST", "/v2/create_events", bearer(jwt), eventsBody(MIB, "ok"));
  t.equal(ok.status, 200, "success");
  t.equal((await send(port, "POST", "/v2/create_events", bearer(jwt), "{not json")).status, 400, "malformed");
  t.equal(
    (await send(port, "POST", "/v2/create_events", bearer(jwt), '{"events":[{"type":1}]}')).status,
    400,
    "invalid",
  );
  const big = "x".repeat(6 * MIB);
  t.equal((await send(port, "POST", "/v2/create_events", bearer(jwt), big)).status, 413, "declared too large");
  t.equal(
    (await send(port, "POST", "/v2/create_events", { ...bearer(jwt), "transfer-encoding": "chunked" }, big)).status,
    413,
    "too large as it arrives",
  );
  t.equal(
    (await send(port, "POST", "/v2/create_events", { ...bearer(jwt), "content-type": "text/plain" }, "hello")).status,
    415,
    "not JSON (never read)",
  );
  t.equal((await send(port, "POST", "/v2/create_events", json, "{}")).status, 401, "no credential");
  t.equal(await inflightBytes(port), 0, "nothing held after those");

  // Abort mid-body, with and without a length.
  for (const headers of [{ "content-length": 2 * MIB }, { "transfer-encoding": "chunked" }]) {
    const client = rawClient(port);
    client.socket.write(head("/v2/create_events", { ...bearer(jwt), ...headers }));
    client.socket.write("transfer-encoding" in headers ? '8\r\n{"events\r\n' : '{"events');
    await untilInflight(port, (b) => b > 0);
    client.socket.destroy();
    await untilInflight(port, (b) => b === 0);
    t.pass(`an abort releases the hold (${Object.keys(headers)[0]})`);
  }

  // O1: the body never finishes; 408 and the hold is released.
  const slow = rawClient(port);
  slow.socket.write(head("/v2/create_events", { ...bearer(jwt), "content-length": MIB }));
  slow.socket.write('{"events');
  await slow.closed;
  t.match(slow.received(), /^HTTP\/1\.1 408 /, "408");
  await untilInflight(port, (b) => b === 0);
  t.pass("a timeout releases the hold");
});

t.test("a hold outlives a client that leaves while its call is being stored", async (t) => {
  let release = () => {};
  const gate = new Promise<void>((resolve) => {
    release = resolve;
  });
  let entered = () => {};
  const storing = new Promise<void>((resolve) => {
    entered = resolve;
  });
  const built = await listening(t, { inflightBytes: 16 * MIB });
  const store = built.store as Store & { insertEvents: Store["insertEvents"] };
  const insert = store.insertEvents.bind(store);
  store.insertEvents = async (...args) => {
    entered();
    await gate;
    return insert(...args);
  };
  const jwt = await built.session("slow-store");
  const body = eventsBody(MIB, "s");
  const client = rawClient(built.port);
  client.socket.write(head("/v2/create_events", { ...bearer(jwt), "content-length": Buffer.byteLength(body) }));
  client.socket.write(body);
  await storing;
  client.socket.destroy();
  await client.closed;
  await new Promise((resolve) => setTimeout(resolve, 100));
  const held = await inflightBytes(built.port);
  const bytes = Buffer.byteLength(body);
  t.equal(
    held,
    bytes + parsedSize(JSON.parse(body)),
    "still held while the handler stores it: its bytes and its parse",
  );
  release();
  await untilInflight(built.port, (b) => b === 0);
  t.equal(await storedEvents(store, "slow-store"), 50, "stored, then released");
});

t.test("OTLP: the refusal is a google.rpc.Status UNAVAILABLE with Retry-After", async (t) => {
  const { port, session } = await listening(t, { inflightBytes: 2 * MIB * UNPARSED_COST });
  const jwt = await session("otlp-holder");
  const holder = rawClient(port);
  holder.socket.write(head("/v2/create_events", { ...bearer(jwt), "content-length": 2 * MIB }));
  await untilInflight(port, (b) => b === 2 * MIB * UNPARSED_COST);
  const auth = { "x-agentmon-api-key": API_KEY };
  const asJson = await send(port, "POST", "/v1/traces", { ...auth, ...json }, JSON.stringify(SMALL));
  t.equal(asJson.status, 503);
  t.equal(asJson.headers["retry-after"], "2");
  const status = JSON.parse(asJson.body);
  t.equal(status.code, 14, "UNAVAILABLE");
  t.match(status.message, /memory budget/);
  const proto = await send(
    port,
    "POST",
    "/v1/traces",
    { ...auth, "content-type": "application/x-protobuf" },
    Buffer.from(encodeTraces(SMALL)),
  );
  t.equal(proto.status, 503);
  t.equal(proto.headers["retry-after"], "2");
  t.match(proto.headers["content-type"], /^application\/x-protobuf/, "a binary Status for a protobuf request");
  holder.socket.destroy();
  await untilInflight(port, (b) => b === 0);
});

/** The status, headers and body of the answer a raw client has received whole, or undefined. */
function answerOf(raw: string): Answer | undefined {
  const end = raw.indexOf("\r\n\r\n");
  if (end < 0) return undefined;
  const [statusLine = "", ...lines] = raw.slice(0, end).split("\r\n");
  const headers: IncomingHttpHeaders = {};
  for (const line of lines) {
    const colon = line.indexOf(":");
    headers[line.slice(0, colon).toLowerCase()] = line.slice(colon + 1).trim();
  }
  const body = raw.slice(end + 4);
  if (Buffer.byteLength(body) < Number(headers["content-length"])) return undefined;
  return { status: Number(statusLine.split(" ")[1]), headers, body };
}

t.test("load: 100 concurrent 1 MiB create_events against a 16 MiB budget", async (t) => {
  const { port, session, store } = await listening(t, { inflightBytes: 16 * MIB });
  const calls = 100;
  const jwts = await Promise.all(Array.from({ length: calls }, (_, i) => session(`load-${i}`)));
  const body = Buffer.from(eventsBody(MIB, "e"));
  let loading = true;
  const health: number[] = [];
  const probe = (async () => {
    while (loading) {
      health.push((await send(port, "GET", "/healthz", {})).status);
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  })();
  // Every call's headers first, so that all 100 are in flight together (an in-process client
  // on one event loop would otherwise send them nearly one after the other); then their bodies.
  const clients = jwts.map((jwt) => {
    const client = rawClient(port);
    client.socket.write(head("/v2/create_events", { ...bearer(jwt), "content-length": body.length }));
    return client;
  });
  await untilInflight(port, (b) => b > 15 * MIB);
  for (const client of clients) client.socket.write(body);
  const answers: Answer[] = [];
  for (const client of clients) {
    let answer = answerOf(client.received());
    while (answer === undefined) {
      await new Promise((resolve) => setTimeout(resolve, 10));
      answer = answerOf(client.received());
    }
    answers.push(answer);
    client.socket.destroy();
  }
  loading = false;
  await probe;

  const ok = answers.filter((a) => a.status === 200).length;
  const refused = answers.filter((a) => a.status === 503);
  t.equal(ok + refused.length, calls, `every call answered 200 or 503 (${ok} / ${refused.length})`);
  t.ok(ok > 0, "some were taken");
  t.ok(refused.length > 0, "some were refused");
  t.ok(
    refused.every((a) => a.headers["retry-after"] === "2"),
    "every 503 has Retry-After",
  );
  let wrong = 0;
  for (const [i, answer] of answers.entries()) {
    const stored = await storedEvents(store, `load-${i}`);
    if (stored !== (answer.status === 200 ? 50 : 0)) wrong++;
  }
  t.equal(wrong, 0, "every 200's events are all stored, every 503's none");
  t.ok(
    health.length > 0 && health.every((s) => s === 200),
    `/healthz answered 200 throughout (${health.length} probes)`,
  );
  await untilInflight(port, (b) => b === 0);
  t.pass("the gauge is back to 0");
  t.equal(await refusals(port), refused.length, "GET /metrics counted each refusal");
});
