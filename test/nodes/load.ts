/**
 * The kill -9 run of test/nodes.test.ts: many clients send create_events batches with client
 * event ids (test/crash/batches.ts) through the nodes in turn; once enough batches are
 * acknowledged, one node is killed with SIGKILL while requests are in flight to it, and the
 * clients keep going (a run without such a moment never kills it, and the test says so). A batch that gets no answer (the killed node: connection refused or cut)
 * or a 503 (a node too busy) is sent again, the same bytes, to the next node, as a real client
 * behind a balancer would, until one answers 200. Each client records what was acknowledged.
 */
import { setTimeout as sleep } from "node:timers/promises";
import { type Batch, type Client, nextBatch } from "../crash/batches.ts";
import { type Node, withJwt } from "./cluster.ts";

/** Tries of one batch before the test gives up on it (each on the next node). */
const MAX_TRIES = 30;

export interface LoadPlan {
  nodes: Node[];
  clients: Client[];
  batchesPerClient: number;
  /**
   * The victim is killed once this many batches have been acknowledged, by any node, at the first
   * acknowledgement after that while requests to the victim are in flight.
   */
  killAfterAcked: number;
  victim: Node;
}

export interface LoadResult {
  /** Batches and their events acknowledged with a 200 that listed the batch's ids. */
  ackedBatches: number;
  ackedEvents: number;
  /** Acknowledged batches when the kill came. */
  ackedAtKill: number;
  /** Requests sent after the kill, and the 200s each node gave to them. */
  requestsAfterKill: number;
  okAfterKill: Map<string, number>;
  /** Requests that got no answer, and 503s: each was sent again to the next node. */
  connectionErrors: number;
  busy: number;
  /** Of the requests without an answer, those sent before the kill: in flight to the victim when it died. */
  inFlightAtKill: number;
  /** Answers the test does not accept (anything but 200 with the batch's ids, no answer, or 503). */
  unexpected: string[];
  ms: number;
}

export async function loadAndKill(plan: LoadPlan): Promise<LoadResult> {
  const { nodes, victim } = plan;
  const result: LoadResult = {
    ackedBatches: 0,
    ackedEvents: 0,
    ackedAtKill: -1,
    requestsAfterKill: 0,
    okAfterKill: new Map(nodes.map((node) => [node.name, 0])),
    connectionErrors: 0,
    busy: 0,
    inFlightAtKill: 0,
    unexpected: [],
    ms: 0,
  };
  let killed = false;
  const started = Date.now();
  const inFlight = new Map(nodes.map((node) => [node, 0]));
  const track = (node: Node, by: number) => inFlight.set(node, (inFlight.get(node) ?? 0) + by);

  const send = async (client: Client, batch: Batch, first: number) => {
    for (let attempt = 0; attempt < MAX_TRIES; attempt++) {
      const node = nodes[(first + attempt) % nodes.length] as Node;
      const afterKill = killed;
      if (afterKill) result.requestsAfterKill++;
      track(node, 1);
      const answer = await withJwt(node, "/v2/create_events", batch.body, client.jwt);
      track(node, -1);
      if (answer.status === 0) {
        result.connectionErrors++;
        if (!afterKill) result.inFlightAtKill++;
        continue;
      }
      if (answer.status === 503) {
        result.busy++;
        await sleep(50);
        continue;
      }
      if (answer.status !== 200 || JSON.stringify(answer.body.event_ids) !== JSON.stringify(batch.ids)) {
        result.unexpected.push(`${batch.ids[0]} via ${node.name}: ${answer.status} ${JSON.stringify(answer.body)}`);
        return;
      }
      batch.state = "acked";
      if (afterKill) result.okAfterKill.set(node.name, (result.okAfterKill.get(node.name) ?? 0) + 1);
      result.ackedBatches++;
      result.ackedEvents += batch.ids.length;
      if (!killed && result.ackedBatches >= plan.killAfterAcked && (inFlight.get(victim) ?? 0) > 0) {
        // While the other clients' requests are in flight, some of them to the victim.
        victim.server.child.kill("SIGKILL");
        killed = true;
        result.ackedAtKill = result.ackedBatches;
      }
      return;
    }
    result.unexpected.push(`${batch.ids[0]}: no node answered 200 in ${MAX_TRIES} tries`);
  };

  await Promise.all(
    plan.clients.map(async (client) => {
      for (let b = 0; b < plan.batchesPerClient; b++) await send(client, nextBatch(client), client.n + b);
    }),
  );
  result.ms = Date.now() - started;
  return result;
}
