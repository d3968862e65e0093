/**
 * `agentmon rebuild`: every projection (totals, rollups, the search index, score analytics: docs/decisions/
 * 033-projections.md) emptied and made again from the raw rows, on either engine, printing its
 * progress. The work is the projector's queue, which is durable: stopped halfway, it is finished
 * by `agentmon rebuild --resume`, by a server, or by the first read that needs the projections.
 * A server may run meanwhile; its reads stay exact (they catch up first).
 */
import type { Config, Output } from "./config.ts";
import { openCommandStore } from "./storage.ts";

export async function rebuild(config: Config, io: Output, resume: boolean) {
  const store = await openCommandStore(config);
  try {
    const started = Date.now();
    if (!resume) await store.rebuildProjections();
    let left = (await store.stats()).projection?.backlog ?? 0;
    const total = left;
    io.err(`agentmon: ${resume ? "resuming" : "rebuilding"} the projections: ${total} changes to project`);
    let reported = Date.now();
    while (left > 0) {
      left = await store.projectBatch();
      if (Date.now() - reported >= 2000) {
        reported = Date.now();
        io.err(`agentmon: ${total - left} of ${total} projected`);
      }
    }
    io.out(
      `Projections rebuilt from the raw rows: ${total} changes projected in ${((Date.now() - started) / 1000).toFixed(1)} s.`,
    );
    return 0;
  } finally {
    await store.close();
  }
}
