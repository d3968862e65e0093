/**
 * Contract section 1, "Every call": rules G7-G8 (atomic writes, safe retries), through real HTTP
 * (app.inject) on a real `:memory:` SQLite store. Each top-level test is one rule; every subtest
 * name starts with its id.
 */
import { join } from "node:path";
import t from "tap";
import { openDb } from "../db/sqlite/open.ts";
import { sqliteStore } from "../db/sqlite/store.ts";
import {
  API_KEY,
  build,
  eventViews,
  inspect,
  isError,
  isInvalid,
  isSuccess,
  json,
  rawPost,
  tempDir,
} from "./helper.ts";

t.test("G7: writes are atomic per call", async (t) => {
  t.test("G7: a batch whose last event is invalid stores nothing", async (t) => {
    const api = await build(t);
    const jwt = await api.session("g7-last");
    const events = [
      { id: "g7-1", type: "llm", model: "gpt" },
      { id: "g7-2", type: "tool", name: "calc" },
      { id: "g7-3", type: "action", init_timestamp: "not a time" },
    ];
    isInvalid(t, await api.withJwt("/v2/create_events", { events }, jwt), ["events[2].init_timestamp"]);
    t.same(await inspect(api.store).listEvents("g7-last"), [], "nothing stored");
    isInvalid(t, await api.withJwt("/create_events", { events }, jwt), ["events[2].init_timestamp"]);
    t.same(await inspect(api.store).listEvents("g7-last"), [], "nothing stored (unversioned)");
    const fixed = events.map((e) => ({ ...e, init_timestamp: "2026-11-22T05:09:43Z" }));
    t.same(isSuccess(t, await api.withJwt("/v2/create_events", { events: fixed }, jwt), ["event_ids"]).event_ids, [
      "g7-1",
      "g7-2",
      "g7-3",
    ]);
    t.equal((await inspect(api.store).listEvents("g7-last")).length, 3, "the corrected batch is stored whole");
  });

  t.test("G7: a batch with an event naming another session (403) stores nothing", async (t) => {
    const api = await build(t);
    const jwt = await api.session("g7-mine");
    await api.session("g7-other");
    const events = [
      { id: "g7-a", type: "llm", session_id: "g7-mine" },
      { id: "g7-b", type: "llm" },
      { id: "g7-c", type: "llm", session_id: "g7-other" },
    ];
    isError(t, await api.withJwt("/v2/create_events", { events }, jwt), 403, "Forbidden");
    t.same(await inspect(api.store).listEvents("g7-mine"), []);
    t.same(await inspect(api.store).listEvents("g7-other"), []);
  });

  t.test("G7: update_events with one unknown id applies nothing", async (t) => {
    const api = await build(t);
    const jwt = await api.session("g7-upd");
    await api.withJwt("/v2/create_events", { events: [{ id: "known", type: "llm", model: "before" }] }, jwt);
    const patch = {
      events: [
        { event_id: "known", model: "after" },
        { event_id: "unknown", model: "x" },
      ],
    };
    const body = isError(t, await api.withJwt("/v2/update_events", patch, jwt), 404, "Not found");
    t.same(
      body.details?.map((d) => d.path),
      ["events[1].event_id"],
    );
    const invalid = {
      events: [
        { event_id: "known", model: "after" },
        { event_id: "known", cost: -1 },
      ],
    };
    isInvalid(t, await api.withJwt("/v2/update_events", invalid, jwt), ["events[1].cost"]);
    const [event] = await inspect(api.store).listEvents("g7-upd");
    t.equal(event?.model, "before", "nothing applied");
  });

  t.test("G7: update_session with one bad field changes nothing", async (t) => {
    const api = await build(t);
    const jwt = await api.session("g7-sess", { tags: ["before"], custom: 1 });
    const res = await api.withJwt(
      "/v2/update_session",
      { session: { tags: ["after"], custom: 2, end_state: "Finished" } },
      jwt,
    );
    isInvalid(t, res, ["session.end_state"]);
    const stored = await inspect(api.store).getSession("g7-sess");
    t.same(stored?.tags, ["before"]);
    t.same(stored?.extra, { custom: 1 });
    t.equal(stored?.end_state, null);
  });

  t.test("G7: a 200 means the data is committed to disk", async (t) => {
    const dir = tempDir(t);
    const dbPath = join(dir, "agentmon.db");
    const api = await build(t, { dbPath });
    const jwt = await api.session("g7-disk", { tags: ["durable"] });
    const events = {
      events: [
        { id: "d1", type: "llm", cost: 0.5 },
        { id: "d2", type: "tool" },
      ],
    };
    isSuccess(t, await api.withJwt("/v2/create_events", events, jwt), ["event_ids"]);
    isSuccess(t, await api.withJwt("/v2/create_agent", { id: "ag", name: "n" }, jwt), ["agent_id"]);
    const reader = sqliteStore(openDb(dbPath));
    t.teardown(() => reader.close());
    t.same((await inspect(reader).getSession("g7-disk"))?.tags, ["durable"]);
    t.same((await inspect(reader).listEvents("g7-disk")).map((e) => e.id).sort(), ["d1", "d2"]);
    t.same(
      (await inspect(reader).listAgents("g7-disk")).map((a) => a.id),
      ["ag"],
    );
  });

  t.test("G7: a lone UTF-16 surrogate escape is a 400 and stores nothing; a surrogate pair is kept", async (t) => {
    const api = await build(t);
    const keyHeaders = { "content-type": json, "x-agentmon-api-key": API_KEY };
    const lone = await rawPost(api, "/v2/create_session", '{"session":{"id":"g7-\\ud800"}}', keyHeaders);
    const error = isError(t, lone, 400, "Bad request");
    t.match(error.message, /lone UTF-16 surrogate \(\\ud800\)/, "the message names the escape");
    t.equal(await inspect(api.store).getSession("g7-\ud800"), undefined, "no session was half-created");
    t.equal(await inspect(api.store).getSession("g7-\ufffd"), undefined);

    const jwt = await api.session("g7-unicode");
    const headers = { "content-type": json, authorization: `Bearer ${jwt}` };
    const batch = '{"events":[{"type":"llm","id":"ok","model":"m"},{"type":"llm","id":"bad","model":"x\\udfffy"}]}';
    isError(t, await rawPost(api, "/v2/create_events", batch, headers), 400, "Bad request");
    t.same(await inspect(api.store).listEvents("g7-unicode"), [], "nothing of the batch was stored");

    const pair = '{"events":[{"type":"llm","id":"emoji","model":"\\ud83d\\ude00 ok","note":"\\uD83D\\uDE00"}]}';
    isSuccess(t, await rawPost(api, "/v2/create_events", pair, headers), ["event_ids"]);
    const [stored] = await eventViews(api.store, "g7-unicode");
    t.equal(stored?.model, "😀 ok", "the pair is one character, stored as sent");
    t.equal(stored?.note, "😀");
  });

  t.test("G7: a number beyond a double's range is a 400, never stored as null", async (t) => {
    const api = await build(t);
    const jwt = await api.session("g7-numbers");
    const headers = { "content-type": json, authorization: `Bearer ${jwt}` };
    for (const number of ["1e400", "-1e400", "1E+309", `1${"0".repeat(400)}`]) {
      const body = `{"events":[{"type":"llm","id":"n","extra":{"deep":[${number}]}}]}`;
      const error = isError(t, await rawPost(api, "/v2/create_events", body, headers), 400, "Bad request");
      t.match(error.message, /^The request body has a number too large for a double \(.{1,40}\) at position \d+$/);
    }
    t.same(await inspect(api.store).listEvents("g7-numbers"), [], "nothing was stored");
    const fine = '{"events":[{"type":"llm","id":"n","big":1.7976931348623157e308,"tiny":1e-400,"e":"1e400"}]}';
    isSuccess(t, await rawPost(api, "/v2/create_events", fine, headers), ["event_ids"]);
    const [stored] = await eventViews(api.store, "g7-numbers");
    t.equal(stored?.big, Number.MAX_VALUE, "the largest double is kept");
    t.equal(stored?.tiny, 0, "an underflow rounds to 0, as any JSON reader does");
    t.equal(stored?.e, "1e400", "inside a string it is just text");
  });
});

