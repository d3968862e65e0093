/**
 * Contract part 3, rules E1..E7: events and agents, through real HTTP on a real (in-memory)
 * SQLite store. Every subtest name starts with the rule id it pins.
 */
import t, { type Test } from "tap";
import { eventView } from "../domain/views.ts";
import {
  build,
  type Detail,
  eventIds,
  eventViews,
  forbidden,
  INVALID_JWT,
  inspect,
  invalid,
  isAnswer,
  OTHER_PROJECT_KEY,
} from "./helper.ts";

const NOW = Date.UTC(2026, 10, 22, 5, 9, 43, 640);
const NOW_ISO = "2026-11-22T05:09:43.640Z";
const UUID_V7 = /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

const KIND_RULE = "give type (llm, tool, action, error) or event_type (llms, tools, actions, errors)";

/** A session-less base for the view of an event stored at NOW with no common field set. */
const base = (id: string, type: string, sessionId: string) => ({
  id,
  type,
  session_id: sessionId,
  init_timestamp: NOW_ISO,
  end_timestamp: null,
  agent_id: null,
});

// ------------------------------------------------------------------------------------------ E1

t.test("E1: create_events takes 1 to 1000 events", async (t) => {
  const api = await build(t, { now: () => NOW });

  t.test("E1: one event is stored in the JWT's session", async (t) => {
    const { session, withJwt, store } = api;
    const jwt = await session("e1-one");
    const res = await withJwt("/v2/create_events", { events: [{ type: "llm", id: "one" }] }, jwt);
    isAnswer(t, res, 200, { status: "success", event_ids: ["one"] });
    t.strictSame(await eventViews(store, "e1-one"), [base("one", "llm", "e1-one")]);
  });

  t.test("E1: zero events is a 400", async (t) => {
    const { session, withJwt, store } = api;
    const jwt = await session("e1-zero");
    const res = await withJwt("/v2/create_events", { events: [] }, jwt);
    isAnswer(t, res, 400, invalid({ path: "events", message: "must have at least 1 item" }));
    t.strictSame(await eventIds(store, "e1-zero"), []);
  });

  t.test("E1: events that is not an array is a 400", async (t) => {
    const { session, withJwt } = api;
    const jwt = await session("e1-notarray");
    for (const events of [{}, { type: "llm" }, "llm", 5, null]) {
      const res = await withJwt("/v2/create_events", { events }, jwt);
      isAnswer(t, res, 400, invalid({ path: "events", message: "must be an array" }), JSON.stringify(events));
    }
    const missing = await withJwt("/v2/create_events", { event: [{ type: "llm" }] }, jwt);
    isAnswer(t, missing, 400, invalid({ path: "events", message: "is required" }));
  });

  t.test("E1: an event that is not an object is a 400", async (t) => {
    const { session, withJwt, store } = api;
    const jwt = await session("e1-notobject");
    const res = await withJwt("/v2/create_events", { events: [{ type: "llm", id: "ok" }, "llm"] }, jwt);
    isAnswer(t, res, 400, invalid({ path: "events[1]", message: "must be an object" }));
    t.strictSame(await eventIds(store, "e1-notobject"), []);
  });

  t.test("E1: 1000 events are accepted and all stored", async (t) => {
    const { session, withJwt, store } = api;
    const jwt = await session("e1-1000");
    const events = Array.from({ length: 1000 }, (_, i) => ({ type: "tool", id: `ev-${String(i).padStart(4, "0")}` }));
    const res = await withJwt("/v2/create_events", { events }, jwt);
    isAnswer(t, res, 200, { status: "success", event_ids: events.map((e) => e.id) });
    t.strictSame(
      await eventIds(store, "e1-1000"),
      events.map((e) => e.id),
    );
  });

  t.test("E1: 1001 events are a 400 and nothing is stored", async (t) => {
    const { session, withJwt, store } = api;
    const jwt = await session("e1-1001");
    const events = Array.from({ length: 1001 }, (_, i) => ({ type: "tool", id: `ev-${i}` }));
    const res = await withJwt("/v2/create_events", { events }, jwt);
    isAnswer(t, res, 400, invalid({ path: "events", message: "must have at most 1000 items" }));
    t.strictSame(await eventIds(store, "e1-1001"), []);
  });

  t.test("E1: the maximum is configurable", async (t) => {
    const { session, withJwt, store } = await build(t, { now: () => NOW, maxEvents: 3 });
    const jwt = await session("e1-max3");
    const four = Array.from({ length: 4 }, (_, i) => ({ type: "llm", id: `m${i}` }));
    const over = await withJwt("/v2/create_events", { events: four }, jwt);
    isAnswer(t, over, 400, invalid({ path: "events", message: "must have at most 3 items" }));
    t.strictSame(await eventIds(store, "e1-max3"), []);
    const ok = await withJwt("/v2/create_events", { events: four.slice(0, 3) }, jwt);
    t.equal(ok.statusCode, 200);
    t.strictSame(await eventIds(store, "e1-max3"), ["m0", "m1", "m2"]);
  });

  t.test("E1: /create_events behaves like /v2/create_events", async (t) => {
    const { session, withJwt, store } = api;
    const jwt = await session("e1-unversioned");
    const one = await withJwt("/create_events", { events: [{ event_type: "llms", id: "u1" }] }, jwt);
    isAnswer(t, one, 200, { status: "success", event_ids: ["u1"] });
    const zero = await withJwt("/create_events", { events: [] }, jwt);
    isAnswer(t, zero, 400, invalid({ path: "events", message: "must have at least 1 item" }));
    const many = Array.from({ length: 1001 }, (_, i) => ({ type: "tool", id: `x${i}` }));
    const over = await withJwt("/create_events", { events: many }, jwt);
    isAnswer(t, over, 400, invalid({ path: "events", message: "must have at most 1000 items" }));
    t.strictSame(await eventIds(store, "e1-unversioned"), ["u1"]);
  });

  t.test("E1: events go to the JWT's session and no other", async (t) => {
    const { session, withJwt, store } = api;
    const a = await session("e1-a");
    await session("e1-b");
    const res = await withJwt("/v2/create_events", { events: [{ type: "llm", id: "mine" }] }, a);
    t.equal(res.statusCode, 200);
    t.strictSame(await eventIds(store, "e1-a"), ["mine"]);
    t.strictSame(await eventIds(store, "e1-b"), []);
  });

  t.test("E1: create_events needs a JWT", async (t) => {
    const { session, withKey, store } = api;
    await session("e1-nojwt");
    const res = await withKey("/v2/create_events", { events: [{ type: "llm", id: "x", session_id: "e1-nojwt" }] });
    isAnswer(t, res, 401, INVALID_JWT);
    t.strictSame(await eventIds(store, "e1-nojwt"), []);
  });
});

