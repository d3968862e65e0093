/**
 * One round of the crash test (test/crash.test.ts): `agentmon serve` started as a real process,
 * the clients sending batches over real HTTP, and SIGKILL at a seeded moment while requests are in
 * flight.
 */
import { setTimeout as sleep } from "node:timers/promises";
import type { Test } from "tap";
import { type Agentmon, agentmon, childEnv, LISTENING } from "../process.ts";
import { type Batch, type Client, nextBatch, type Random } from "./batches.ts";

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

interface Answer {
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

export function start(t: Test, db: string, apiKey: string): Promise<{ server: Agentmon; base: string }> {
  const env = childEnv({
    AGENTMON_DB: db,
    PORT: "0",
    AGENTMON_API_KEY: apiKey,
    AGENTMON_JWT_SECRET: JWT_SECRET,
    AGENTMON_LOG_LEVEL: LOG_LEVEL,
  });
  const server = agentmon(t, ["serve"], env);
  return server.waitFor(LISTENING).then((match) => ({ server, base: match[1] as string }));
}

// ----------------------------------------------------------------------------- one round of load

interface RoundResult {
  acked: number;
  ackedEvents: number;
  killDelayMs: number;
  /** Answers that were neither 200 nor the 503 an overloaded server may give. */
  unexpected: string[];
}

/**
 * Runs the clients against `base` until the server is killed: once enough batches are
 * acknowledged, a seeded random delay, then SIGKILL while requests are in flight.
 */
export async function loadAndKill(t: Test, server: Agentmon, base: string, clients: Client[], killRng: Random) {
  const result: RoundResult = { acked: 0, ackedEvents: 0, killDelayMs: killRng.int(...KILL_DELAY_MS), unexpected: [] };
  let killed = false;
  let enough: () => void = () => {};
  const enoughAcked = new Promise<void>((resolve) => {
    enough = resolve;
  });

  const drive = async (client: Client) => {
    for (let sent = 0; sent < MAX_BATCHES_PER_ROUND && !killed; sent++) {
      const batch = nextBatch(client);
      const answer = await sendBatch(base, client, batch);
      if (answer.status === 0) return; // the server is gone: this batch's fate is unknown
      if (answer.status === 200) {
        batch.state = "acked";
        result.acked++;
        result.ackedEvents += batch.ids.length;
        if (!answersIds(answer, batch)) result.unexpected.push(`${batch.ids[0]}: 200 ${JSON.stringify(answer.body)}`);
        if (result.acked >= ACKED_BEFORE_KILL_TIMER) enough();
        continue;
      }
      batch.state = "refused";
      if (answer.status !== 503) {
        result.unexpected.push(`${batch.ids[0]}: ${answer.status} ${JSON.stringify(answer.body).slice(0, 300)}`);
        return;
      }
      await sleep(50); // overloaded: give it a moment, as a client honouring Retry-After would
    }
  };

  const loops = Promise.all(clients.map(drive));
  await Promise.race([enoughAcked, loops]);
  await sleep(result.killDelayMs);
  server.child.kill("SIGKILL");
  killed = true;
  const exit = await server.exited();
  t.equal(exit.signal, "SIGKILL", "the server died of SIGKILL, not of anything else");
  await loops;
  return result;
}
