/**
 * `npm run soak [-- --minutes N] [-- --per-call N]`: finds agentmon's maximum ingest rate on this
 * machine, then holds it at half that rate for N minutes (10 by default) and reports, minute by
 * minute, the throughput, the p50/p99 latency and the server's resident memory. Both p99 and RSS
 * should stay flat: a rising RSS is a leak, a rising p99 a queue or a slowing store.
 * The figures are also written to soak.json.
 */
import { writeFileSync } from "node:fs";
import { cpus } from "node:os";
import { parseArgs } from "node:util";
import { ingest, openSessions, startAgentmon } from "./load.ts";

const { values } = parseArgs({
  options: {
    minutes: { type: "string", default: "10" },
    "per-call": { type: "string", default: "10" },
    connections: { type: "string", default: "20" },
  },
});
const minutes = Number(values.minutes);
const perCall = Number(values["per-call"]);
const connections = Number(values.connections);

const mb = (bytes: number) => Math.round(bytes / 1024 / 1024);

const server = await startAgentmon();
try {
  const jwts = await openSessions(server, connections);
  process.stdout.write(`agentmon ${server.url}, pid ${server.child.pid}; measuring the maximum rate for 15 s…\n`);
  const max = await ingest(server, jwts, { connections, seconds: 15, perCall });
  const rate = Math.max(1, Math.floor(max.rps / 2));
  process.stdout.write(
    `maximum: ${Math.round(max.rps)} calls/s (${Math.round(max.rps * perCall)} events/s), p99 ${max.p99} ms; ` +
      `soaking at ${rate} calls/s (${rate * perCall} events/s) for ${minutes} min\n\n`,
  );

  const rows: Record<string, number>[] = [];
  const header = "minute  calls/s  events/s  p50 ms  p99 ms  RSS MB  non-2xx  errors";
  process.stdout.write(`${header}\n`);
  for (let minute = 1; minute <= minutes; minute++) {
    const run = await ingest(server, jwts, { connections, seconds: 60, perCall, rate });
    const row = {
      minute,
      calls_per_s: Math.round(run.rps),
      events_per_s: Math.round(run.rps * perCall),
      p50_ms: run.p50,
      p99_ms: run.p99,
      rss_mb: mb(server.rss()),
      non2xx: run.non2xx,
      errors: run.errors,
    };
    rows.push(row);
    process.stdout.write(
      `${String(minute).padStart(6)}  ${String(row.calls_per_s).padStart(7)}  ${String(row.events_per_s).padStart(8)}  ` +
        `${String(row.p50_ms).padStart(6)}  ${String(row.p99_ms).padStart(6)}  ${String(row.rss_mb).padStart(6)}  ` +
        `${String(row.non2xx).padStart(7)}  ${String(row.errors).padStart(6)}\n`,
    );
  }

  const first = rows[0];
  const last = rows[rows.length - 1];
  const p99s = rows.map((r) => r.p99_ms ?? 0);
  const summary = {
    max_calls_per_s: Math.round(max.rps),
    soak_calls_per_s: rate,
    events_per_call: perCall,
    minutes,
    rss_first_mb: first?.rss_mb,
    rss_last_mb: last?.rss_mb,
    rss_growth: first && last ? Number(((last.rss_mb ?? 0) / (first.rss_mb ?? 1)).toFixed(2)) : null,
    p99_max_over_min: Number((Math.max(...p99s) / Math.max(1, Math.min(...p99s))).toFixed(2)),
    failed_calls: rows.reduce((sum, r) => sum + (r.non2xx ?? 0) + (r.errors ?? 0), 0),
  };
  process.stdout.write(
    `\nRSS ${summary.rss_first_mb} MB → ${summary.rss_last_mb} MB (×${summary.rss_growth}); ` +
      `p99 highest/lowest minute ×${summary.p99_max_over_min}; failed calls ${summary.failed_calls}\n`,
  );
  writeFileSync("soak.json", `${JSON.stringify({ machine: machine(), summary, minutes: rows }, null, 2)}\n`);
  process.stdout.write("written to soak.json\n");
} finally {
  await server.stop();
}

function machine() {
  return { node: process.version, cpus: cpus().length, cpu: cpus()[0]?.model ?? "unknown" };
}
