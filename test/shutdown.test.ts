/**
 * Stopping: a request in flight when the server starts closing is finished and stored before
 * the database closes; a store that is gone answers 503 (G3), never 500.
 */
import { connect } from "node:net";
import { join } from "node:path";
import t from "tap";
import { openDb } from "../db/sqlite/open.ts";
import { sqliteStore } from "../db/sqlite/store.ts";
import { API_KEY, build, inspect, tempDir } from "./helper.ts";

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

t.test("G7: closing finishes the request in flight, stores it, then closes the database", async (t) => {
  // The folder first: teardowns run last-registered first, so the app closes the database
  // before its folder is removed.
  const dbPath = join(tempDir(t), "a.db");
  const { app } = await build(t, { dbPath });
  await app.listen({ port: 0, host: "127.0.0.1" });
  const { port } = app.server.address() as { port: number };
  const socket = connect(port, "127.0.0.1");
  let received = "";
  socket.on("data", (chunk) => {
    received += chunk.toString();
  });
  await new Promise((resolve) => socket.once("connect", resolve));

  const body = JSON.stringify({ session: { id: "in-flight" } });
  const arrived = new Promise((resolve) => app.server.once("request", resolve));
  socket.write(
    `POST /v2/create_session HTTP/1.1\r\nHost: test\r\nContent-Type: application/json\r\n` +
      `X-Agentmon-Api-Key: ${API_KEY}\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body.slice(0, 5)}`,
  );
  await arrived; // the request is in flight, its body unfinished
  const closing = app.close();
  await sleep(50);
  socket.write(body.slice(5));
  await Promise.race([closing, sleep(5000)]);
  socket.destroy();

  t.match(received, /^HTTP\/1\.1 200 /, "the request in flight is answered 200");
  t.match(received, /"session_id":"in-flight"/);
  const reopened = sqliteStore(openDb(dbPath));
  t.equal((await inspect(reopened).getSession("in-flight"))?.id, "in-flight", "and its data is on disk");
  await reopened.close();
});

t.test("G3: a store that has been closed answers 503 with Retry-After, not 500", async (t) => {
  const { store, withKey } = await build(t);
  await store.close();
  const res = await withKey("/v2/create_session", { session: { id: "after-close" } });
  t.equal(res.statusCode, 503);
  t.equal(res.headers["retry-after"], "5");
  t.same(res.json(), {
    error: "Service unavailable",
    message: "Storage is unavailable (the server is stopping); nothing was stored. Retry after 5 seconds",
  });
});