// ------------------------------------------------------------------------------------------ E2

t.test("E2: an event's kind", async (t) => {
  const api = await build(t, { now: () => NOW });

  t.test("E2: each type is accepted", async (t) => {
    const { session, withJwt, store } = api;
    const jwt = await session("e2-type");
    const events = ["llm", "tool", "action", "error"].map((type) => ({ type, id: `t-${type}` }));
    const res = await withJwt("/v2/create_events", { events }, jwt);
    t.equal(res.statusCode, 200);
    t.strictSame(res.json().event_ids, ["t-llm", "t-tool", "t-action", "t-error"]);
    t.strictSame(await eventViews(store, "e2-type"), [
      base("t-action", "action", "e2-type"),
      base("t-error", "error", "e2-type"),
      base("t-llm", "llm", "e2-type"),
      base("t-tool", "tool", "e2-type"),
    ]);
  });

  t.test("E2: each event_type is accepted and stored as its kind", async (t) => {
    const { session, withJwt, store } = api;
    const jwt = await session("e2-event-type");
    const plural = { llms: "llm", tools: "tool", actions: "action", errors: "error" };
    const events = Object.keys(plural).map((eventType) => ({ event_type: eventType, id: `p-${eventType}` }));
    const res = await withJwt("/v2/create_events", { events }, jwt);
    t.equal(res.statusCode, 200);
    const stored = await inspect(store).listEvents("e2-event-type");
    for (const [eventType, kind] of Object.entries(plural)) {
      const event = stored.find((e) => e.id === `p-${eventType}`);
      t.equal(event?.type, kind, eventType);
      if (event) {
        t.strictSame(eventView(event, "e2-event-type"), {
          ...base(`p-${eventType}`, kind, "e2-event-type"),
          event_type: eventType,
        });
      }
    }
  });

  t.test("E2: type and event_type that agree are accepted", async (t) => {
    const { session, withJwt, store } = api;
    const jwt = await session("e2-agree");
    const events = [
      { type: "llm", event_type: "llms", id: "a1" },
      { type: "tool", event_type: "tools", id: "a2" },
      { type: "action", event_type: "actions", id: "a3" },
      { type: "error", event_type: "errors", id: "a4" },
    ];
    const res = await withJwt("/v2/create_events", { events }, jwt);
    t.equal(res.statusCode, 200);
    const types = (await inspect(store).listEvents("e2-agree")).map((e) => [e.id, e.type]);
    t.strictSame(types, [
      ["a1", "llm"],
      ["a2", "tool"],
      ["a3", "action"],
      ["a4", "error"],
    ]);
  });

  t.test("E2: type and event_type that disagree are a 400 listing the accepted kinds", async (t) => {
    const { session, withJwt, store } = api;
    const jwt = await session("e2-disagree");
    const res = await withJwt(
      "/v2/create_events",
      {
        events: [
          { type: "llm", id: "ok" },
          { type: "llm", event_type: "tools", id: "bad" },
        ],
      },
      jwt,
    );
    isAnswer(
      t,
      res,
      400,
      invalid({
        path: "events[1].event_type",
        message: `"tools" disagrees with type "llm"; ${KIND_RULE}, naming the same kind`,
      }),
    );
    for (const kind of ["llm", "tool", "action", "error", "llms", "tools", "actions", "errors"]) {
      t.match(res.json().message, kind);
    }
    t.strictSame(await eventIds(store, "e2-disagree"), []);
  });

  /** Each event, sent alone, is a 400 with exactly this detail, and the session stays empty. */
  async function rejectsEach(t: Test, sessionId: string, events: Record<string, unknown>[], detail: Detail) {
    const jwt = await api.session(sessionId);
    for (const event of events) {
      const res = await api.withJwt("/v2/create_events", { events: [event] }, jwt);
      isAnswer(t, res, 400, invalid(detail), JSON.stringify(event));
    }
    t.strictSame(await eventIds(api.store, sessionId), []);
  }

  t.test("E2: an unknown type is a 400 listing the accepted ones", async (t) => {
    const events = ["chat", "llms", "LLM", "tools"].map((type) => ({ type, id: "x" }));
    await rejectsEach(t, "e2-unknown-type", events, {
      path: "events[0].type",
      message: "must be one of: llm, tool, action, error",
    });
  });

  t.test("E2: an unknown event_type is a 400 listing the accepted ones", async (t) => {
    const events = ["apis", "llm", "chats"].map((eventType) => ({ event_type: eventType, id: "x" }));
    await rejectsEach(t, "e2-unknown-event-type", events, {
      path: "events[0].event_type",
      message: "must be one of: llms, tools, actions, errors",
    });
  });

  t.test("E2: neither type nor event_type is a 400", async (t) => {
    const events = [{ id: "x" }, { id: "x", type: null, event_type: null }, { id: "x", model: "m" }];
    await rejectsEach(t, "e2-neither", events, { path: "events[0].type", message: `is required: ${KIND_RULE}` });
  });

  t.test("E2: one bad kind among good events stores nothing and names its index", async (t) => {
    const { session, withJwt, store } = api;
    const jwt = await session("e2-atomic");
    const events = [
      { type: "llm", id: "g1" },
      { type: "tool", id: "g2" },
      { type: "chat", id: "g3" },
    ];
    const res = await withJwt("/v2/create_events", { events }, jwt);
    isAnswer(t, res, 400, invalid({ path: "events[2].type", message: "must be one of: llm, tool, action, error" }));
    t.strictSame(await eventIds(store, "e2-atomic"), []);
  });
});

