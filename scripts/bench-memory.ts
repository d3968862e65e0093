/**
 * `npm run bench:memory [-- --count N]`: the server's resident memory after N spans ingested over
 * OTLP protobuf against after N v2 events (default N = 1 000 000). Target: OTLP ≤ 1.2 × v2.
 *
 * Each side gets a fresh `agentmon serve` (`npm start`'s command, a file database in a fresh
 * temporary folder, scripts/load.ts) and is loaded by autocannon from this process, 50
 * connections, as fast as they go:
 * - v2: create_events calls of 100 events each (B1's bodies), spread over 50 sessions;
 * - OTLP: POST /v1/traces, protobuf, 100 spans of 4 new traces each (B7's bodies, scripts/bench/otlp.ts).
 * A request refused (a 503 while the server's event loop lags, a timeout) is sent again, as an
 * exporter would, until N were answered 200; the refusals are printed.
 * Then the server is left idle until its RSS (/proc/<pid>/status VmRSS) settles: two samples a
 * second apart within 2 % of each other (at most 30 samples). Nothing can make the server
 * collect garbage from outside; what a settled, idle server holds is what stays.
 */
import { parseArgs } from "node:util";
import autocannon from "autocannon";
import { otlpSend, SPANS_PER_REQUEST, untilAccepted } from "./bench/otlp.ts";
import { batchBody, openSessions, type Server, startAgentmon } from "./load.ts";

const { values } = parseArgs({ options: { count: { type: "string", default: "1000000" } } });
const COUNT = Number(values.count);
if (!Number.isInteger(COUNT) || COUNT < SPANS_PER_REQUEST) throw new Error(`--count must be an integer ≥ 100`);
const CONNECTIONS = 50;
const PER_CALL = 100;
const TARGET = 1.2;

const log = (line: string) => process.stdout.write(`${line}\n`);
const mb = (bytes: number) => `${(bytes / 1024 / 1024).toFixed(1)} MB`;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** RSS once two samples a second apart agree within 2 % (or after 30 samples): the last sample. */
async function settledRss(server: Server) {
  let previous = server.rss();
  for (let i = 1; i < 30; i++) {
    await sleep(1000);
    const now = server.rss();
    if (Math.abs(now - previous) <= 0.02 * previous) return { rss: now, seconds: i };
    previous = now;
  }
  return { rss: previous, seconds: 30 };
}

async function v2Events(server: Server) {
  const jwts = await openSessions(server, CONNECTIONS);
  const body = batchBody(PER_CALL);
  let turn = 0;
  return untilAccepted(Math.ceil(COUNT / PER_CALL), (amount, onResponse) =>
    autocannon({
      url: `${server.url}/v2/create_events`,
      // autocannon refuses more connections than requests (a last round of retries is small).
      connections: Math.min(CONNECTIONS, amount),
      amount,
      requests: [
        {
          method: "POST",
          setupRequest: (request) => ({
            ...request,
            headers: { "content-type": "application/json", authorization: `Bearer ${jwts[turn++ % jwts.length]}` },
            body: body(),
          }),
          onResponse,
        },
      ],
    }),
  );
}

type Sent = Awaited<ReturnType<typeof untilAccepted>>;

async function side(name: string, send: (server: Server) => Promise<Sent>) {
  const server = await startAgentmon();
  try {
    const idle = server.rss();
    const started = performance.now();
    const sent = await send(server);
    const seconds = (performance.now() - started) / 1000;
    const peak = server.rss();
    const settled = await settledRss(server);
    log(
      `  ${name}: ${sent.accepted} requests answered 200 in ${seconds.toFixed(0)} s (${failures(sent)}); RSS idle ${mb(idle)}, ` +
        `right after ${mb(peak)}, settled ${mb(settled.rss)} (after ${settled.seconds} s)`,
    );
    return { ...sent, seconds, idle, peak, rss: settled.rss };
  } finally {
    await server.stop();
  }
}

const failures = (sent: Sent) =>
  Object.keys(sent.failed).length === 0
    ? "none refused"
    : `refused and sent again: ${Object.entries(sent.failed)
        .map(([why, n]) => `${n} × ${why}`)
        .join(", ")}`;

log(
  `agentmon bench:memory: ${COUNT.toLocaleString("en-US")} of each, ${PER_CALL} per request, ${CONNECTIONS} connections`,
);
const v2 = await side("v2 events", v2Events);
const otlp = await side("OTLP spans", (server) => otlpSend(server, COUNT, CONNECTIONS));
const ratio = otlp.rss / v2.rss;
log(
  `\nRSS after ${COUNT.toLocaleString("en-US")}: OTLP ${mb(otlp.rss)}, v2 ${mb(v2.rss)}: ${ratio.toFixed(2)}× ` +
    `(target ≤ ${TARGET}×: ${ratio <= TARGET ? "met" : "NOT MET"})`,
);
