/**
 * Credential attacks (contract part 4), one test each: honest credentials aimed at another
 * project's or another session's data get the 403/404/409 the contract names, and leave the
 * database exactly as it was; each test ends with a control (the honest credential on its own data
 * succeeds). Helpers: attacks.helpers.ts.
 */
import t from "tap";
import { arena, bearer, is401, jwtAccepted } from "./attacks.helpers.ts";
import { API_KEY, forbidden, INVALID_API_KEY, inspect, isError, OTHER_PROJECT_KEY } from "./helper.ts";

t.test("attack: a token of project A used on project B's session: 403 or 404, nothing written", async (t) => {
  const a = await arena(t);
  const before = a.snapshot();
  // Session ids are unique across projects, so A's JWT can only reach B's session by naming it.
  const named: [string, unknown][] = [
    ["/v2/update_session", { session: { id: "theirs", end_state: "Fail" } }],
    ["/v2/update_session", { session: { session_id: "theirs", end_state: "Fail" } }],
    ["/v2/create_events", { events: [{ type: "llm", id: "x1", session_id: "theirs" }] }],
    ["/create_events", { events: [{ type: "tool", id: "x2", session_id: "theirs" }] }],
    ["/v2/update_events", { events: [{ event_id: "t0", session_id: "theirs", completion: "forged" }] }],
    ["/v2/create_agent", { id: "x3", name: "intruder", session_id: "theirs" }],
  ];
  for (const [url, body] of named) {
    const res = await a.withJwt(url, body, a.jwt);
    isError(t, res, 403, "Forbidden");
    t.strictSame(res.json(), forbidden("mine", "theirs"), `${url} ${JSON.stringify(body)}: the exact 403`);
  }
  // B's event looked up through A's JWT is unknown (E6), answered exactly as an id that exists nowhere.
  const foreignEvent = await a.withJwt("/v2/update_events", { events: [{ event_id: "t0", completion: "x" }] }, a.jwt);
  const noEvent = await a.withJwt("/v2/update_events", { events: [{ event_id: "zz", completion: "x" }] }, a.jwt);
  isError(t, foreignEvent, 404, "Not found");
  t.equal(foreignEvent.body.replaceAll("t0", "zz"), noEvent.body, "B's event id is indistinguishable from no event");
  // And the other way round: B's JWT naming A's session.
  const reverse = await a.withJwt("/v2/update_session", { session: { id: "mine", end_state: "Fail" } }, a.theirJwt);
  t.equal(reverse.statusCode, 403, reverse.body);
  t.strictSame(reverse.json(), forbidden("theirs", "mine"), "the exact 403 the other way round");
  t.equal((await inspect(a.store).getSession("mine"))?.end_state, null, "A's session unchanged");
  t.equal((await inspect(a.store).getSession("theirs"))?.end_state, null, "B's session unchanged");
  t.equal(a.snapshot(), before, "nothing written in either project");
  await jwtAccepted(t, a, a.jwt, "control: A's JWT on its own session");
  await jwtAccepted(t, a, a.theirJwt, "control: B's JWT on its own session");
});

t.test("attack: project A's key on project B's session: 404 as if absent, or 409, no JWT", async (t) => {
  const a = await arena(t);
  const before = a.snapshot();
  const cases: [string, string, string][] = [
    [API_KEY, "theirs", "never-created"],
    [OTHER_PROJECT_KEY, "mine", "never-created-either"],
  ];
  for (const [key, foreign, missing] of cases) {
    const res = await a.withKey("/v2/reauthorize_jwt", { session_id: foreign }, key);
    isError(t, res, 404, "Not found");
    t.notOk("jwt" in res.json(), `${foreign}: no JWT`);
    const none = await a.withKey("/v2/reauthorize_jwt", { session_id: missing }, key);
    isError(t, none, 404, "Not found");
    t.equal(
      res.body.replaceAll(foreign, missing),
      none.body,
      `${foreign}: answered exactly as a session that does not exist`,
    );
    // S3: creating it again is a 409 (the id is taken) that hands out nothing and overwrites nothing.
    for (const [url, body] of [
      ["/v2/create_session", { session: { id: foreign, tags: ["stolen"] } }],
      ["/create_session", { session_id: foreign, end_state: "Fail" }],
    ] as const) {
      const taken = await a.withKey(url, body, key);
      isError(t, taken, 409, "Session already exists");
      t.notMatch(taken.body, /eyJ/, `${url} ${foreign}: no JWT`);
    }
  }
  t.equal(a.snapshot(), before, "nothing written");
  const own = await a.withKey("/v2/reauthorize_jwt", { session_id: "mine" });
  t.equal(own.statusCode, 200, "control: the key's own session");
});