// ------------------------------------------------------------------------------------------ E3

t.test("E3: event ids", async (t) => {
  const api = await build(t, { now: () => NOW });
  const nowHex = NOW.toString(16).padStart(12, "0");

  t.test("E3: the client's id is kept", async (t) => {
    const { session, withJwt, store } = api;
    const jwt = await session("e3-client");
    const id = "7289ea22-125f-4683-99d4-29277a6771b2";
    const res = await withJwt("/v2/create_events", { events: [{ type: "llm", id }] }, jwt);
    isAnswer(t, res, 200, { status: "success", event_ids: [id] });
    t.strictSame(await eventIds(store, "e3-client"), [id]);
  });

  t.test("E3: a missing id gets a server UUIDv7 of the receive time", async (t) => {
    const { session, withJwt, store } = api;
    const jwt = await session("e3-v7");
    const res = await withJwt("/v2/create_events", { events: [{ type: "llm" }, { type: "tool", id: null }] }, jwt);
    t.equal(res.statusCode, 200);
    const answered = res.json().event_ids as string[];
    t.equal(answered.length, 2);
    for (const id of answered) {
      t.match(id, UUID_V7);
      t.equal(id.replace(/-/g, "").slice(0, 12), nowHex, "time-ordered: the first 48 bits are the clock");
    }
    t.not(answered[0], answered[1], "two events get two ids");
    t.strictSame((await eventIds(store, "e3-v7")).sort(), [...answered].sort());
    const types = Object.fromEntries((await inspect(store).listEvents("e3-v7")).map((e) => [e.id, e.type]));
    t.strictSame(types, { [answered[0] as string]: "llm", [answered[1] as string]: "tool" });
  });

  t.test("E3: a retry without ids gets new ids (cannot be deduplicated)", async (t) => {
    const { session, withJwt, store } = api;
    const jwt = await session("e3-noid-retry");
    const first = await withJwt("/v2/create_events", { events: [{ type: "llm" }] }, jwt);
    const second = await withJwt("/v2/create_events", { events: [{ type: "llm" }] }, jwt);
    t.equal(first.statusCode, 200);
    t.equal(second.statusCode, 200);
    t.not(first.json().event_ids[0], second.json().event_ids[0]);
    t.equal((await eventIds(store, "e3-noid-retry")).length, 2);
  });

  t.test("E3: event_ids are in request order", async (t) => {
    const { session, withJwt } = api;
    const jwt = await session("e3-order");
    const events = [
      { type: "llm", id: "c" },
      { type: "tool", id: "a" },
      { type: "error" },
      { type: "action", id: "b" },
    ];
    const res = await withJwt("/v2/create_events", { events }, jwt);
    t.equal(res.statusCode, 200);
    const answered = res.json().event_ids as string[];
    t.equal(answered.length, 4);
    t.equal(answered[0], "c");
    t.equal(answered[1], "a");
    t.match(answered[2], UUID_V7);
    t.equal(answered[3], "b");
  });

  t.test("E3: the same id twice in one call appears twice and the later copy is stored", async (t) => {
    const { session, withJwt, store } = api;
    const jwt = await session("e3-twice");
    const events = [
      { type: "llm", id: "dup", model: "first", prompt: "one" },
      { type: "tool", id: "other" },
      { type: "llm", id: "dup", model: "second", completion: "two" },
    ];
    const res = await withJwt("/v2/create_events", { events }, jwt);
    isAnswer(t, res, 200, { status: "success", event_ids: ["dup", "other", "dup"] });
    t.strictSame(await eventViews(store, "e3-twice"), [
      { ...base("dup", "llm", "e3-twice"), model: "second", completion: "two" },
      base("other", "tool", "e3-twice"),
    ]);
  });

  t.test("E3: a retry of an already-stored id keeps the first copy", async (t) => {
    const { session, withJwt, store } = api;
    const jwt = await session("e3-retry");
    const first = await withJwt("/v2/create_events", { events: [{ type: "llm", id: "r1", model: "first" }] }, jwt);
    t.equal(first.statusCode, 200);
    const retry = await withJwt(
      "/v2/create_events",
      {
        events: [
          { type: "llm", id: "r1", model: "changed", cost: 9 },
          { type: "tool", id: "r2" },
        ],
      },
      jwt,
    );
    isAnswer(t, retry, 200, { status: "success", event_ids: ["r1", "r2"] });
    t.strictSame(await eventViews(store, "e3-retry"), [
      { ...base("r1", "llm", "e3-retry"), model: "first" },
      base("r2", "tool", "e3-retry"),
    ]);
    const again = await withJwt("/v2/create_events", { events: [{ type: "llm", id: "r1", model: "first" }] }, jwt);
    t.equal(again.statusCode, 200, "an identical retry answers 200 again");
    t.strictSame(await eventIds(store, "e3-retry"), ["r1", "r2"]);
  });

  t.test("E3: the same event id in two sessions is stored in both", async (t) => {
    const { session, withJwt, store } = api;
    const a = await session("e3-scope-a");
    const b = await session("e3-scope-b");
    const other = await session("e3-scope-c", {}, OTHER_PROJECT_KEY);
    const ra = await withJwt("/v2/create_events", { events: [{ type: "llm", id: "shared", model: "a" }] }, a);
    const rb = await withJwt("/v2/create_events", { events: [{ type: "tool", id: "shared", name: "b" }] }, b);
    const rc = await withJwt("/v2/create_events", { events: [{ type: "action", id: "shared" }] }, other);
    t.equal(ra.statusCode, 200);
    t.equal(rb.statusCode, 200);
    t.equal(rc.statusCode, 200);
    t.strictSame(await eventViews(store, "e3-scope-a"), [{ ...base("shared", "llm", "e3-scope-a"), model: "a" }]);
    t.strictSame(await eventViews(store, "e3-scope-b"), [{ ...base("shared", "tool", "e3-scope-b"), name: "b" }]);
    t.strictSame(await eventViews(store, "e3-scope-c"), [base("shared", "action", "e3-scope-c")]);
  });

  t.test("E3: an empty or too long id is a 400", async (t) => {
    const { session, withJwt, store } = api;
    const jwt = await session("e3-badid");
    const empty = await withJwt("/v2/create_events", { events: [{ type: "llm", id: "" }] }, jwt);
    isAnswer(t, empty, 400, invalid({ path: "events[0].id", message: "must not be empty" }));
    const long = await withJwt("/v2/create_events", { events: [{ type: "llm", id: "x".repeat(257) }] }, jwt);
    isAnswer(t, long, 400, invalid({ path: "events[0].id", message: "must be at most 256 characters" }));
    t.strictSame(await eventIds(store, "e3-badid"), []);
  });
});

