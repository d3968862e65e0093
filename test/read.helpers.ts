/**
 * What the read API tests (test/read.*.test.ts) share: reading with a key, writing events through
 * the write API, following pages.
 */
import type { LightMyRequestResponse } from "fastify";
import type { Test } from "tap";
import { API_KEY, isInvalid, type TestApp } from "./helper.ts";

export const at = (ms: number) => new Date(ms).toISOString();
export const T0 = Date.UTC(2026, 10, 22, 5, 0, 0);

/** GET (or another method) with an API key, X-Agentmon-Api-Key unless another header is named. */
export function read(api: TestApp, url: string, key = API_KEY, method: "GET" | "DELETE" | "HEAD" = "GET") {
  return api.inject({ method, url, headers: { "x-agentmon-api-key": key } });
}

export const notFound = (id: string) => ({ error: "Not found", message: `No session ${id} in this project` });

/** A 400 of the read API naming exactly these parameters. */
export function isBadParameter(t: Test, res: LightMyRequestResponse, paths: string[]) {
  const body = isInvalid(t, res, paths);
  t.match(body.message, /^The request is not valid: /, "the message speaks of the request, not a body");
  return body;
}

export async function createEvents(api: TestApp, jwt: string, events: unknown[]) {
  for (let i = 0; i < events.length; i += 1000) {
    const res = await api.withJwt("/v2/create_events", { events: events.slice(i, i + 1000) }, jwt);
    if (res.statusCode !== 200) throw new Error(`create_events answered ${res.statusCode}: ${res.body}`);
  }
}

/** Every page of a list, following next_cursor; answers the rows and how many pages it took. */
export async function allPages<T>(
  api: TestApp,
  url: string,
  key: "sessions" | "events",
  each?: (page: number) => unknown,
) {
  const rows: T[] = [];
  let cursor: string | null = null;
  let pages = 0;
  do {
    const sep = url.includes("?") ? "&" : "?";
    const res = await read(api, cursor === null ? url : `${url}${sep}cursor=${encodeURIComponent(cursor)}`);
    if (res.statusCode !== 200) throw new Error(`${url} answered ${res.statusCode}: ${res.body}`);
    const body = res.json();
    rows.push(...body[key]);
    cursor = body.next_cursor;
    pages += 1;
    await each?.(pages);
    if (pages > 1000) throw new Error("no end to the pages");
  } while (cursor !== null);
  return { rows, pages };
}

export const ids = (rows: { session?: { id: string }; id?: string }[]) => rows.map((r) => r.session?.id ?? r.id);

// ----------------------------------------------------------------------------------- auth, isolation

export const OPERATIONS: [string, "GET" | "DELETE", string][] = [
  ["getSession", "GET", ""],
  ["listSessionEvents", "GET", "/events"],
  ["getSessionStats", "GET", "/stats"],
  ["exportSession", "GET", "/export"],
  ["deleteSession", "DELETE", ""],
];
