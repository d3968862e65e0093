/**
 * Contract part 3, rules E6..E7: update_events and create_agent, through real HTTP on a real
 * (in-memory) SQLite store. Every subtest name starts with the rule id it pins.
 */
import t from "tap";
import { base, NOW } from "./events.helpers.ts";
import {
  build,
  type Detail,
  eventViews,
  forbidden,
  INVALID_JWT,
  inspect,
  invalid,
  isAnswer,
  OTHER_PROJECT_KEY,
} from "./helper.ts";

// ------------------------------------------------------------------------------------------ E6

t.test("E6: update_events", async (t) => {
  const api = await build(t, { now: () => NOW });

  /** The 404 body for one unknown event id, sent in the entry at `path`. */
  const notFound = (id: string, path: string) => ({
    error: "Not found",
    message: `No event with this id in this session: ${id}`,
    details: [{ path, message: `unknown event id "${id}"` }],
  });

  /** A session holding one llm event "u1" with most fields set, and its JWT. */
  async function withEvent(sessionId: string) {
    const jwt = await api.session(sessionId);
    const event = {
      type: "llm",
      id: "u1",
      model: "gpt-4o-mini",
      prompt: [{ role: "user", content: "2+2?" }],
      completion: { role: "assistant", content: "draft" },
      prompt_tokens: 3,
      agent_id: "agent-1",
      thread_id: "thread-1",
      custom: { kept: true },
    };
    const res = await api.withJwt("/v2/create_events", { events: [event, { type: "tool", id: "u2", name: "t" }] }, jwt);
    if (res.statusCode !== 200) throw new Error(`create_events answered ${res.statusCode}: ${res.body}`);
    const stored = {
      ...base("u1", "llm", sessionId),
      agent_id: "agent-1",
      model: "gpt-4o-mini",
      prompt_tokens: 3,
      thread_id: "thread-1",
      prompt: [{ role: "user", content: "2+2?" }],
      completion: { role: "assistant", content: "draft" },
      custom: { kept: true },
    };
    return { jwt, stored, tool: { ...base("u2", "tool", sessionId), name: "t" } };
  }

  t.test("E6: an update by event_id changes only the fields given", async (t) => {
    const { withJwt, store } = api;
    const { jwt, stored, tool } = await withEvent("e6-event-id");
    const patch = {
      event_id: "u1",
      end_timestamp: "2026-11-22T05:09:44.100000Z",
      completion: { role: "assistant", content: "4" },
      completion_tokens: 1,
      cost: 0.5,
    };
    const res = await withJwt("/v2/update_events", { events: [patch] }, jwt);
    isAnswer(t, res, 200, { status: "success", updated: 1 });
    t.strictSame(await eventViews(store, "e6-event-id"), [
      {
        ...stored,
        end_timestamp: "2026-11-22T05:09:44.100000Z",
        completion: { role: "assistant", content: "4" },
        completion_tokens: 1,
        cost: 0.5,
      },
      tool,
    ]);
  });

  t.test("E6: an update by id works the same", async (t) => {
    const { withJwt, store } = api;
    const { jwt, stored, tool } = await withEvent("e6-id");
    const res = await withJwt("/v2/update_events", { events: [{ id: "u1", model: "gpt-4o" }] }, jwt);
    isAnswer(t, res, 200, { status: "success", updated: 1 });
    t.strictSame(await eventViews(store, "e6-id"), [{ ...stored, model: "gpt-4o" }, tool]);
  });

  t.test("E6: completion may be a plain string", async (t) => {
    const { withJwt, store } = api;
    const { jwt, stored, tool } = await withEvent("e6-string");
    const res = await withJwt("/v2/update_events", { events: [{ event_id: "u1", completion: "4" }] }, jwt);
    t.equal(res.statusCode, 200);
    t.strictSame(await eventViews(store, "e6-string"), [{ ...stored, completion: "4" }, tool]);
  });

  t.test("E6: the SDK's tool aliases update the canonical fields", async (t) => {
    const { withJwt, store } = api;
    const { jwt, stored, tool } = await withEvent("e6-aliases");
    const patch = { event_id: "u2", tool_name: "calc", params: { a: 1 }, returns: 2 };
    const res = await withJwt("/v2/update_events", { events: [patch] }, jwt);
    t.equal(res.statusCode, 200);
    const record = (await inspect(store).listEvents("e6-aliases")).find((e) => e.id === "u2");
    t.strictSame(record?.fields, { name: "calc", input: { a: 1 }, output: 2 });
    t.strictSame(await eventViews(store, "e6-aliases"), [
      stored,
      { ...tool, name: "calc", input: { a: 1 }, output: 2, tool_name: "calc", params: { a: 1 }, returns: 2 },
    ]);
  });

  t.test("E6: fields sent as null change nothing; unknown fields merge", async (t) => {
    const { withJwt, store } = api;
    const { jwt, stored, tool } = await withEvent("e6-nulls");
    const patch = {
      event_id: "u1",
      model: null,
      prompt: null,
      completion: null,
      prompt_tokens: null,
      agent_id: null,
      thread_id: null,
      end_timestamp: null,
      init_timestamp: null,
      extra_field: null,
      another: [1],
    };
    const res = await withJwt("/v2/update_events", { events: [patch] }, jwt);
    t.equal(res.statusCode, 200);
    t.strictSame(await eventViews(store, "e6-nulls"), [{ ...stored, extra_field: null, another: [1] }, tool]);
  });

  t.test("E6: an unknown id is a 404 listing it, and nothing is applied", async (t) => {
    const { withJwt, store } = api;
    const { jwt, stored, tool } = await withEvent("e6-unknown");
    const events = [
      { event_id: "u1", model: "changed" },
      { event_id: "nope", model: "x" },
    ];
    const res = await withJwt("/v2/update_events", { events }, jwt);
    isAnswer(t, res, 404, notFound("nope", "events[1].event_id"));
    t.strictSame(await eventViews(store, "e6-unknown"), [stored, tool]);
  });

  t.test("E6: several unknown ids are all listed", async (t) => {
    const { withJwt, store } = api;
    const { jwt, stored, tool } = await withEvent("e6-unknowns");
    const events = [{ id: "gone-1" }, { event_id: "u2", name: "renamed" }, { event_id: "gone-2", cost: 1 }];
    const res = await withJwt("/v2/update_events", { events }, jwt);
    isAnswer(t, res, 404, {
      error: "Not found",
      message: "No event with these ids in this session: gone-1, gone-2",
      details: [
        { path: "events[0].event_id", message: 'unknown event id "gone-1"' },
        { path: "events[2].event_id", message: 'unknown event id "gone-2"' },
      ],
    });
    t.strictSame(await eventViews(store, "e6-unknowns"), [stored, tool]);
  });

  t.test("E6: an event of another session counts as unknown", async (t) => {
    const { withJwt, store } = api;
    const mine = await withEvent("e6-mine");
    const theirs = await withEvent("e6-theirs");
    const onlyTheirs = await api.withJwt(
      "/v2/create_events",
      { events: [{ type: "llm", id: "only-theirs" }] },
      theirs.jwt,
    );
    t.equal(onlyTheirs.statusCode, 200);
    const res = await withJwt(
      "/v2/update_events",
      {
        events: [
          { event_id: "u1", model: "mine" },
          { event_id: "only-theirs", model: "hijacked" },
        ],
      },
      mine.jwt,
    );
    isAnswer(t, res, 404, notFound("only-theirs", "events[1].event_id"));
    t.strictSame(await eventViews(store, "e6-mine"), [mine.stored, mine.tool]);
    t.strictSame(await eventViews(store, "e6-theirs"), [
      base("only-theirs", "llm", "e6-theirs"),
      theirs.stored,
      theirs.tool,
    ]);
  });

  t.test("E6: an event of a session of another project counts as unknown", async (t) => {
    const { withJwt, store } = api;
    const { jwt } = await withEvent("e6-proj-mine");
    const theirs = await api.session("e6-proj-theirs", {}, OTHER_PROJECT_KEY);
    const created = await withJwt("/v2/create_events", { events: [{ type: "llm", id: "foreign" }] }, theirs);
    t.equal(created.statusCode, 200);
    const res = await withJwt("/v2/update_events", { events: [{ event_id: "foreign", model: "x" }] }, jwt);
    isAnswer(t, res, 404, notFound("foreign", "events[0].event_id"));
    t.strictSame(await eventViews(store, "e6-proj-theirs"), [base("foreign", "llm", "e6-proj-theirs")]);
  });

  t.test("E6: an entry without event_id or id is a 400", async (t) => {
    const { withJwt, store } = api;
    const { jwt, stored, tool } = await withEvent("e6-missing");
    for (const entry of [{ model: "x" }, { event_id: null, id: null, model: "x" }]) {
      const res = await withJwt("/v2/update_events", { events: [{ event_id: "u1", model: "y" }, entry] }, jwt);
      isAnswer(
        t,
        res,
        400,
        invalid({ path: "events[1].event_id", message: "is required: give event_id or id" }),
        JSON.stringify(entry),
      );
    }
    t.strictSame(await eventViews(store, "e6-missing"), [stored, tool]);
  });

  t.test("E6: updated counts distinct events; entries for one event apply in order", async (t) => {
    const { withJwt, store } = api;
    const { jwt, stored, tool } = await withEvent("e6-count");
    const events = [
      { event_id: "u1", model: "first", completion_tokens: 5 },
      { event_id: "u2", output: "done" },
      { id: "u1", model: "second" },
    ];
    const res = await withJwt("/v2/update_events", { events }, jwt);
    isAnswer(t, res, 200, { status: "success", updated: 2 });
    t.strictSame(await eventViews(store, "e6-count"), [
      { ...stored, model: "second", completion_tokens: 5 },
      { ...tool, output: "done" },
    ]);
  });

  t.test("E6: repeating an update answers 200 again with the same result", async (t) => {
    const { withJwt, store } = api;
    const { jwt, stored, tool } = await withEvent("e6-repeat");
    const body = { events: [{ event_id: "u1", completion: "4" }] };
    t.strictSame((await withJwt("/v2/update_events", body, jwt)).json(), { status: "success", updated: 1 });
    const again = await withJwt("/v2/update_events", body, jwt);
    isAnswer(t, again, 200, { status: "success", updated: 1 });
    t.strictSame(await eventViews(store, "e6-repeat"), [{ ...stored, completion: "4" }, tool]);
  });

  t.test("E6: a bad field value is a 400 and nothing is applied", async (t) => {
    const { withJwt, store } = api;
    const { jwt, stored, tool } = await withEvent("e6-badvalue");
    const events = [
      { event_id: "u1", model: "x" },
      { event_id: "u2", cost: -1 },
    ];
    const res = await withJwt("/v2/update_events", { events }, jwt);
    isAnswer(t, res, 400, invalid({ path: "events[1].cost", message: "must be >= 0" }));
    const withUnknown = await withJwt("/v2/update_events", { events: [{ event_id: "nope", cost: -1 }] }, jwt);
    isAnswer(
      t,
      withUnknown,
      400,
      invalid({ path: "events[0].cost", message: "must be >= 0" }),
      "a 400 comes before a 404",
    );
    t.strictSame(await eventViews(store, "e6-badvalue"), [stored, tool]);
  });
});

