/**
 * Contract part 3, rules E4..E5: the fields of each kind of event, and an event naming another
 * session, through real HTTP on a real (in-memory) SQLite store. Every subtest name starts with
 * the rule id it pins.
 */
import t from "tap";
import { base, NOW, NOW_ISO, UUID_V7 } from "./events.helpers.ts";
import {
  build,
  type Detail,
  eventIds,
  eventViews,
  forbidden,
  inspect,
  invalid,
  isAnswer,
  OTHER_PROJECT_KEY,
} from "./helper.ts";

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
