/**
 * Refusals that arrive (issue 27, docs/decisions/029-inflight-answers-and-cost.md; http/linger.ts): a
 * request answered before its body was read, on a connection that closes after the answer, is
 * closed the RFC 9112 §9.6 way: the answer, then the server's side closed, then what the client
 * still sends read and dropped until it closes its own side, within a bound of bytes and of time.
 * Over raw sockets first (`Connection: close` refused on its headers, O1's 408 before the
 * headers came, no second answer when O1's timeout finds a request answered already, nothing
 * sent after an answer is parsed, and both bounds); then real clients (fetch, that is undici,
 * and node:http with `Connection: close`) sending many large bodies at once against a small
 * budget: every client sees a status, every 200's events are all stored, every refusal's none.
 */
import { request as httpRequest } from "node:http";
import { connect, type Socket } from "node:net";
import t, { type Test } from "tap";
import type { Store } from "../db/store.ts";
import { API_KEY, build, inspect, MIB } from "./helper.ts";

const TOKEN = "metrics-token-metrics-token";

/** A raw connection: what the server sent, whether it ended its side, and any error of ours. */
function rawClient(port: number) {
  const socket: Socket = connect({ port, host: "127.0.0.1", allowHalfOpen: true });
  let received = "";
  let ended = false;
  let error: string | undefined;
  socket.setEncoding("latin1");
  socket.on("data", (chunk: string) => {
    received += chunk;
  });
  socket.on("end", () => {
    ended = true;
  });
  socket.on("error", (e: NodeJS.ErrnoException) => {
    error = e.code ?? e.message;
  });
  const closed = new Promise<void>((resolve) => socket.on("close", () => resolve()));
  /** Writes `bytes` of filler in 64 KiB pieces, each after the last was taken (false once the socket fails). */
  const pour = async (bytes: number): Promise<boolean> => {
    const piece = Buffer.alloc(64 * 1024, "x");
    for (let sent = 0; sent < bytes; sent += piece.length) {
      if (socket.destroyed || error !== undefined) return false;
      const ok = await new Promise<boolean>((resolve) =>
        socket.write(piece.subarray(0, Math.min(piece.length, bytes - sent)), (e) => resolve(!e)),
      );
      if (!ok) return false;
    }
    return error === undefined;
  };
  return {
    socket,
    closed,
    pour,
    received: () => received,
    ended: () => ended,
    error: () => error,
  };
}

const head = (path: string, headers: Record<string, string | number>) =>
  `POST ${path} HTTP/1.1\r\nHost: agentmon\r\n${Object.entries(headers)
    .map(([name, value]) => `${name}: ${value}\r\n`)
    .join("")}\r\n`;