// ------------------------------------------------------------------------------------------ E4

t.test("E4: fields per kind", async (t) => {
  const api = await build(t, { now: () => NOW });

  t.test("E4: llm fields with a string prompt and a string completion", async (t) => {
    const { session, withJwt, store } = api;
    const jwt = await session("e4-llm");
    const event = {
      type: "llm",
      id: "llm-1",
      init_timestamp: "2026-11-22T05:09:43.6537Z",
      end_timestamp: "2026-11-22T05:09:43.953776+00:00",
      agent_id: "agent-1",
      session_id: "e4-llm",
      model: "gpt-4o-mini",
      prompt: "2+2?",
      completion: "4",
      prompt_tokens: 12,
      completion_tokens: 1,
      cost: 0.0000021,
      thread_id: "thread-1",
      params: { temperature: 0, stop: ["\n"] },
      returns: { raw: { choices: [{ text: "4" }] } },
    };
    const res = await withJwt("/v2/create_events", { events: [event] }, jwt);
    t.equal(res.statusCode, 200);
    const [record] = await inspect(store).listEvents("e4-llm");
    t.equal(record?.model, "gpt-4o-mini");
    t.equal(record?.prompt_tokens, 12);
    t.equal(record?.completion_tokens, 1);
    t.equal(record?.cost, 0.0000021);
    t.strictSame(await eventViews(store, "e4-llm"), [
      {
        id: "llm-1",
        type: "llm",
        session_id: "e4-llm",
        init_timestamp: "2026-11-22T05:09:43.6537Z",
        end_timestamp: "2026-11-22T05:09:43.953776Z",
        agent_id: "agent-1",
        model: "gpt-4o-mini",
        prompt_tokens: 12,
        completion_tokens: 1,
        cost: 0.0000021,
        thread_id: "thread-1",
        prompt: "2+2?",
        completion: "4",
        params: { temperature: 0, stop: ["\n"] },
        returns: { raw: { choices: [{ text: "4" }] } },
      },
    ]);
  });

  t.test("E4: llm prompt as a message array and completion as one message", async (t) => {
    const { session, withJwt, store } = api;
    const jwt = await session("e4-llm-messages");
    const prompt = [
      { role: "system", content: "You are terse." },
      { role: "user", content: [{ type: "text", text: "2+2?" }], name: "alice" },
    ];
    const completion = { role: "assistant", content: null, tool_calls: [{ id: "c1", function: { name: "add" } }] };
    const res = await withJwt(
      "/v2/create_events",
      { events: [{ event_type: "llms", id: "llm-2", prompt, completion, prompt_tokens: 0, completion_tokens: 0 }] },
      jwt,
    );
    t.equal(res.statusCode, 200);
    t.strictSame(await eventViews(store, "e4-llm-messages"), [
      {
        ...base("llm-2", "llm", "e4-llm-messages"),
        prompt_tokens: 0,
        completion_tokens: 0,
        prompt,
        completion,
        event_type: "llms",
      },
    ]);
  });

  t.test("E4: a message that only calls tools may leave content out; role is still required", async (t) => {
    const { session, withJwt, store } = api;
    const jwt = await session("e4-llm-tool-calls");
    const prompt = [
      { role: "user", content: "add 2 and 2" },
      { role: "assistant", tool_calls: [{ id: "c1", type: "function", function: { name: "add" } }] },
      { role: "tool", tool_call_id: "c1", content: "4" },
    ];
    const completion = { role: "assistant", tool_calls: [{ id: "c2", function: { name: "done" } }] };
    const res = await withJwt("/v2/create_events", { events: [{ type: "llm", id: "llm-3", prompt, completion }] }, jwt);
    t.equal(res.statusCode, 200);
    t.strictSame(await eventViews(store, "e4-llm-tool-calls"), [
      { ...base("llm-3", "llm", "e4-llm-tool-calls"), prompt, completion },
    ]);
    const roleless = await withJwt(
      "/v2/create_events",
      { events: [{ type: "llm", completion: { content: "4" } }] },
      jwt,
    );
    isAnswer(t, roleless, 400, invalid({ path: "events[0].completion.role", message: "is required" }));
  });

  t.test("E4: tool fields under their canonical names", async (t) => {
    const { session, withJwt, store } = api;
    const jwt = await session("e4-tool");
    const event = { type: "tool", id: "tool-1", name: "calculator", input: "2+2", output: "4", logs: ["ran"] };
    t.equal((await withJwt("/v2/create_events", { events: [event] }, jwt)).statusCode, 200);
    const [record] = await inspect(store).listEvents("e4-tool");
    t.strictSame(record?.fields, { name: "calculator", input: "2+2", output: "4", logs: ["ran"] });
    t.strictSame(await eventViews(store, "e4-tool"), [
      { ...base("tool-1", "tool", "e4-tool"), name: "calculator", input: "2+2", output: "4", logs: ["ran"] },
    ]);
  });

  t.test("E4: tool fields under the SDK's names tool_name, params, returns", async (t) => {
    const { session, withJwt, store } = api;
    const jwt = await session("e4-tool-sdk");
    const event = {
      event_type: "tools",
      id: "tool-2",
      init_timestamp: "2026-11-22T05:09:43.653822+00:00",
      tool_name: "calculator",
      params: { a: 2, b: 2 },
      returns: "4",
      agent_id: "b8d63dc0-a7e4-467a-9038-02ccb144ef62",
    };
    t.equal((await withJwt("/v2/create_events", { events: [event] }, jwt)).statusCode, 200);
    const [record] = await inspect(store).listEvents("e4-tool-sdk");
    t.equal(record?.type, "tool");
    t.strictSame(record?.fields, { name: "calculator", input: { a: 2, b: 2 }, output: "4" });
    t.strictSame(await eventViews(store, "e4-tool-sdk"), [
      {
        id: "tool-2",
        type: "tool",
        session_id: "e4-tool-sdk",
        init_timestamp: "2026-11-22T05:09:43.653822Z",
        end_timestamp: null,
        agent_id: "b8d63dc0-a7e4-467a-9038-02ccb144ef62",
        name: "calculator",
        input: { a: 2, b: 2 },
        output: "4",
        event_type: "tools",
        tool_name: "calculator",
        params: { a: 2, b: 2 },
        returns: "4",
      },
    ]);
  });

  t.test("E4: action fields", async (t) => {
    const { session, withJwt, store } = api;
    const jwt = await session("e4-action");
    const fields = {
      action_type: "click",
      name: "submit",
      params: { selector: "#go" },
      returns: { ok: true },
      logs: "clicked",
      screenshot: "data:image/png;base64,iVBORw0KGgo=",
    };
    const res = await withJwt("/v2/create_events", { events: [{ type: "action", id: "act-1", ...fields }] }, jwt);
    t.equal(res.statusCode, 200);
    const [record] = await inspect(store).listEvents("e4-action");
    t.strictSame(record?.fields, fields);
    t.strictSame(await eventViews(store, "e4-action"), [{ ...base("act-1", "action", "e4-action"), ...fields }]);
  });

  t.test("E4: error fields, with no id and timestamp as init_timestamp", async (t) => {
    const { session, withJwt, store } = api;
    const jwt = await session("e4-error");
    const fields = {
      error_type: "ValueError",
      code: "E_SYNTH",
      details: { message: "synthetic error from driver", line: 3 },
      logs: "Traceback (most recent call last): ...",
      trigger_event_id: "92f31146-4cad-47e4-b68b-852941700232",
      trigger_event_type: "tools",
    };
    const event = { event_type: "errors", timestamp: "2026-11-22T05:09:43.654493+00:00", ...fields };
    const res = await withJwt("/v2/create_events", { events: [event] }, jwt);
    t.equal(res.statusCode, 200);
    const [id] = res.json().event_ids as string[];
    t.match(id, UUID_V7);
    const [record] = await inspect(store).listEvents("e4-error");
    t.equal(record?.init_timestamp, "2026-11-22T05:09:43.654493Z");
    t.strictSame(record?.fields, fields);
    t.strictSame(await eventViews(store, "e4-error"), [
      {
        id,
        type: "error",
        session_id: "e4-error",
        init_timestamp: "2026-11-22T05:09:43.654493Z",
        end_timestamp: null,
        agent_id: null,
        ...fields,
        event_type: "errors",
        timestamp: "2026-11-22T05:09:43.654493Z",
      },
    ]);
  });

  t.test("E4: an error code may be an integer", async (t) => {
    const { session, withJwt, store } = api;
    const jwt = await session("e4-error-code");
    const res = await withJwt("/v2/create_events", { events: [{ type: "error", id: "err-2", code: 500 }] }, jwt);
    t.equal(res.statusCode, 200);
    t.strictSame(await eventViews(store, "e4-error-code"), [{ ...base("err-2", "error", "e4-error-code"), code: 500 }]);
  });

  t.test("E4: init_timestamp absent is the receive time; every common field is stored", async (t) => {
    const { session, withJwt, store } = api;
    const jwt = await session("e4-common");
    const event = {
      type: "tool",
      id: "common",
      end_timestamp: "2026-11-22 05:10:00",
      agent_id: "agent-x",
      session_id: "e4-common",
    };
    t.equal((await withJwt("/v2/create_events", { events: [event] }, jwt)).statusCode, 200);
    t.strictSame(await eventViews(store, "e4-common"), [
      {
        id: "common",
        type: "tool",
        session_id: "e4-common",
        init_timestamp: NOW_ISO,
        end_timestamp: "2026-11-22T05:10:00Z",
        agent_id: "agent-x",
      },
    ]);
  });

  t.test("E4: a bad field type or value is a 400 naming the path, nothing stored", async (t) => {
    const { session, withJwt, store } = api;
    const jwt = await session("e4-bad");
    const cases: [Record<string, unknown>, Detail][] = [
      [{ prompt_tokens: -1 }, { path: "events[1].prompt_tokens", message: "must be >= 0" }],
      [{ completion_tokens: -5 }, { path: "events[1].completion_tokens", message: "must be >= 0" }],
      [{ prompt_tokens: 1.5 }, { path: "events[1].prompt_tokens", message: "must be an integer or null" }],
      [{ completion_tokens: "3" }, { path: "events[1].completion_tokens", message: "must be an integer or null" }],
      [{ cost: -0.01 }, { path: "events[1].cost", message: "must be >= 0" }],
      [{ cost: "0.01" }, { path: "events[1].cost", message: "must be a number or null" }],
      [{ prompt: 42 }, { path: "events[1].prompt", message: "must be a string or an array or null" }],
      [{ completion: 42 }, { path: "events[1].completion", message: "must be a string or an object or null" }],
      [{ prompt: [{ content: "hi" }] }, { path: "events[1].prompt[0].role", message: "is required" }],
      [
        { init_timestamp: "2026-11-22" },
        {
          path: "events[1].init_timestamp",
          message: "must be an ISO 8601 date-time with a time, such as 2026-11-22T05:09:43.640361Z",
        },
      ],
    ];
    for (const [fields, detail] of cases) {
      const events = [
        { type: "tool", id: "fine" },
        { type: "llm", id: "bad", ...fields },
      ];
      const res = await withJwt("/v2/create_events", { events }, jwt);
      isAnswer(t, res, 400, invalid(detail), JSON.stringify(fields));
    }
    t.strictSame(await eventIds(store, "e4-bad"), []);
  });

  t.test("E4: zero tokens and zero cost are valid", async (t) => {
    const { session, withJwt, store } = api;
    const jwt = await session("e4-zero");
    const event = { type: "llm", id: "z", prompt_tokens: 0, completion_tokens: 0, cost: 0 };
    t.equal((await withJwt("/v2/create_events", { events: [event] }, jwt)).statusCode, 200);
    t.strictSame(await eventViews(store, "e4-zero"), [
      { ...base("z", "llm", "e4-zero"), prompt_tokens: 0, completion_tokens: 0, cost: 0 },
    ]);
  });
});