t.test("attack: a JWT for session X with a body naming session Y: 403, nothing written", async (t) => {
  const a = await arena(t);
  const y = await a.session("Y");
  const seeded = await a.withJwt("/v2/create_events", { events: [{ type: "tool", id: "y0" }] }, y);
  t.equal(seeded.statusCode, 200, seeded.body);
  const before = a.snapshot();
  const cases: [string, unknown][] = [
    ["/v2/update_session", { session: { id: "Y", end_state: "Fail" } }],
    ["/v2/update_session", { session: { session_id: "Y", end_state: "Fail" } }],
    ["/v2/create_events", { events: [{ type: "llm", id: "x1", session_id: "Y" }] }],
    [
      "/create_events",
      {
        events: [
          { type: "llm", id: "x2" },
          { type: "tool", id: "x3", session_id: "Y" },
        ],
      },
    ],
    ["/v2/update_events", { events: [{ event_id: "y0", session_id: "Y", output: "forged" }] }],
    ["/v2/create_agent", { id: "agent-x", name: "intruder", session_id: "Y" }],
  ];
  for (const [url, body] of cases) {
    const res = await a.withJwt(url, body, a.jwt);
    isError(t, res, 403, "Forbidden");
    t.strictSame(res.json(), forbidden("mine", "Y"), `${url} ${JSON.stringify(body)}: the exact 403`);
  }
  const unknown = await a.withJwt("/v2/update_events", { events: [{ event_id: "y0", output: "forged" }] }, a.jwt);
  isError(t, unknown, 404, "Not found");
  t.equal(a.snapshot(), before, "nothing written: not in Y, and not the valid part in X either (G7)");
  t.equal((await inspect(a.store).getSession("Y"))?.end_state, null, "session Y unchanged");
  t.same(
    (await inspect(a.store).listEvents("Y")).map((event) => event.id),
    ["y0"],
    "Y holds only its own event",
  );
  t.same(await inspect(a.store).listAgents("Y"), [], "no agents in Y");
  await jwtAccepted(t, a, a.jwt, "control: X's JWT on X");
});

t.test("attack: project A's key reads or deletes B's session via the read API: 404 as if absent", async (t) => {
  const a = await arena(t);
  const get = (url: string, headers: Record<string, string>, method: "GET" | "DELETE" = "GET") =>
    a.inject({ method, url, headers });
  const asA = { "x-agentmon-api-key": API_KEY };
  const before = a.snapshot();
  const reads = (id: string): ["GET" | "DELETE", string][] => [
    ["GET", `/v2/sessions/${id}`],
    ["GET", `/v2/sessions/${id}/events`],
    ["GET", `/v2/sessions/${id}/stats`],
    ["GET", `/v2/sessions/${id}/export`],
    ["DELETE", `/v2/sessions/${id}`],
  ];
  const absent = reads("never-created");
  for (const [i, [method, url]] of reads("theirs").entries()) {
    const res = await get(url, asA, method);
    isError(t, res, 404, "Not found");
    const [, absentUrl] = absent[i] as [string, string];
    const none = await get(absentUrl, asA, method);
    t.equal(
      res.body.replaceAll("theirs", "never-created"),
      none.body,
      `${method} ${url}: answered as an absent session`,
    );
  }
  const listed = await get("/v2/sessions", asA);
  t.equal(listed.statusCode, 200, listed.body);
  t.same(
    (listed.json().sessions as { session: { id: string } }[]).map((row) => row.session.id),
    ["mine"],
    "A's list holds only A's session",
  );
  // A session's JWT is not a read credential, even for its own session.
  for (const [method, url] of reads("mine")) {
    is401(t, await get(url, bearer(a.jwt), method), INVALID_API_KEY, `${method} ${url} with the session's JWT`);
  }
  t.equal(a.snapshot(), before, "nothing deleted or written");
  const own = await get("/v2/sessions/theirs", { "x-agentmon-api-key": OTHER_PROJECT_KEY });
  t.equal(own.statusCode, 200, "control: B's key reads B's session");
  t.equal(own.json().session.id, "theirs", "control: the session read");
});
