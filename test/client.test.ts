/**
 * The TypeScript client (clients/typescript, issue 17) against a real agentmon on a real port:
 * a session recorded and read back through the ergonomic API, the JWT kept and renewed for the
 * caller, refusals as AgentmonError (G2), and the raw openapi-fetch client. Imported by relative
 * path: node_modules/@agentmon/client may point at another checkout.
 */
import t, { type Test } from "tap";
import { AgentmonError, agentmon, createAgentmonClient } from "../clients/typescript/index.ts";
import { checkFetched } from "./conformance.ts";
import { API_KEY, build, decodeJwt, hs256Jwt, INVALID_JWT, OTHER_PROJECT_KEY, UNKNOWN_KEY } from "./helper.ts";

/** agentmon listening on 127.0.0.1, closed at teardown; answers its base URL. */
async function serve(t: Test): Promise<string> {
  const api = await build(t);
  return api.app.listen({ port: 0, host: "127.0.0.1" });
}

interface Sent {
  method: string;
  path: string;
  status: number;
  headers: Headers;
}

/** A fetch that records every request's method, path, status and headers before passing it on. */
function recordingFetch(sent: Sent[], answer?: (request: Request) => Response | undefined) {
  return async (request: Request): Promise<Response> => {
    const path = new URL(request.url).pathname;
    const headers = new Headers(request.headers);
    const stubbed = answer?.(request);
    const response = stubbed ?? (await fetch(request));
    // The server's own answers go through the conformance layer (decision 030); stubs are the test's.
    if (stubbed === undefined) await checkFetched(request.method, request.url, response);
    sent.push({ method: request.method, path, status: response.status, headers });
    return response;
  };
}

/** A JWT of the session's claims that expired an hour ago, signed with the test server's secret. */
function expiredJwtLike(jwt: string): string {
  const { claims } = decodeJwt(jwt);
  const iat = Math.floor(Date.now() / 1000) - 25 * 60 * 60;
  return hs256Jwt({
    session_id: String(claims.session_id),
    project_id: String(claims.project_id),
    key_id: String(claims.key_id),
    iat,
  });
}

async function rejection(t: Test, promise: Promise<unknown>): Promise<AgentmonError> {
  try {
    await promise;
  } catch (error) {
    t.ok(error instanceof AgentmonError, `an AgentmonError (got ${String(error)})`);
    return error as AgentmonError;
  }
  t.fail("the call was not refused");
  throw new Error("unreachable");
}