t.test("G8: every call is safe to retry", async (t) => {
  t.test("G8: create_session repeated answers 200 and overwrites nothing", async (t) => {
    const api = await build(t);
    const first = await api.withKey("/v2/create_session", { session: { id: "g8-s", tags: ["first"], x: 1 } });
    isSuccess(t, first, ["jwt", "session_id", "session_url"]);
    const again = await api.withKey("/v2/create_session", { session: { id: "g8-s", tags: ["second"], x: 2 } });
    const { jwt } = isSuccess(t, again, ["jwt", "session_id", "session_url"]);
    const flat = await api.withKey("/create_session", { session_id: "g8-s", tags: ["third"] });
    isSuccess(t, flat, ["jwt", "session_id", "session_url"]);
    const stored = await inspect(api.store).getSession("g8-s");
    t.same(stored?.tags, ["first"]);
    t.same(stored?.extra, { x: 1 });
    const use = await api.withJwt("/v2/create_events", { events: [{ type: "llm" }] }, jwt);
    isSuccess(t, use, ["event_ids"]);
  });

  t.test("G8: create_events repeated with the same ids never duplicates", async (t) => {
    const api = await build(t);
    const jwt = await api.session("g8-e");
    const batch = {
      events: [
        { id: "r1", type: "llm", model: "first" },
        { id: "r2", type: "tool" },
      ],
    };
    const one = isSuccess(t, await api.withJwt("/v2/create_events", batch, jwt), ["event_ids"]);
    const changed = {
      events: [
        { id: "r1", type: "llm", model: "second" },
        { id: "r2", type: "tool" },
      ],
    };
    const two = isSuccess(t, await api.withJwt("/v2/create_events", changed, jwt), ["event_ids"]);
    const three = isSuccess(t, await api.withJwt("/create_events", batch, jwt), ["event_ids"]);
    t.same(one.event_ids, ["r1", "r2"]);
    t.same(two.event_ids, ["r1", "r2"]);
    t.same(three.event_ids, ["r1", "r2"]);
    const stored = await inspect(api.store).listEvents("g8-e");
    t.equal(stored.length, 2, "two events, not six");
    t.equal(stored.find((e) => e.id === "r1")?.model, "first", "the first stored copy stays");
  });

  t.test("G8: the same id twice in one call is stored once and listed twice", async (t) => {
    const api = await build(t);
    const jwt = await api.session("g8-twice");
    const batch = {
      events: [
        { id: "dup", type: "llm", model: "a" },
        { id: "dup", type: "llm", model: "b" },
      ],
    };
    t.same(isSuccess(t, await api.withJwt("/v2/create_events", batch, jwt), ["event_ids"]).event_ids, ["dup", "dup"]);
    const stored = await inspect(api.store).listEvents("g8-twice");
    t.equal(stored.length, 1);
    t.equal(stored[0]?.model, "b");
  });

  t.test("G8: events without ids are the documented exception", async (t) => {
    const api = await build(t);
    const jwt = await api.session("g8-noid");
    const batch = { events: [{ type: "error", error_type: "E" }] };
    const one = isSuccess(t, await api.withJwt("/v2/create_events", batch, jwt), ["event_ids"]);
    const two = isSuccess(t, await api.withJwt("/v2/create_events", batch, jwt), ["event_ids"]);
    const uuid7 = /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
    t.match(one.event_ids[0], uuid7);
    t.match(two.event_ids[0], uuid7);
    t.not(one.event_ids[0], two.event_ids[0]);
    t.equal((await inspect(api.store).listEvents("g8-noid")).length, 2);
  });

  t.test("G8: create_agent repeated is an upsert", async (t) => {
    const api = await build(t);
    const jwt = await api.session("g8-a");
    for (const name of ["one", "one", "two"]) {
      isSuccess(t, await api.withJwt("/v2/create_agent", { id: "agent", name }, jwt), ["agent_id"]);
    }
    t.same(await inspect(api.store).listAgents("g8-a"), [{ id: "agent", name: "two", extra: {} }]);
  });

  t.test("G8: update_session and update_events repeated answer 200 the same", async (t) => {
    const api = await build(t);
    const jwt = await api.session("g8-u");
    await api.withJwt("/v2/create_events", { events: [{ id: "x", type: "llm", cost: 0.25 }] }, jwt);
    const update = { session: { end_state: "Fail", end_timestamp: "2026-11-22T05:09:43Z", tags: ["t"] } };
    const one = isSuccess(t, await api.withJwt("/v2/update_session", update, jwt), [
      "session",
      "token_cost",
      "session_url",
    ]);
    const two = isSuccess(t, await api.withJwt("/v2/update_session", update, jwt), [
      "session",
      "token_cost",
      "session_url",
    ]);
    t.same(two, one);
    t.equal(one.token_cost, "0.25");
    const patch = { events: [{ event_id: "x", completion: "4", completion_tokens: 1 }] };
    t.equal(isSuccess(t, await api.withJwt("/v2/update_events", patch, jwt), ["updated"]).updated, 1);
    t.equal(isSuccess(t, await api.withJwt("/v2/update_events", patch, jwt), ["updated"]).updated, 1);
    const stored = await inspect(api.store).listEvents("g8-u");
    t.equal(stored.length, 1);
    t.equal(stored[0]?.completion_tokens, 1);
    t.equal(stored[0]?.fields.completion, "4");
  });

  t.test("G8: reauthorize_jwt repeated answers 200 with working tokens", async (t) => {
    const api = await build(t);
    await api.session("g8-r");
    for (let i = 0; i < 2; i++) {
      const { jwt } = isSuccess(t, await api.withKey("/v2/reauthorize_jwt", { session_id: "g8-r" }), ["jwt"]);
      isSuccess(t, await api.withJwt("/v2/create_events", { events: [{ id: "same", type: "llm" }] }, jwt), [
        "event_ids",
      ]);
    }
    t.equal((await inspect(api.store).listEvents("g8-r")).length, 1);
  });
});
