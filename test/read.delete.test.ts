/**
 * The read API (issue 5): DELETE /v2/sessions/{id}, through real HTTP (inject) on a real SQLite
 * store. Data is always written through the write API.
 */
import t from "tap";
import { API_KEY, build, inspect, isAnswer } from "./helper.ts";
import { createEvents, ids, notFound, OPERATIONS, read } from "./read.helpers.ts";

// ----------------------------------------------------------------------------------- delete

t.test("DELETE removes the session, its events and agents, and nothing else", async (t) => {
  const api = await build(t);
  const jwt = await api.session("doomed", { tags: ["t"] });
  await createEvents(
    api,
    jwt,
    Array.from({ length: 1500 }, (_, i) => ({ type: "llm", id: `d${i}`, agent_id: "ag" })),
  );
  await api.withJwt("/v2/create_agent", { id: "ag", name: "Agent" }, jwt);
  const keepJwt = await api.session("kept", { tags: ["t"] });
  await createEvents(api, keepJwt, [{ type: "llm", id: "d1", agent_id: "ag" }]);
  await api.withJwt("/v2/create_agent", { id: "ag", name: "Agent" }, keepJwt);
  const keptBefore = (await read(api, "/v2/sessions/kept/export")).body;

  isAnswer(t, await read(api, "/v2/sessions/doomed", API_KEY, "DELETE"), 200, { status: "success" });
  t.equal(await inspect(api.store).getSession("doomed"), undefined, "the session is gone");
  t.strictSame(await inspect(api.store).listEvents("doomed"), [], "its events are gone");
  t.strictSame(await inspect(api.store).listAgents("doomed"), [], "its agents are gone");
  for (const [, , suffix] of OPERATIONS.filter(([, method]) => method === "GET")) {
    isAnswer(t, await read(api, `/v2/sessions/doomed${suffix}`), 404, notFound("doomed"));
  }
  t.strictSame(ids((await read(api, "/v2/sessions?tag=t")).json().sessions), ["kept"], "no longer listed");
  t.equal((await read(api, "/v2/sessions/kept/export")).body, keptBefore, "the other session is untouched");
  isAnswer(t, await read(api, "/v2/sessions/doomed", API_KEY, "DELETE"), 404, notFound("doomed"), "a second delete");

  t.test("the deleted session's JWT: every write is a 404; create_session makes a new, empty session", async (t) => {
    const writes: [string, unknown][] = [
      ["/v2/update_session", { session: { end_state: "Success" } }],
      ["/v2/create_events", { events: [{ type: "tool" }] }],
      ["/create_events", { events: [{ type: "tool" }] }],
      ["/v2/update_events", { events: [{ event_id: "d1", cost: 1 }] }],
      ["/v2/create_agent", { id: "ag" }],
    ];
    for (const [url, body] of writes) {
      isAnswer(t, await api.withJwt(url, body, jwt), 404, notFound("doomed"), url);
    }
    isAnswer(t, await api.withKey("/v2/reauthorize_jwt", { session_id: "doomed" }), 404, notFound("doomed"));
    t.equal(await inspect(api.store).getSession("doomed"), undefined, "nothing was written");
    await api.session("doomed");
    const stats = (await read(api, "/v2/sessions/doomed/stats")).json().stats;
    t.equal(stats.events, 0, "a new session with the same id starts empty");
    t.equal(
      (await api.withJwt("/v2/create_agent", { id: "ag" }, jwt)).statusCode,
      200,
      "and the old JWT names it again",
    );
  });
});