t.test("a session recorded with the client (agent, events, update, end) reads back the same", async (t) => {
  const baseUrl = await serve(t);
  const am = agentmon({ baseUrl, apiKey: API_KEY });

  const s = await am.startSession({ id: "client-run-1", tags: ["client", "demo"], host_env: { OS: { OS: "Linux" } } });
  t.equal(s.id, "client-run-1");
  t.equal(s.url, `http://agentmon.test/sessions/client-run-1`, "session_url (S2)");
  t.match(s.jwt, /^ey/, "the JWT is kept");

  t.equal(await s.registerAgent({ id: "planner", name: "Planner" }), "planner");
  const ids = await s.recordEvents([
    {
      type: "llm",
      id: "ev-1",
      agent_id: "planner",
      init_timestamp: "2026-11-22T05:09:43.640361Z",
      model: "gpt-4o-mini",
      prompt: [{ role: "user", content: "2+2?" }],
      prompt_tokens: 5,
      cost: 0.0000021,
    },
    { type: "tool", name: "calculator", input: "2+2", output: "4", init_timestamp: "2026-11-22T05:09:44Z" },
  ]);
  t.equal(ids.length, 2, "one id per event (E3)");
  t.equal(ids[0], "ev-1", "the client's id is kept");
  const errorId = await s.recordEvent({ type: "error", error_type: "ValueError", details: "boom" });
  t.equal(
    await s.updateEvents([
      { id: "ev-1", completion: "4", completion_tokens: 1, end_timestamp: "2026-11-22T05:09:45Z" },
    ]),
    1,
  );
  const ended = await s.end("Success", { reason: "answered", endTimestamp: "2026-11-22T05:10:00Z" });
  t.equal(ended.session.end_state, "Success");
  t.equal(ended.session.end_state_reason, "answered");
  t.equal(ended.session.end_timestamp, "2026-11-22T05:10:00Z");
  t.equal(ended.token_cost, "0.0000021", "token_cost (S6)");

  const got = await am.getSession("client-run-1");
  t.same(got.session.tags, ["client", "demo"]);
  t.same(
    got.agents.map((a) => [a.id, a.name]),
    [["planner", "Planner"]],
  );
  t.equal(got.stats.events, 3);
  t.same(got.stats.event_counts, { llm: 1, tool: 1, action: 0, error: 1 });
  t.equal(got.stats.completion_tokens, 1, "the update is read back");

  const llm = await am.listEvents("client-run-1", { type: ["llm"] });
  t.equal(llm.events.length, 1);
  t.equal(llm.events[0]?.completion, "4");
  t.equal(llm.next_cursor, null);

  const all: string[] = [];
  for await (const event of am.events("client-run-1", { limit: 1 })) all.push(event.id);
  t.same(all.slice(0, 2), ["ev-1", ids[1]], "every page, in time order");
  t.same(all.sort(), ["ev-1", ids[1], errorId].sort(), "all three events over three pages");

  t.equal((await am.getStats("client-run-1")).cost, "0.0000021");
  const exported = await am.exportSession("client-run-1");
  t.equal(exported.events.length, 3);
  t.equal(exported.session.id, "client-run-1");
  t.same((await am.exportSessionOtlp("client-run-1")).resourceSpans, [], "no spans in a v2 session");

  await am.startSession({ id: "client-run-2", tags: ["client"] });
  await am.startSession({ id: "other-run", tags: ["other"] });
  const listed = await am.listSessions({ tag: ["client"] });
  t.same(listed.sessions.map((row) => row.session.id).sort(), ["client-run-1", "client-run-2"], "filtered by tag");
  const every: string[] = [];
  for await (const row of am.sessions({ tag: ["client"], limit: 1 })) every.push(row.session.id);
  t.same(every.sort(), ["client-run-1", "client-run-2"], "every page of the list");

  await am.deleteSession("client-run-2");
  const gone = await rejection(t, am.getSession("client-run-2"));
  t.equal(gone.status, 404);
  t.equal(gone.error, "Not found");
});

