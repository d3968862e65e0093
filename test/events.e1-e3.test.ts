/**
 * Contract part 3, rules E1..E3: create_events takes 1 to 1000 events, an event's kind and event
 * ids, through real HTTP on a real (in-memory) SQLite store. Every subtest name starts with the
 * rule id it pins. E4..E7 are in events.e4-e5.test.ts and events.e6-e7.test.ts.
 */
import t, { type Test } from "tap";
import { eventView } from "../domain/views.ts";
import { base, NOW, UUID_V7 } from "./events.helpers.ts";
import {
  build,
  type Detail,
  eventIds,
  eventViews,
  INVALID_JWT,
  inspect,
  invalid,
  isAnswer,
  OTHER_PROJECT_KEY,
} from "./helper.ts";

const KIND_RULE = "give type (llm, tool, action, error) or event_type (llms, tools, actions, errors)";

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
