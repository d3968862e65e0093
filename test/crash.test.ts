/**
 * Crash safety (G7, G8; otlp.md T8, T17), on a real process and a real database file. Eight
 * clients send create_events batches with known ids, and three more send OpenTelemetry spans to
 * POST /v1/traces (1-200 spans a request, protobuf or OTLP/JSON, over a few traces each, children
 * often before their parents), all over real HTTP, and two more send the same kind of spans over
 * OTLP/gRPC (TraceService/Export, decision 028), while `agentmon serve` is killed with SIGKILL
 * at a random moment, five times, and restarted on the same file each time. After each restart:
 * every acknowledged event and every span of an acknowledged OTLP request (200, nothing rejected)
 * is stored exactly once, as an event of its session (for a span: its trace's), with the type
 * and parent it was sent with; no batch is half stored; a refused batch stored nothing; and
 * `PRAGMA integrity_check` is ok; and every projection, once the changes queued at the kill are
 * projected, equals a rebuild from the raw rows (decision 033). Then the clients retry what was never answered and re-send an
 * acknowledged batch, which must answer 200 again and duplicate nothing (for OTLP: every event
 * count of its sessions unchanged).
 *
 * The seed fixes every random choice (batch sizes, bodies, media types, kill delays); it is in
 * the test name. Replay with CRASH_SEED=<seed>. Where exactly a kill lands still depends on the
 * machine's timing. The v2 clients' batches are made in test/crash/batches.ts and the OTLP ones
 * in test/crash/otlp.ts; a round of load and its kill run in test/crash/round.ts; what is on disk
 * is checked in test/crash/checks.ts (v2) and test/crash/otlp-checks.ts (OTLP).
 */
import { randomUUID } from "node:crypto";
import { join } from "node:path";
import t from "tap";
import { type Client, random } from "./crash/batches.ts";
import { retryAfterRestart, verify } from "./crash/checks.ts";
import { OTLP_CLIENTS, type OtlpClient, otlpClient, otlpSender } from "./crash/otlp.ts";
import { otlpSessions, retryOtlpAfterRestart, verifyOtlp } from "./crash/otlp-checks.ts";
import { closeGrpcClients, grpcAcked, OTLP_GRPC_CLIENTS, otlpGrpcSender } from "./crash/otlp-grpc.ts";
import { verifyProjections } from "./crash/projections.ts";
import { ACKED_BEFORE_KILL_TIMER, CLIENTS, loadAndKill, post, start, v2Sender } from "./crash/round.ts";
import { tempDir } from "./helper.ts";

const SEED = Number(process.env.CRASH_SEED ?? Math.floor(Math.random() * 2 ** 31));
const KILLS = 5;

// ----------------------------------------------------------------------------- the test

t.test(`G7/G8: SIGKILL ${KILLS} times under load, restart on the same file (seed ${SEED})`, async (t) => {
  const db = join(tempDir(t), "crash.db");
  const apiKey = randomUUID();
  const killRng = random(SEED);
  let { server, base, grpc } = await start(t, db, apiKey);
  t.ok(grpc, `the OTLP/gRPC port: ${grpc}`);
  t.teardown(closeGrpcClients);

  const clients: Client[] = [];
  for (let n = 0; n < CLIENTS; n++) {
    const sessionId = `crash-${n}`;
    const created = await post(
      `${base}/v2/create_session`,
      JSON.stringify({ session: { session_id: sessionId, tags: ["crash-test"], host_env: { OS: { OS: "Linux" } } } }),
      { "x-agentmon-api-key": apiKey },
    );
    t.equal(created.status, 200, `session ${sessionId} created: ${JSON.stringify(created.body)}`);
    const jwt = String((created.body as { jwt?: unknown }).jwt);
    clients.push({ n, sessionId, jwt, rng: random(SEED + 1 + n), batches: [] });
  }

  // The OTLP clients' seeds follow the v2 clients', which stay what they were before OTLP came.
  const otlp: OtlpClient[] = [];
  for (let n = 0; n < OTLP_CLIENTS; n++) otlp.push(otlpClient(n, random(SEED + 1 + CLIENTS + n)));
  // And the OTLP/gRPC clients' after those (decision 028): their batches are checked as the
  // others' are, and their retries after a restart go over HTTP (the same bytes, protobuf).
  const overGrpc: OtlpClient[] = [];
  for (let n = 0; n < OTLP_GRPC_CLIENTS; n++) {
    overGrpc.push(otlpClient(OTLP_CLIENTS + n, random(SEED + 1 + CLIENTS + OTLP_CLIENTS + n)));
  }
  const traces = otlpSessions([...otlp, ...overGrpc]);
  const senders = [
    ...clients.map(v2Sender),
    ...otlp.map((client) => otlpSender(client, apiKey)),
    ...overGrpc.map((client) => otlpGrpcSender(client, apiKey, () => grpc)),
  ];
  otlp.push(...overGrpc);

  for (let round = 1; round <= KILLS; round++) {
    const result = await loadAndKill(t, server, base, senders, killRng);
    t.ok(
      result.acked > 0,
      `round ${round}: ${result.acked} batches (${result.ackedItems} events and spans) acknowledged`,
    );
    t.same(result.unexpected, [], `round ${round}: every answer was 200 with the batch's ids, or 503`);
    t.comment(`round ${round}: killed ${result.killDelayMs} ms after ${ACKED_BEFORE_KILL_TIMER} acknowledgements`);

    // The restarted server recovers the file itself (WAL replay) before anything else reads it;
    // the JWTs issued before the kill still work, since the secret is the same.
    ({ server, base, grpc } = await start(t, db, apiKey));
    verify(t, db, clients, traces, `after restart ${round}`);
    verifyOtlp(t, db, otlp, `after restart ${round}`);
    await verifyProjections(t, db, `after restart ${round}`);
    await retryAfterRestart(t, base, clients, `after restart ${round}`);
    await retryOtlpAfterRestart(t, base, db, apiKey, otlp, `after restart ${round}`);
  }

  server.child.kill("SIGTERM");
  const exit = await server.exited();
  const clean = exit.code === 0 && exit.signal === null;
  t.ok(
    clean,
    `the last server stops cleanly on SIGTERM${clean ? "" : `: ${JSON.stringify(exit)}${server.describe()}`}`,
  );
  t.ok(grpcAcked.batches > 0, `${grpcAcked.batches} OTLP/gRPC batches were acknowledged over gRPC`);
  verify(t, db, clients, traces, "at the end");
  verifyOtlp(t, db, otlp, "at the end");
  t.ok(
    [...clients, ...otlp].every((client) => client.batches.every((batch) => batch.state === "acked")),
    "at the end every batch sent has been acknowledged (directly or by a retry)",
  );
});
