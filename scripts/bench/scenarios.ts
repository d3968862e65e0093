/** B3 (session lifecycle) and B5 (memory) of `npm run bench`. */
import { randomUUID } from "node:crypto";
import autocannon from "autocannon";
import { batchBody, openSessions, type Server } from "../load.ts";

export interface ScenarioOptions {
  seconds: number;
  connections: number;
  log: (line: string) => void;
}

/** B3: each connection runs whole sessions: create_session, 10 × create_events(5), update_session. */
export async function lifecycle(server: Server, { seconds: SECONDS, connections: CONNECTIONS }: ScenarioOptions) {
  const perSession = 12;
  const fiveEvents = batchBody(5);
  /** What one virtual client keeps between the calls of its session. */
  const ctx = (context: object) => context as { id?: string; jwt?: string };
  const result = await autocannon({
    url: server.url,
    connections: CONNECTIONS,
    duration: SECONDS,
    requests: [
      {
        method: "POST",
        path: "/v2/create_session",
        setupRequest: (request, context) => {
          ctx(context).id = randomUUID();
          return {
            ...request,
            headers: { "content-type": "application/json", "x-agentmon-api-key": server.key },
            body: JSON.stringify({ session: { id: ctx(context).id, tags: ["bench"] } }),
          };
        },
        onResponse: (_status, body, context) => {
          ctx(context).jwt = (JSON.parse(body) as { jwt: string }).jwt;
        },
      },
      ...Array.from({ length: 10 }, () => ({
        method: "POST" as const,
        path: "/v2/create_events",
        setupRequest: (request: autocannon.Request, context: object) => ({
          ...request,
          headers: { "content-type": "application/json", authorization: `Bearer ${ctx(context).jwt}` },
          body: fiveEvents(),
        }),
      })),
      {
        method: "POST",
        path: "/v2/update_session",
        setupRequest: (request, context) => ({
          ...request,
          headers: { "content-type": "application/json", authorization: `Bearer ${ctx(context).jwt}` },
          body: JSON.stringify({ session: { end_state: "Success", end_timestamp: new Date().toISOString() } }),
        }),
      },
    ],
  });
  return {
    sessionsPerS: result.requests.total / perSession / SECONDS,
    p99: result.latency.p99,
    failed: result.non2xx + result.errors,
  };
}

/** B5: ingests `total` events in 100-event calls; RSS at the half and at the end. */
export async function memory(server: Server, total: number, { connections: CONNECTIONS, log }: ScenarioOptions) {
  const jwts = await openSessions(server, CONNECTIONS);
  const body = batchBody(100);
  const half = total / 2 / 100;
  const run = (amount: number) =>
    autocannon({
      url: `${server.url}/v2/create_events`,
      connections: CONNECTIONS,
      amount,
      requests: [
        {
          method: "POST",
          setupRequest: (request) => ({
            ...request,
            headers: {
              "content-type": "application/json",
              authorization: `Bearer ${jwts[Math.floor(Math.random() * jwts.length)]}`,
            },
            body: body(),
          }),
        },
      ],
    });
  await run(half);
  const rssHalf = server.rss();
  log(`  RSS after ${(total / 2).toLocaleString("en-US")} events: ${Math.round(rssHalf / 1024 / 1024)} MB`);
  await run(half);
  const rssEnd = server.rss();
  return { rssHalf, rssEnd };
}