const until = async (test: () => boolean, what: string | (() => string)) => {
  for (let i = 0; i < 1000; i++) {
    if (test()) return;
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  throw new Error(`never: ${typeof what === "string" ? what : what()}`);
};

/** The status lines of every answer in a raw exchange. */
const statuses = (raw: string) => [...raw.matchAll(/HTTP\/1\.1 (\d{3}) /g)].map((m) => Number(m[1]));

async function listening(t: Test, options: Parameters<typeof build>[1]) {
  const built = await build(t, { metricsToken: TOKEN, ...options });
  await built.app.listen({ port: 0, host: "127.0.0.1" });
  const port = (built.app.server.address() as { port: number }).port;
  return { ...built, port };
}

const bearer = (jwt: string) => ({ "content-type": "application/json", authorization: `Bearer ${jwt}` });

/** Holds the budget with a body whose headers promise `bytes` and that never comes; once it is held. */
async function holder(built: Awaited<ReturnType<typeof listening>>, bytes: number) {
  const jwt = await built.session("holder");
  const client = rawClient(built.port);
  client.socket.write(head("/v2/create_events", { ...bearer(jwt), "content-length": bytes }));
  let held = 0;
  for (let i = 0; i < 1000 && held === 0; i++) {
    const res = await built.inject({ method: "GET", url: "/metrics", headers: { authorization: `Bearer ${TOKEN}` } });
    held = Number(/^agentmon_inflight_bytes (\d+)$/m.exec(res.body)?.[1] ?? 0);
    if (held === 0) await new Promise((resolve) => setTimeout(resolve, 10));
  }
  if (held === 0) throw new Error("the holder's body was never held");
  return client;
}

t.test("Connection: close, refused on its headers: the 503 arrives and the rest of the body is taken", async (t) => {
  const built = await listening(t, { inflightBytes: 4 * MIB });
  const { port, store } = built;
  const jwt = await built.session("refused");
  const holding = await holder(built, 3 * MIB);
  const client = rawClient(port);
  client.socket.write(head("/v2/create_events", { ...bearer(jwt), "content-length": 4 * MIB, connection: "close" }));
  await until(
    () => statuses(client.received()).length > 0,
    () => `an answer: ${JSON.stringify(client.received())}`,
  );
  t.same(statuses(client.received()), [503], "503 on the headers alone");
  t.match(client.received(), /\r\nretry-after: 2\r\n/i, "with Retry-After");
  t.ok(await client.pour(4 * MIB), "the client writes its whole body after the answer without an error");
  client.socket.end();
  await client.closed;
  t.equal(client.error(), undefined, "no EPIPE or ECONNRESET");
  t.ok(client.ended(), "the server closed its side in order");
  t.equal((await inspect(store).listEvents("refused")).length, 0, "nothing stored");
  holding.socket.destroy();
});

t.test("O1: a 408 before the headers came is read by a client that sends its request late", async (t) => {
  const { port, store } = await listening(t, { requestTimeoutMs: 300 });
  const client = rawClient(port);
  await until(() => statuses(client.received()).length > 0, "the 408");
  t.same(statuses(client.received()), [408]);
  t.match(client.received(), /\r\nConnection: close\r\n/);
  // The client's request comes after it: it is read and dropped, never parsed nor run.
  const body = JSON.stringify({ session: { id: "late" } });
  client.socket.write(
    head("/v2/create_session", {
      "content-type": "application/json",
      "x-agentmon-api-key": API_KEY,
      "content-length": body.length,
    }) + body,
  );
  t.ok(await client.pour(MIB), "a MiB more is taken too");
  client.socket.end();
  await client.closed;
  t.equal(client.error(), undefined, "no EPIPE or ECONNRESET");
  t.same(statuses(client.received()), [408], "one answer only");
  t.equal(await inspect(store).getSession("late"), undefined, "the late request did not run");
});

t.test("O1: a request answered before its body came gets no second answer when its time is up", async (t) => {
  const built = await listening(t, { inflightBytes: 2 * MIB, requestTimeoutMs: 500 });
  const { port } = built;
  const jwt = await built.session("refused");
  const holding = await holder(built, 2 * MIB);
  const client = rawClient(port);
  // Keep-alive: Node keeps reading the refused body; it trickles, past the request timeout.
  client.socket.write(head("/v2/create_events", { ...bearer(jwt), "content-length": MIB }));
  await until(
    () => statuses(client.received()).length > 0,
    () => `an answer: ${JSON.stringify(client.received())}`,
  );
  t.same(statuses(client.received()), [503]);
  const trickle = setInterval(() => client.socket.write("x"), 50);
  await until(() => client.ended() || client.error() !== undefined, "the server ends the connection");
  clearInterval(trickle);
  client.socket.end();
  await client.closed;
  t.equal(client.error(), undefined, "closed in order, not reset");
  t.same(statuses(client.received()), [503], "the 503 only: no 408 after it");
  holding.socket.destroy();
});

t.test("lingering is bounded: in bytes, and in time", async (t) => {
  // Bound: the largest body limit (1 MiB here) and 64 KiB of headers; and O1's request timeout.
  const { app, port } = await listening(t, { requestTimeoutMs: 300, bodyLimit: MIB, otlpBodyLimit: MIB });
  const flood = rawClient(port);
  await until(() => statuses(flood.received()).length > 0, "the 408");
  t.notOk(await flood.pour(64 * MIB), "a client that keeps sending past the bound is cut off");
  await flood.closed;
  t.same(statuses(flood.received()), [408], "after its answer");

  const silent = rawClient(port);
  await until(() => statuses(silent.received()).length > 0, "the 408");
  await until(() => silent.ended(), "the server's side closed");
  // It never closes its own side: the server lets go of the connection after the request timeout.
  const connections = () =>
    new Promise<number>((resolve, reject) =>
      app.server.getConnections((error, count) => (error ? reject(error) : resolve(count))),
    );
  let open = await connections();
  for (let i = 0; i < 500 && open > 0; i++) {
    await new Promise((resolve) => setTimeout(resolve, 10));
    open = await connections();
  }
  t.equal(open, 0, "a client that neither sends nor closes is let go after the request timeout");
  silent.socket.destroy();
});

interface Outcome {
  status?: number;
  error?: string;
}

/** fetch (undici, as Node ships it), keep-alive. */
async function viaFetch(port: number, jwt: string, body: Buffer): Promise<Outcome> {
  try {
    const res = await fetch(`http://127.0.0.1:${port}/v2/create_events`, {
      method: "POST",
      headers: bearer(jwt),
      body,
    });
    await res.arrayBuffer();
    return { status: res.status };
  } catch (error) {
    const e = error as Error & { cause?: { code?: string } };
    return { error: e.cause?.code ?? e.message };
  }
}

/** node:http with `Connection: close`: Node's server closes such a connection after its answer. */
function viaHttpClose(port: number, jwt: string, body: Buffer): Promise<Outcome> {
  return new Promise((resolve) => {
    const req = httpRequest(
      {
        host: "127.0.0.1",
        port,
        method: "POST",
        path: "/v2/create_events",
        headers: { ...bearer(jwt), "content-length": body.length, connection: "close" },
        agent: false,
      },
      (res) => {
        res.resume();
        res.on("end", () => resolve({ status: res.statusCode ?? 0 }));
      },
    );
    req.on("error", (e: NodeJS.ErrnoException) => resolve({ error: e.code ?? e.message }));
    req.end(body);
  });
}

/** create_events with 20 events (ids `<prefix>-<i>`) of long tool outputs, about `bytes` of JSON. */
function bigBody(bytes: number): Buffer {
  const output = "y".repeat(Math.floor(bytes / 20) - 80);
  return Buffer.from(
    JSON.stringify({ events: Array.from({ length: 20 }, (_, i) => ({ id: `ev-${i}`, type: "tool", output })) }),
  );
}

const stored = async (store: Store, session: string) => (await inspect(store).listEvents(session)).length;

for (const [name, client] of [
  ["fetch", viaFetch],
  ["node:http, Connection: close", viaHttpClose],
] as const) {
  t.test(`real clients (${name}): 100 concurrent 2 MiB uploads, 6 MiB budget: every one sees a status`, async (t) => {
    const built = await listening(t, { inflightBytes: 6 * MIB });
    const { port, session, store } = built;
    const calls = 100;
    const jwts = await Promise.all(Array.from({ length: calls }, (_, i) => session(`s-${i}`)));
    const body = bigBody(2 * MIB);
    const outcomes = await Promise.all(jwts.map((jwt) => client(port, jwt, body)));
    const errors = outcomes.filter((o) => o.error !== undefined).map((o) => o.error);
    t.same(errors, [], "no client error (EPIPE, ECONNRESET)");
    const ok = outcomes.filter((o) => o.status === 200).length;
    const refused = outcomes.filter((o) => o.status === 503).length;
    t.equal(ok + refused, calls, `every call answered 200 or 503 (${ok} / ${refused})`);
    t.ok(ok > 0 && refused > 0, "some taken, some refused");
    let wrong = 0;
    for (const [i, outcome] of outcomes.entries()) {
      if ((await stored(store, `s-${i}`)) !== (outcome.status === 200 ? 20 : 0)) wrong++;
    }
    t.equal(wrong, 0, "every 200's events all stored, every refusal's none");
    // The clients' kept-alive connections would keep the server's close waiting.
    built.app.server.closeAllConnections();
  });
}
