/**
 * Several agentmon nodes for test/nodes.test.ts: `agentmon serve` started three times as real
 * processes on one PostgreSQL database, the `agentmon keys` commands run as child processes
 * against that database, and plain HTTP calls to any node. A call that gets no answer (connection
 * refused or reset, as a killed node gives) answers status 0 instead of throwing, so that a
 * client can try another node as a real one would.
 */
import type { Test } from "tap";
import { type Agentmon, agentmon, childEnv, LISTENING, WAIT_MS } from "../process.ts";

export interface Node {
  name: string;
  base: string;
  server: Agentmon;
}

export type Json = Record<string, unknown>;

export interface Answer {
  /** 0 when no answer came: the connection was refused or cut. */
  status: number;
  body: Json;
  headers: Headers | undefined;
}

/**
 * `agentmon serve --port 0 --database-url <url>` started once per name, all at the same time, each
 * with `env` (and nothing of this process's AGENTMON_ settings); answers once every one listens.
 * `url` may be given per node (e.g. with its own `?application_name=`, which node-postgres takes
 * over the store's own, so that pg_stat_activity tells the nodes' connections apart).
 */
export async function startNodes(
  t: Pick<Test, "teardown">,
  url: string | ((name: string) => string),
  names: string[],
  env: Record<string, string>,
): Promise<Node[]> {
  const started = names.map((name) => ({
    name,
    server: agentmon(
      t,
      ["serve", "--port", "0", "--database-url", typeof url === "string" ? url : url(name)],
      childEnv(env),
    ),
  }));
  return Promise.all(
    started.map(async ({ name, server }) => ({ name, server, base: (await server.waitFor(LISTENING))[1] as string })),
  );
}

/** `agentmon <args> --database-url <url>` as a child process, run to its end. */
export async function command(t: Pick<Test, "teardown">, args: string[], url: string) {
  const child = agentmon(t, [...args, "--database-url", url], childEnv({}));
  const exit = await child.exited();
  return { code: exit.code, stdout: child.stdout().trim(), stderr: child.stderr().trim() };
}

/** One HTTP call to a node; a JSON body is sent when `body` is given. */
export async function call(
  node: Node,
  method: "GET" | "POST",
  path: string,
  body: string | Json | undefined,
  headers: Record<string, string> = {},
): Promise<Answer> {
  try {
    const res = await fetch(`${node.base}${path}`, {
      method,
      headers: body === undefined ? headers : { "content-type": "application/json", ...headers },
      ...(body === undefined ? {} : { body: typeof body === "string" ? body : JSON.stringify(body) }),
      signal: AbortSignal.timeout(WAIT_MS),
    });
    const text = await res.text();
    try {
      return { status: res.status, body: JSON.parse(text) as Json, headers: res.headers };
    } catch {
      return { status: 0, body: { cut: text }, headers: res.headers }; // a body cut short is no answer
    }
  } catch (error) {
    return { status: 0, body: { error: String((error as Error).cause ?? error) }, headers: undefined };
  }
}

/** The API key's headers, from a client address given through the trusted proxy header when `from` is. */
export const keyHeaders = (key: string, from?: string): Record<string, string> => ({
  "x-agentmon-api-key": key,
  ...(from === undefined ? {} : { "x-forwarded-for": from }),
});

export const withKey = (node: Node, path: string, body: Json, key: string, from?: string) =>
  call(node, "POST", path, body, keyHeaders(key, from));

export const withJwt = (node: Node, path: string, body: string | Json, jwt: string) =>
  call(node, "POST", path, body, { authorization: `Bearer ${jwt}` });

export const read = (node: Node, path: string, key: string, from?: string) =>
  call(node, "GET", path, undefined, keyHeaders(key, from));

/** create_session through `node`; answers the JWT ("" when refused). */
export async function openSession(node: Node, id: string, key: string): Promise<{ answer: Answer; jwt: string }> {
  const answer = await withKey(node, "/v2/create_session", { session: { id } }, key);
  return { answer, jwt: answer.status === 200 ? String(answer.body.jwt) : "" };
}

/** Every event of a session, through one node's read API, page by page (1000 a page). */
export async function allEvents(node: Node, sessionId: string, key: string): Promise<Json[]> {
  const events: Json[] = [];
  let cursor: string | null = null;
  do {
    const query: string = cursor === null ? "" : `&cursor=${encodeURIComponent(cursor)}`;
    const page = await read(node, `/v2/sessions/${encodeURIComponent(sessionId)}/events?limit=1000${query}`, key);
    if (page.status !== 200) throw new Error(`${node.name}: events of ${sessionId}: ${JSON.stringify(page.body)}`);
    events.push(...(page.body.events as Json[]));
    cursor = page.body.next_cursor as string | null;
  } while (cursor !== null);
  return events;
}

/** How many times each id occurs. */
export function countIds(ids: Iterable<string>): Map<string, number> {
  const counts = new Map<string, number>();
  for (const id of ids) counts.set(id, (counts.get(id) ?? 0) + 1);
  return counts;
}