t.test("a session id is a random UUID unless given; JWT calls send the JWT and not the API key", async (t) => {
  const baseUrl = await serve(t);
  const sent: Sent[] = [];
  const am = agentmon({ baseUrl, apiKey: API_KEY, fetch: recordingFetch(sent) });
  const s = await am.startSession();
  t.match(s.id, /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
  await s.recordEvent({ type: "action", action_type: "click" });
  const [create, events] = sent;
  t.equal(create?.headers.get("x-agentmon-api-key"), API_KEY, "create_session sends the key");
  t.equal(create?.headers.get("authorization"), null);
  t.equal(events?.path, "/v2/create_events");
  t.equal(events?.headers.get("authorization"), `Bearer ${s.jwt}`, "create_events sends the JWT as a bearer token");
  t.equal(events?.headers.get("x-agentmon-api-key"), null, "and not the API key");
});

t.test("refusals are AgentmonError with the status and the G2 body", async (t) => {
  const baseUrl = await serve(t);
  const am = agentmon({ baseUrl, apiKey: API_KEY });
  const s = await am.startSession({ id: "errors" });

  // A body the types refuse (E2), sent anyway: the server's 400 and its details come through.
  const invalid = await rejection(t, s.recordEvents([{ type: "chat" } as never]));
  t.equal(invalid.status, 400);
  t.equal(invalid.error, "Invalid request");
  t.match(invalid.message, /events\[0\]\.type must be one of/);
  t.same(
    invalid.details?.map((d) => d.path),
    ["events[0].type"],
  );
  t.equal(invalid.name, "AgentmonError");
  t.ok(invalid instanceof Error, "an Error, with a stack");

  const badKey = await rejection(t, agentmon({ baseUrl, apiKey: UNKNOWN_KEY }).listSessions());
  t.equal(badKey.status, 401);
  t.equal(badKey.error, "Invalid API key");
  t.equal(badKey.message, "Please check your API key and try again");

  const conflict = await rejection(t, agentmon({ baseUrl, apiKey: OTHER_PROJECT_KEY }).startSession({ id: "errors" }));
  t.equal(conflict.status, 409);
  t.equal(conflict.error, "Session already exists");

  const unknownEvent = await rejection(t, s.updateEvents([{ id: "nope", completion: "x" }]));
  t.equal(unknownEvent.status, 404);
  t.same(unknownEvent.details?.length, 1, "the unknown id is in details");

  // Not a G2 body: a proxy's HTML page, with Retry-After.
  const proxied = agentmon({
    baseUrl,
    apiKey: API_KEY,
    fetch: async () =>
      new Response("<html>Bad Gateway</html>", {
        status: 502,
        statusText: "Bad Gateway",
        headers: { "content-type": "text/html", "retry-after": "7" },
      }),
  });
  const html = await rejection(t, proxied.getStats("errors"));
  t.equal(html.status, 502);
  t.equal(html.error, "HTTP 502");
  t.equal(html.message, "<html>Bad Gateway</html>");
  t.equal(html.retryAfter, 7);
  t.equal(html.details, undefined);
});

t.test("an expired JWT is renewed with the API key and the call sent once more", async (t) => {
  const baseUrl = await serve(t);
  const first = await agentmon({ baseUrl, apiKey: API_KEY }).startSession({ id: "renew" });
  const expired = expiredJwtLike(first.jwt as string);

  // The server refuses the expired token as it refuses any bad one (4.1).
  const raw = createAgentmonClient({ baseUrl });
  const refused = await raw.POST("/v2/create_events", {
    body: { events: [{ type: "tool" }] },
    headers: { Authorization: `Bearer ${expired}` },
  });
  t.equal(refused.response.status, 401);
  t.same(refused.error, INVALID_JWT);

  const sent: Sent[] = [];
  const am = agentmon({ baseUrl, apiKey: API_KEY, fetch: recordingFetch(sent) });
  const s = am.session("renew", { jwt: expired });
  const [id] = await s.recordEvents([{ type: "tool", id: "after-renewal", name: "search" }]);
  t.equal(id, "after-renewal");
  t.same(
    sent.map((r) => `${r.path} ${r.status}`),
    ["/v2/create_events 401", "/v2/reauthorize_jwt 200", "/v2/create_events 200"],
    "refused, renewed, sent again",
  );
  t.equal(sent[1]?.headers.get("x-agentmon-api-key"), API_KEY, "renewed with the API key");
  t.not(s.jwt, expired, "the new JWT is kept");
  t.equal(decodeJwt(s.jwt as string).claims.session_id, "renew");
  t.equal(sent[2]?.headers.get("authorization"), `Bearer ${s.jwt}`, "and sent");

  sent.length = 0;
  await s.end("Fail");
  t.same(
    sent.map((r) => `${r.path} ${r.status}`),
    ["/v2/update_session 200"],
    "the renewed JWT serves the next calls",
  );
  t.equal((await am.getSession("renew")).stats.events, 1, "the event was stored once");
});

t.test("calls refused together renew the JWT once", async (t) => {
  const baseUrl = await serve(t);
  const first = await agentmon({ baseUrl, apiKey: API_KEY }).startSession({ id: "together" });
  const sent: Sent[] = [];
  const am = agentmon({ baseUrl, apiKey: API_KEY, fetch: recordingFetch(sent) });
  const s = am.session("together", { jwt: expiredJwtLike(first.jwt as string) });
  await Promise.all([1, 2, 3].map((n) => s.recordEvent({ type: "tool", id: `t${n}` })));
  t.equal(sent.filter((r) => r.path === "/v2/reauthorize_jwt").length, 1, "one reauthorization");
  t.equal(sent.filter((r) => r.path === "/v2/create_events" && r.status === 200).length, 3);
  t.equal((await am.getStats("together")).events, 3);
});

t.test("a session resumed without a JWT gets one with the API key first", async (t) => {
  const baseUrl = await serve(t);
  await agentmon({ baseUrl, apiKey: API_KEY }).startSession({ id: "resumed" });
  const sent: Sent[] = [];
  const s = agentmon({ baseUrl, apiKey: API_KEY, fetch: recordingFetch(sent) }).session("resumed");
  t.equal(s.jwt, undefined);
  await s.registerAgent({ id: "a1" });
  t.same(
    sent.map((r) => `${r.path} ${r.status}`),
    ["/v2/reauthorize_jwt 200", "/v2/create_agent 200"],
  );
});

t.test("a JWT refused again after renewal is not retried a second time", async (t) => {
  const baseUrl = await serve(t);
  await agentmon({ baseUrl, apiKey: API_KEY }).startSession({ id: "stubborn" });
  const sent: Sent[] = [];
  // Every create_events is answered 401 for the JWT, as if each new token were refused too.
  const always401 = (request: Request) =>
    new URL(request.url).pathname === "/v2/create_events"
      ? Response.json(INVALID_JWT, { status: 401, headers: { "content-type": "application/json" } })
      : undefined;
  const s = agentmon({ baseUrl, apiKey: API_KEY, fetch: recordingFetch(sent, always401) }).session("stubborn", {
    jwt: "x.y.z",
  });
  const error = await rejection(t, s.recordEvent({ type: "tool" }));
  t.equal(error.status, 401);
  t.equal(error.error, "Invalid or expired JWT");
  t.same(
    sent.map((r) => `${r.path} ${r.status}`),
    ["/v2/create_events 401", "/v2/reauthorize_jwt 200", "/v2/create_events 401"],
  );
});

t.test("when the API key cannot renew the JWT, its refusal is the error", async (t) => {
  const baseUrl = await serve(t);
  const first = await agentmon({ baseUrl, apiKey: API_KEY }).startSession({ id: "wrong-key" });
  const expired = expiredJwtLike(first.jwt as string);

  const other = agentmon({ baseUrl, apiKey: OTHER_PROJECT_KEY }).session("wrong-key", { jwt: expired });
  const notFound = await rejection(t, other.recordEvent({ type: "tool" }));
  t.equal(notFound.status, 404, "another project's key: the session is not found (4.5)");

  const unknown = agentmon({ baseUrl, apiKey: UNKNOWN_KEY }).session("wrong-key", { jwt: expired });
  const badKey = await rejection(t, unknown.recordEvent({ type: "tool" }));
  t.equal(badKey.error, "Invalid API key");

  const keyless = agentmon({ baseUrl }).session("wrong-key", { jwt: expired });
  const noKey = await rejection(t, keyless.recordEvent({ type: "tool" }));
  t.equal(noKey.status, 401);
  t.equal(noKey.error, "Invalid or expired JWT");
  t.match(noKey.message, /No API key/);

  // Without a key, a valid JWT still writes.
  const jwtOnly = agentmon({ baseUrl }).session("wrong-key", { jwt: first.jwt as string });
  t.equal(await jwtOnly.recordEvent({ type: "tool", id: "jwt-only" }), "jwt-only");
});

t.test("the raw client is openapi-fetch typed by openapi.yaml, with the API key", async (t) => {
  const baseUrl = await serve(t);
  const am = agentmon({ baseUrl, apiKey: API_KEY });
  const health = await am.raw.GET("/healthz");
  t.equal(health.data?.status, "success");
  const created = await am.raw.POST("/v2/create_session", { body: { session: { id: "raw" } } });
  t.equal(created.data?.session_id, "raw");
  const listed = await am.raw.GET("/v2/sessions", { params: { query: { limit: 5 } } });
  t.same(
    listed.data?.sessions.map((row) => row.session.id),
    ["raw"],
  );
  const refused = await createAgentmonClient({ baseUrl }).GET("/v2/sessions");
  t.equal(refused.response.status, 401, "without a key, no key is sent");
  t.equal(refused.error?.error, "Invalid API key", "the error body is typed");
});

t.test("scores through the client: with the session's JWT and with the API key, listed back", async (t) => {
  const baseUrl = await serve(t);
  const client = agentmon({ baseUrl, apiKey: API_KEY });
  const session = await client.startSession({ id: "client-scored" });
  await session.recordEvent({ type: "llm", id: "answer" });
  const [byJwt] = await session.score({ id: "s-jwt", name: "helpful", value: true, event_id: "answer" });
  t.equal(byJwt, "s-jwt");
  const ids = await client.score([
    { id: "s-key", name: "quality", value: 0.75, session_id: "client-scored", source: "eval" },
    { id: "s-conv", name: "tone", value: "kind", conversation_id: "c-1" },
  ]);
  t.same(ids, ["s-key", "s-conv"]);
  const listed = [];
  for await (const score of client.scores({ session_id: "client-scored", limit: 1 })) listed.push(score.id);
  t.same(listed.sort(), ["s-jwt", "s-key"], "every page");
  const got = await client.getSession("client-scored");
  t.match(
    got.scores.find((s) => s.id === "s-jwt"),
    { event_id: "answer", data_type: "boolean", value: true },
  );
  const refused = await rejection(
    t,
    client.score({ name: "quality", value: "x", data_type: "numeric", session_id: "client-scored" }),
  );
  t.equal(refused.status, 400);
});
