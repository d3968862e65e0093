/** What the cost tests (test/cost.*.test.ts) share: reading and writing through the API. */
import { API_KEY, type TestApp } from "./helper.ts";

export const read = (api: TestApp, url: string) =>
  api.inject({ method: "GET", url, headers: { "x-agentmon-api-key": API_KEY } });

export async function send(api: TestApp, url: string, body: unknown, jwt: string) {
  const res = await api.withJwt(url, body, jwt);
  if (res.statusCode !== 200) throw new Error(`${url} answered ${res.statusCode}: ${res.body}`);
  return res.json();
}

/** The read API's view of one event: its cost_source and cost. */
export async function costOf(api: TestApp, sessionId: string, eventId: string) {
  const events = (await read(api, `/v2/sessions/${encodeURIComponent(sessionId)}/events?limit=1000`)).json().events;
  const event = events.find((e: { id: string }) => e.id === eventId);
  return { cost_source: event?.cost_source, cost: event?.cost };
}
