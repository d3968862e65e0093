/**
 * What the analytics queries cost (docs/decisions/024-analytics.md): `npx tsx
 * scripts/bench-analytics.ts --db F` (or `--database-url postgres://...`) on a data set made by
 * scripts/dataset.ts. Runs each query through the Store (no HTTP), a few times to warm up, then
 * `--runs` times (default 20), and prints p50 and p99 in ms per query, with the rows it read:
 *   series-30d    a 30-day daily series in Europe/Lisbon ending now (no filter: from the rollups,
 *                 docs/decisions/026-analytics-rollups.md)
 *   series-30d-exact  the same series by the exact scan (a filter keeping every session: min_duration_us 0)
 *   series-48h    a 48-hour hourly series
 *   by-<x>        a breakdown over the last 30 days, top 10 by cost, for each grouping
 *   series-30d-tag  the series with a tag filter
 */
import { parseArgs } from "node:util";
import type { Store } from "../db/store.ts";
import { seriesBuckets } from "../domain/analytics.ts";

const { values } = parseArgs({
  options: {
    db: { type: "string" },
    "database-url": { type: "string" },
    runs: { type: "string", default: "20" },
    only: { type: "string" },
  },
});

let store: Store;
if (values["database-url"]) {
  const { openPostgresStore } = await import("../db/postgres/store.ts");
  store = await openPostgresStore({ url: values["database-url"] });
} else if (values.db) {
  const { openDb } = await import("../db/sqlite/open.ts");
  const { sqliteStore } = await import("../db/sqlite/store.ts");
  store = sqliteStore(openDb(values.db), { checkpointer: false });
} else throw new Error("give --db <file> or --database-url <url>");

const [project] = await store.listProjects();
if (!project) throw new Error("no project: make the data set with scripts/dataset.ts first");
const p = project.id;
const nowUs = Date.now() * 1000;
const series = (bucket: "day" | "hour") => {
  const made = seriesBuckets(bucket, "Europe/Lisbon", nowUs, undefined, undefined);
  if (!made.ok) throw new Error(made.message);
  return made.ranges;
};
const month = { from_us: nowUs - 30 * 86_400_000_000, to_us: nowUs };

const queries: [string, () => Promise<unknown>][] = [
  ["series-30d", () => store.analyticsSeries(p, {}, series("day"))],
  ["series-30d-exact", () => store.analyticsSeries(p, { min_duration_us: 0 }, series("day"))],
  ["series-48h", () => store.analyticsSeries(p, {}, series("hour"))],
  ["series-30d-tag", () => store.analyticsSeries(p, { tags: ["prod"] }, series("day"))],
  ...(["model", "type", "tool", "end_state", "tag", "agent"] as const).map(
    (by) =>
      [`by-${by}`, () => store.analyticsBreakdown(p, month, { by, sort: "cost", limit: 10 })] as [
        string,
        () => Promise<unknown>,
      ],
  ),
];

const runs = Number(values.runs);
console.log("query            p50 ms   p99 ms   sessions counted");
for (const [name, run] of queries) {
  if (values.only && !name.startsWith(values.only)) continue;
  for (let i = 0; i < 2; i += 1) await run();
  const times: number[] = [];
  let answer: unknown;
  for (let i = 0; i < runs; i += 1) {
    const start = performance.now();
    answer = await run();
    times.push(performance.now() - start);
  }
  times.sort((a, b) => a - b);
  const at = (q: number) => (times[Math.min(times.length - 1, Math.ceil(times.length * q) - 1)] as number).toFixed(1);
  const counted = Array.isArray(answer)
    ? answer.reduce((n: number, m: { sessions: number }) => n + m.sessions, 0)
    : (answer as { items: { sessions: number }[] }).items.reduce((n, g) => n + g.sessions, 0);
  console.log(`${name.padEnd(16)} ${at(0.5).padStart(7)}  ${at(0.99).padStart(7)}   ${counted}`);
}
await store.close();