// ------------------------------------------------------------------------------------------ E5

t.test("E5: an event naming another session", async (t) => {
  const api = await build(t, { now: () => NOW });

  t.test("E5: a session_id of another session is a 403 and nothing is stored", async (t) => {
    const { session, withJwt, store } = api;
    const jwt = await session("e5-mine");
    await session("e5-yours");
    const events = [
      { type: "llm", id: "fine" },
      { type: "llm", id: "foreign", session_id: "e5-yours" },
    ];
    for (const url of ["/v2/create_events", "/create_events"]) {
      const res = await withJwt(url, { events }, jwt);
      isAnswer(t, res, 403, forbidden("e5-mine", "e5-yours"), url);
    }
    t.strictSame(await eventIds(store, "e5-mine"), []);
    t.strictSame(await eventIds(store, "e5-yours"), []);
  });

  t.test("E5: a session_id of a session of another project, or of none, is a 403", async (t) => {
    const { session, withJwt, store } = api;
    const jwt = await session("e5-own");
    await session("e5-theirs", {}, OTHER_PROJECT_KEY);
    for (const other of ["e5-theirs", "e5-nowhere"]) {
      const res = await withJwt("/v2/create_events", { events: [{ type: "tool", session_id: other }] }, jwt);
      isAnswer(t, res, 403, forbidden("e5-own", other), other);
    }
    t.strictSame(await eventIds(store, "e5-own"), []);
    t.strictSame(await eventIds(store, "e5-theirs"), []);
  });

  t.test("E5: a session_id equal to the JWT's session is fine", async (t) => {
    const { session, withJwt, store } = api;
    const jwt = await session("e5-same");
    const res = await withJwt(
      "/v2/create_events",
      {
        events: [
          { type: "llm", id: "same", session_id: "e5-same" },
          { type: "tool", id: "plain" },
        ],
      },
      jwt,
    );
    isAnswer(t, res, 200, { status: "success", event_ids: ["same", "plain"] });
    t.strictSame(await eventViews(store, "e5-same"), [
      base("plain", "tool", "e5-same"),
      base("same", "llm", "e5-same"),
    ]);
  });

  t.test("E5: a schema violation is a 400 before the 403", async (t) => {
    const { session, withJwt } = api;
    const jwt = await session("e5-order");
    const res = await withJwt("/v2/create_events", { events: [{ type: "chat", session_id: "e5-elsewhere" }] }, jwt);
    isAnswer(t, res, 400, invalid({ path: "events[0].type", message: "must be one of: llm, tool, action, error" }));
  });
});

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