// ------------------------------------------------------------------------------------------ E7

t.test("E7: create_agent", async (t) => {
  const api = await build(t, { now: () => NOW });

  t.test("E7: create_agent stores the id and name in the JWT's session", async (t) => {
    const { session, withJwt, store } = api;
    const jwt = await session("e7-create");
    const res = await withJwt("/v2/create_agent", { id: "b8d63dc0-a7e4-467a-9038-02ccb144ef62", name: "driver" }, jwt);
    isAnswer(t, res, 200, { status: "success", agent_id: "b8d63dc0-a7e4-467a-9038-02ccb144ef62" });
    t.strictSame(await inspect(store).listAgents("e7-create"), [
      { id: "b8d63dc0-a7e4-467a-9038-02ccb144ef62", name: "driver", extra: {} },
    ]);
  });

  t.test("E7: an agent without a name is stored with a null name", async (t) => {
    const { session, withJwt, store } = api;
    const jwt = await session("e7-noname");
    const res = await withJwt("/v2/create_agent", { id: "anon" }, jwt);
    isAnswer(t, res, 200, { status: "success", agent_id: "anon" });
    t.strictSame(await inspect(store).listAgents("e7-noname"), [{ id: "anon", name: null, extra: {} }]);
  });

  t.test("E7: repeating create_agent updates the name (upsert)", async (t) => {
    const { session, withJwt, store } = api;
    const jwt = await session("e7-upsert");
    t.equal((await withJwt("/v2/create_agent", { id: "ag", name: "old" }, jwt)).statusCode, 200);
    const again = await withJwt("/v2/create_agent", { id: "ag", name: "new" }, jwt);
    isAnswer(t, again, 200, { status: "success", agent_id: "ag" });
    t.strictSame(await inspect(store).listAgents("e7-upsert"), [{ id: "ag", name: "new", extra: {} }]);
  });

  t.test("E7: a missing, empty or non-string id is a 400", async (t) => {
    const { session, withJwt, store } = api;
    const jwt = await session("e7-noid");
    const cases: [Record<string, unknown>, Detail][] = [
      [{ name: "x" }, { path: "id", message: "is required" }],
      [
        { id: "", name: "x" },
        { path: "id", message: "must not be empty" },
      ],
      [
        { id: null, name: "x" },
        { path: "id", message: "must be a string" },
      ],
      [{ id: "x".repeat(257) }, { path: "id", message: "must be at most 256 characters" }],
    ];
    for (const [body, detail] of cases) {
      const res = await withJwt("/v2/create_agent", body, jwt);
      isAnswer(t, res, 400, invalid(detail), JSON.stringify(body).slice(0, 40));
    }
    t.strictSame(await inspect(store).listAgents("e7-noid"), []);
  });

  t.test("E7: agent ids are scoped to their session", async (t) => {
    const { session, withJwt, store } = api;
    const a = await session("e7-scope-a");
    const b = await session("e7-scope-b");
    t.equal((await withJwt("/v2/create_agent", { id: "same", name: "in a" }, a)).statusCode, 200);
    t.equal((await withJwt("/v2/create_agent", { id: "same", name: "in b" }, b)).statusCode, 200);
    t.strictSame(await inspect(store).listAgents("e7-scope-a"), [{ id: "same", name: "in a", extra: {} }]);
    t.strictSame(await inspect(store).listAgents("e7-scope-b"), [{ id: "same", name: "in b", extra: {} }]);
  });

  t.test("E7: an event's agent_id with no agent record is still stored", async (t) => {
    const { session, withJwt, store } = api;
    const jwt = await session("e7-orphan");
    const res = await withJwt("/v2/create_events", { events: [{ type: "llm", id: "e", agent_id: "ghost" }] }, jwt);
    t.equal(res.statusCode, 200);
    t.strictSame(await eventViews(store, "e7-orphan"), [{ ...base("e", "llm", "e7-orphan"), agent_id: "ghost" }]);
    t.strictSame(await inspect(store).listAgents("e7-orphan"), []);
  });

  t.test("E7: events link to a registered agent through agent_id", async (t) => {
    const { session, withJwt, store } = api;
    const jwt = await session("e7-link");
    t.equal((await withJwt("/v2/create_agent", { id: "ag-1", name: "worker" }, jwt)).statusCode, 200);
    const res = await withJwt("/v2/create_events", { events: [{ type: "tool", id: "t", agent_id: "ag-1" }] }, jwt);
    t.equal(res.statusCode, 200);
    const [event] = await inspect(store).listEvents("e7-link");
    t.equal(event?.agent_id, "ag-1");
    t.strictSame(await inspect(store).listAgents("e7-link"), [{ id: "ag-1", name: "worker", extra: {} }]);
  });

  t.test("E7: unknown agent fields are kept", async (t) => {
    const { session, withJwt, store } = api;
    const jwt = await session("e7-extra");
    const res = await withJwt("/v2/create_agent", { id: "ag", name: "n", role: "planner", meta: null }, jwt);
    t.equal(res.statusCode, 200);
    t.strictSame(await inspect(store).listAgents("e7-extra"), [
      { id: "ag", name: "n", extra: { role: "planner", meta: null } },
    ]);
  });

  t.test("E7: a session_id naming another session is a 403 and stores nothing", async (t) => {
    const { session, withJwt, store } = api;
    const jwt = await session("e7-mine");
    await session("e7-yours");
    const res = await withJwt("/v2/create_agent", { id: "ag", name: "n", session_id: "e7-yours" }, jwt);
    isAnswer(t, res, 403, forbidden("e7-mine", "e7-yours"));
    t.strictSame(await inspect(store).listAgents("e7-mine"), []);
    t.strictSame(await inspect(store).listAgents("e7-yours"), []);
    const own = await withJwt("/v2/create_agent", { id: "ag", name: "n", session_id: "e7-mine" }, jwt);
    t.equal(own.statusCode, 200);
    t.strictSame(await inspect(store).listAgents("e7-mine"), [{ id: "ag", name: "n", extra: {} }]);
  });

  t.test("E7: create_agent needs a JWT", async (t) => {
    const { session, withKey, store } = api;
    await session("e7-nojwt");
    const res = await withKey("/v2/create_agent", { id: "ag", session_id: "e7-nojwt" });
    isAnswer(t, res, 401, INVALID_JWT);
    t.strictSame(await inspect(store).listAgents("e7-nojwt"), []);
  });
});
