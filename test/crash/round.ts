/**
 * One round of the crash test (test/crash.test.ts): `agentmon serve` started as a real process,
 * the clients sending batches over real HTTP, and SIGKILL at a seeded moment while requests are in
 * flight.
 */
import { setTimeout as sleep } from "node:timers/promises";
import type { Test } from "tap";
import { type Agentmon, agentmon, childEnv, LISTENING } from "../process.ts";
import { type Batch, type Client, nextBatch, type Random } from "./batches.ts";

/** v2 clients (test/crash/batches.ts); the OTLP clients come on top (test/crash/otlp.ts). */
export const CLIENTS = 8;
/** A round's kill timer starts once this many batches were acknowledged in it (so no round is vacuous). */
export const ACKED_BEFORE_KILL_TIMER = 2 * CLIENTS;
/** Then the kill comes after a random delay in this range, while batches are in flight. */
const KILL_DELAY_MS = [0, 700] as const;
/** Work bound per client per round, should the kill never be triggered. */
const MAX_BATCHES_PER_ROUND = 300;
/** Safety net for a request that never ends; a kill ends in-flight requests at once. */
const REQUEST_TIMEOUT_MS = 30_000;
const JWT_SECRET = "crash-test-secret-crash-test-secret-0123456789";

// ----------------------------------------------------------------------------- HTTP

export interface Answer {
  /** 0 when no answer came (connection refused or reset, as a kill does). */
  status: number;
  body: unknown;
}

export async function post(url: string, body: string, headers: Record<string, string>): Promise<Answer> {
  try {
    const res = await fetch(url, {
      method: "POST",
      headers: { "content-type": "application/json", ...headers },
      body,
      signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
    });
    const text = await res.text();
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch {
      return { status: 0, body: text }; // a body cut short by the kill is no answer
    }
    return { status: res.status, body: parsed };
  } catch {
    return { status: 0, body: undefined };
  }
}

export const sendBatch = (base: string, client: Client, batch: Batch) =>
  post(`${base}/v2/create_events`, batch.body, { authorization: `Bearer ${client.jwt}` });

/** A 200 for a batch must list exactly its ids, in order (E3). */
export const answersIds = (answer: Answer, batch: Batch) =>
  JSON.stringify((answer.body as { event_ids?: unknown } | undefined)?.event_ids) === JSON.stringify(batch.ids);

// ----------------------------------------------------------------------------- the server

const LOG_LEVEL = "warn";
// one log line per request would only slow the server down

/** Starts `agentmon serve` on the file, with its OTLP/gRPC port too; `grpc` is that port's host:port. */
export function start(t: Test, db: string, apiKey: string): Promise<{ server: Agentmon; base: string; grpc: string }> {
  const env = childEnv({
    AGENTMON_DB: db,
    PORT: "0",
    AGENTMON_OTLP_GRPC_PORT: "0",
    AGENTMON_API_KEY: apiKey,
    AGENTMON_JWT_SECRET: JWT_SECRET,
    AGENTMON_LOG_LEVEL: LOG_LEVEL,
  });
  const server = agentmon(t, ["serve"], env);
  // The gRPC line comes before the listening line.
  return server.waitFor(LISTENING).then((match) => ({
    server,
    base: match[1] as string,
    grpc: /agentmon: OTLP\/gRPC on http:\/\/(\S+)/.exec(server.stdout())?.[1] ?? "",
  }));
}

// ----------------------------------------------------------------------------- one round of load

/** What became of one batch a client sent; `problem` is an answer the test does not accept. */
export interface Sent {
  /** 0: no answer (the kill); 200: acknowledged; anything else: refused. */
  status: number;
  /** Events (or spans) in the batch. */
  items: number;
  problem?: string;
}

/** A client's next batch, made, sent and its state recorded. */
export type SendNext = (base: string) => Promise<Sent>;

/** A v2 client's next create_events batch (test/crash/batches.ts). */
export const v2Sender =
  (client: Client): SendNext =>
  async (base) => {
    const batch = nextBatch(client);
    const answer = await sendBatch(base, client, batch);
    const sent: Sent = { status: answer.status, items: batch.ids.length };
    if (answer.status === 0) return sent;
    batch.state = answer.status === 200 ? "acked" : "refused";
    if (answer.status === 200 && !answersIds(answer, batch)) {
      sent.problem = `${batch.ids[0]}: 200 ${JSON.stringify(answer.body)}`;
    } else if (answer.status !== 200 && answer.status !== 503) {
      sent.problem = `${batch.ids[0]}: ${answer.status} ${JSON.stringify(answer.body).slice(0, 300)}`;
    }
    return sent;
  };

interface RoundResult {
  acked: number;
  ackedItems: number;
  killDelayMs: number;
  /** Answers that were neither 200 (as expected) nor the 503 an overloaded server may give. */
  unexpected: string[];
}

/**
 * Runs the clients against `base` until the server is killed: once enough batches are
 * acknowledged, a seeded random delay, then SIGKILL while requests are in flight.
 */
export async function loadAndKill(t: Test, server: Agentmon, base: string, senders: SendNext[], killRng: Random) {
  const result: RoundResult = { acked: 0, ackedItems: 0, killDelayMs: killRng.int(...KILL_DELAY_MS), unexpected: [] };
  let killed = false;
  let enough: () => void = () => {};
  const enoughAcked = new Promise<void>((resolve) => {
    enough = resolve;
  });

  const drive = async (sendNext: SendNext) => {
    for (let sent = 0; sent < MAX_BATCHES_PER_ROUND && !killed; sent++) {
      const answer = await sendNext(base);
      if (answer.problem !== undefined) result.unexpected.push(answer.problem);
      if (answer.status === 0) return; // the server is gone: this batch's fate is unknown
      if (answer.status === 200) {
        result.acked++;
        result.ackedItems += answer.items;
        if (result.acked >= ACKED_BEFORE_KILL_TIMER) enough();
        continue;
      }
      if (answer.status !== 503) return;
      await sleep(50); // overloaded: give it a moment, as a client honouring Retry-After would
    }
  };

  const loops = Promise.all(senders.map(drive));
  await Promise.race([enoughAcked, loops]);
  await sleep(result.killDelayMs);
  server.child.kill("SIGKILL");
  killed = true;
  const exit = await server.exited();
  t.equal(exit.signal, "SIGKILL", "the server died of SIGKILL, not of anything else");
  await loops;
  return result;
}
