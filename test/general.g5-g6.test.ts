/**
 * Contract section 1, "Every call": rules G5-G6 (unknown fields and null, timestamps), through
 * real HTTP (app.inject) on a real `:memory:` SQLite store. Each top-level test is one rule; every
 * subtest name starts with its id.
 */
import t from "tap";
import { eventView, sessionView } from "../domain/views.ts";
import { API_KEY, build, inspect, isInvalid, isSuccess, json, rawPost } from "./helper.ts";

/** A stored timestamp in microsecond form, so `…43.5Z` and `…43.500000Z` compare equal. */
function micro(iso: string | null | undefined): string {
  const m = /^(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2})(?:\.(\d{1,6}))?Z$/.exec(iso ?? "");
  return m ? `${m[1]}.${(m[2] ?? "").padEnd(6, "0")}Z` : `not a UTC timestamp with at most 6 decimals: ${iso}`;
}

t.test("G5: unknown fields are kept exactly; jwt is never stored; null means not given", async (t) => {
  const nested = { list: [1, null, { deep: true, empty: {} }], text: "é ✓", zero: 0 };

  t.test("G5: unknown session fields are stored and returned as sent, jwt dropped", async (t) => {
    const api = await build(t);
    const res = await api.withKey("/v2/create_session", {
      session: {
        session_id: "g5-s",
        video: null,
        custom: nested,
        "odd key": "x",
        flag: false,
        ratio: 0.25,
        jwt: "eyJ.secret.token",
      },
    });
    const { jwt } = isSuccess(t, res, ["jwt", "session_id", "session_url"]);
    const stored = await inspect(api.store).getSession("g5-s");
    t.same(stored?.extra, { video: null, custom: nested, "odd key": "x", flag: false, ratio: 0.25 });
    t.notOk(stored && "jwt" in stored.extra, "jwt not stored");
    t.notOk(JSON.stringify(stored).includes("eyJ.secret.token"), "the token is nowhere in the record");

    const update = await api.withJwt(
      "/v2/update_session",
      { session: { more: [{ a: null }], flag: true, jwt: { token: "eyJ.other" } } },
      jwt,
    );
    const body = isSuccess(t, update, ["session", "token_cost", "session_url"]);
    t.same(body.session, {
      id: "g5-s",
      init_timestamp: stored?.init_timestamp,
      end_timestamp: null,
      end_state: null,
      end_state_reason: null,
      tags: null,
      host_env: null,
      video: null,
      custom: nested,
      "odd key": "x",
      flag: true,
      ratio: 0.25,
      more: [{ a: null }],
    });
    t.notOk("jwt" in body.session, "jwt is not returned");
    const after = await inspect(api.store).getSession("g5-s");
    t.notOk(after && "jwt" in after.extra, "jwt not stored by update");
    t.same(sessionView(after as NonNullable<typeof after>), body.session, "the answer is the stored session");
  });

  t.test("G5: unknown event fields are kept exactly, including inside messages", async (t) => {
    const api = await build(t);
    const jwt = await api.session("g5-e");
    const prompt = [
      { role: "system", content: "terse", cache: { ttl: null } },
      { role: "user", content: [{ type: "text", text: "2+2?" }], name: "bob" },
    ];
    const completion = { role: "assistant", content: null, tool_calls: [{ id: "c1", args: { a: 2 } }] };
    const res = await api.withJwt(
      "/v2/create_events",
      {
        events: [
          { id: "g5-llm", type: "llm", prompt, completion, metric: nested, nothing: null, jwt: "eyJ.x.y" },
          { id: "g5-err", event_type: "errors", stack_hint: ["a", "b"], details: { any: [null] }, event_id: "ref-9" },
        ],
      },
      jwt,
    );
    isSuccess(t, res, ["event_ids"]);
    const events = await inspect(api.store).listEvents("g5-e");
    const llm = events.find((e) => e.id === "g5-llm");
    const err = events.find((e) => e.id === "g5-err");
    t.same(llm?.extra, { metric: nested, nothing: null }, "unknown fields stored as sent, jwt dropped");
    const view = eventView(llm as NonNullable<typeof llm>, "g5-e");
    t.same(view.prompt, prompt);
    t.same(view.completion, completion);
    t.same(view.metric, nested);
    t.equal(view.nothing, null);
    t.notOk("jwt" in view);
    t.same(err?.extra, { stack_hint: ["a", "b"], event_id: "ref-9" }, "event_id is not a create field: kept as sent");
    t.same(eventView(err as NonNullable<typeof err>, "g5-e").details, { any: [null] });

    const patch = { events: [{ event_id: "g5-llm", added: { x: [1] }, metric: "replaced", jwt: "eyJ.z" }] };
    isSuccess(t, await api.withJwt("/v2/update_events", patch, jwt), ["updated"]);
    const patched = (await inspect(api.store).listEvents("g5-e")).find((e) => e.id === "g5-llm");
    t.same(patched?.extra, { metric: "replaced", nothing: null, added: { x: [1] } });
  });

  t.test("G5: unknown fields named __proto__ or constructor are kept as plain data", async (t) => {
    const api = await build(t);
    const headers = { "content-type": json, "x-agentmon-api-key": API_KEY };
    const proto = '{"session": {"id": "g5-proto", "__proto__": {"polluted": 1}}}';
    isSuccess(t, await rawPost(api, "/v2/create_session", proto, headers), ["jwt", "session_id", "session_url"]);
    const ctor = '{"session": {"id": "g5-ctor", "constructor": {"prototype": {"polluted": 2}}}}';
    isSuccess(t, await rawPost(api, "/v2/create_session", ctor, headers), ["jwt", "session_id", "session_url"]);
    t.equal(JSON.stringify((await inspect(api.store).getSession("g5-proto"))?.extra), '{"__proto__":{"polluted":1}}');
    t.equal(
      JSON.stringify((await inspect(api.store).getSession("g5-ctor"))?.extra),
      '{"constructor":{"prototype":{"polluted":2}}}',
    );
    t.equal(({} as Record<string, unknown>).polluted, undefined, "no prototype was polluted");
  });

  t.test("G5: unknown agent fields are kept exactly, jwt dropped", async (t) => {
    const api = await build(t);
    const jwt = await api.session("g5-a");
    const body = { id: "g5-agent", name: "planner", role: "lead", config: { tools: null, depth: [2] }, jwt: "t" };
    isSuccess(t, await api.withJwt("/v2/create_agent", body, jwt), ["agent_id"]);
    t.same(await inspect(api.store).listAgents("g5-a"), [
      { id: "g5-agent", name: "planner", extra: { role: "lead", config: { tools: null, depth: [2] } } },
    ]);
  });

  t.test("G5: null on a named field means not given (and is not an unknown field)", async (t) => {
    const api = await build(t);
    const res = await api.withKey("/v2/create_session", {
      session: {
        id: "g5-null",
        session_id: null,
        init_timestamp: null,
        end_timestamp: null,
        end_state: null,
        end_state_reason: null,
        tags: null,
        host_env: null,
      },
    });
    const { jwt } = isSuccess(t, res, ["jwt", "session_id", "session_url"]);
    const stored = await inspect(api.store).getSession("g5-null");
    t.match(stored?.init_timestamp, /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,6})?Z$/, "receive time");
    t.same(stored?.extra, {}, "named nulls are not unknown fields");
    t.equal(stored?.tags, null);

    await api.withJwt("/v2/update_session", { session: { tags: ["keep"], end_state: "ok" } }, jwt);
    const update = await api.withJwt(
      "/v2/update_session",
      { session: { tags: null, end_state: null, host_env: null, end_timestamp: null } },
      jwt,
    );
    const session = isSuccess(t, update, ["session", "token_cost", "session_url"]).session;
    t.same(session.tags, ["keep"], "tags: null changes nothing");
    t.equal(session.end_state, "Success", "end_state: null changes nothing");

    const events = { events: [{ id: "n1", type: "llm", model: null, cost: null, prompt: null, agent_id: null }] };
    isSuccess(t, await api.withJwt("/v2/create_events", events, jwt), ["event_ids"]);
    const [event] = await inspect(api.store).listEvents("g5-null");
    t.equal(event?.model, null);
    t.equal(event?.cost, null);
    t.equal(event?.agent_id, null);
    t.same(event?.extra, {}, "named nulls are not unknown fields");
  });
});

t.test("G6: timestamps are parsed as RFC 3339 / ISO 8601 and stored as UTC with Z", async (t) => {
  const good: [string, string][] = [
    ["2026-11-22T10:39:43.640361+05:30", "2026-11-22T05:09:43.640361Z"],
    ["2026-11-22T05:09:43.640361+00:00", "2026-11-22T05:09:43.640361Z"],
    ["2026-11-22T05:09:43.640361Z", "2026-11-22T05:09:43.640361Z"],
    ["2026-11-22T05:09:43.640361", "2026-11-22T05:09:43.640361Z"],
    ["2026-11-22 05:09:43.640361", "2026-11-22T05:09:43.640361Z"],
    ["2026-11-22 10:39:43.640361+05:30", "2026-11-22T05:09:43.640361Z"],
    ["2026-11-21T21:09:43.640361-08:00", "2026-11-22T05:09:43.640361Z"],
    ["2026-11-22T05:09:43.640361789Z", "2026-11-22T05:09:43.640361Z"],
    ["2026-11-22T05:09:43.6403619Z", "2026-11-22T05:09:43.640361Z"],
    ["2026-11-22T05:09:43.5Z", "2026-11-22T05:09:43.500000Z"],
    ["2026-11-22T05:09:43Z", "2026-11-22T05:09:43.000000Z"],
    ["2026-11-22T05:09:43", "2026-11-22T05:09:43.000000Z"],
    ["2026-11-22 05:09:43+00:00", "2026-11-22T05:09:43.000000Z"],
    ["2027-01-01T04:30:00.000001+05:30", "2026-12-31T23:00:00.000001Z"],
    ["2028-02-29T12:00:00Z", "2028-02-29T12:00:00.000000Z"],
    ["2026-11-22T10:39:43.640361+0530", "2026-11-22T05:09:43.640361Z"],
    ["2026-11-22T10:09:43.640361+05", "2026-11-22T05:09:43.640361Z"],
    ["2026-11-22t05:09:43.640361z", "2026-11-22T05:09:43.640361Z"],
    ["2026-11-22T10:39+05:30", "2026-11-22T05:09:00.000000Z"],
  ];

  t.test("G6: session init_timestamp is converted to UTC", async (t) => {
    const api = await build(t);
    for (const [i, [given, expected]] of good.entries()) {
      const res = await api.withKey("/v2/create_session", { session: { id: `g6-${i}`, init_timestamp: given } });
      isSuccess(t, res, ["jwt", "session_id", "session_url"]);
      const stored = await inspect(api.store).getSession(`g6-${i}`);
      t.match(stored?.init_timestamp, /Z$/, `${given}: ends in Z`);
      t.equal(micro(stored?.init_timestamp), expected, `${given} -> ${expected}`);
    }
    const exact = await inspect(api.store).getSession("g6-0");
    t.equal(exact?.init_timestamp, "2026-11-22T05:09:43.640361Z", "the documented example, exactly");
  });

  t.test("G6: event timestamps (and the timestamp alias) are converted to UTC", async (t) => {
    const api = await build(t);
    const jwt = await api.session("g6-events");
    const events: Record<string, unknown>[] = good.map(([given], i) => ({
      id: `ev-${i}`,
      type: "llm",
      init_timestamp: given,
      end_timestamp: given,
    }));
    events.push({ id: "ev-alias", event_type: "errors", timestamp: "2026-11-22T10:39:43.640361+05:30" });
    isSuccess(t, await api.withJwt("/v2/create_events", { events }, jwt), ["event_ids"]);
    const stored = new Map((await inspect(api.store).listEvents("g6-events")).map((e) => [e.id, e]));
    for (const [i, [given, expected]] of good.entries()) {
      t.equal(micro(stored.get(`ev-${i}`)?.init_timestamp), expected, `init ${given}`);
      t.equal(micro(stored.get(`ev-${i}`)?.end_timestamp), expected, `end ${given}`);
    }
    t.equal(stored.get("ev-alias")?.init_timestamp, "2026-11-22T05:09:43.640361Z", "timestamp alias");
  });

  t.test("G6: update_session and update_events convert too, and answer UTC", async (t) => {
    const api = await build(t);
    const jwt = await api.session("g6-upd", { init_timestamp: "2026-11-22T10:00:00+05:30" });
    const res = await api.withJwt(
      "/v2/update_session",
      { session: { end_timestamp: "2026-11-22 12:39:43.640361789+05:30" } },
      jwt,
    );
    const session = isSuccess(t, res, ["session", "token_cost", "session_url"]).session;
    t.equal(micro(session.init_timestamp), "2026-11-22T04:30:00.000000Z");
    t.equal(session.end_timestamp, "2026-11-22T07:09:43.640361Z");
    await api.withJwt("/v2/create_events", { events: [{ id: "u1", type: "tool" }] }, jwt);
    const patch = { events: [{ event_id: "u1", end_timestamp: "2026-11-22T00:00:00.1234567-05:00" }] };
    isSuccess(t, await api.withJwt("/v2/update_events", patch, jwt), ["updated"]);
    const [event] = await inspect(api.store).listEvents("g6-upd");
    t.equal(event?.end_timestamp, "2026-11-22T05:00:00.123456Z");
  });

  t.test("G6: no timestamp given means the receive time, in UTC", async (t) => {
    const api = await build(t, { now: () => Date.UTC(2026, 10, 22, 5, 9, 43, 640) });
    const jwt = await api.session("g6-now");
    await api.withJwt("/v2/create_events", { events: [{ id: "n", type: "llm" }] }, jwt);
    t.equal(micro((await inspect(api.store).getSession("g6-now"))?.init_timestamp), "2026-11-22T05:09:43.640000Z");
    t.equal(micro((await inspect(api.store).listEvents("g6-now"))[0]?.init_timestamp), "2026-11-22T05:09:43.640000Z");
  });

  const bad: unknown[] = [
    "2026-11-22",
    "yesterday",
    "",
    "2026-11-22T",
    "05:09:43",
    "2026-02-30T00:00:00Z",
    "2026-02-29T12:00:00Z",
    "2026-13-01T00:00:00Z",
    "2026-11-31T00:00:00Z",
    "2026-11-22T25:00:00Z",
    "2026-11-22T05:60:00Z",
    "2026-11-22T05:09:43+25:00",
    "22/11/2026 05:09:43",
    "1763788183",
    "2026-11-22T05:09:43.640361Z trailing",
    " 2026-11-22T05:09:43Z",
    "2026-11-22T05:09:43.Z",
    "2026-11-22T05:09:43ZZ",
    1763788183,
    true,
    { at: "2026-11-22T05:09:43Z" },
  ];

  t.test("G6: a date alone or anything else is a 400 naming the field path", async (t) => {
    const api = await build(t);
    for (const [i, value] of bad.entries()) {
      const res = await api.withKey("/v2/create_session", { session: { id: `g6-bad-${i}`, init_timestamp: value } });
      t.test(`G6: session.init_timestamp = ${JSON.stringify(value)}`, async (t) => {
        isInvalid(t, res, ["session.init_timestamp"]);
      });
      t.equal(await inspect(api.store).getSession(`g6-bad-${i}`), undefined);
    }
  });

  t.test("G6: bad timestamps in events and updates name their paths, one detail each", async (t) => {
    const api = await build(t);
    const jwt = await api.session("g6-bad-ev");
    const res = await api.withJwt(
      "/v2/create_events",
      {
        events: [
          { type: "llm", init_timestamp: "2026-11-22T05:09:43Z" },
          { type: "llm", init_timestamp: "2026-11-22" },
          { type: "tool", end_timestamp: "2026-02-30T00:00:00" },
          { event_type: "errors", timestamp: "later" },
        ],
      },
      jwt,
    );
    isInvalid(t, res, ["events[1].init_timestamp", "events[2].end_timestamp", "events[3].timestamp"]);
    t.same(await inspect(api.store).listEvents("g6-bad-ev"), []);
    const upd = await api.withJwt("/v2/update_session", { session: { end_timestamp: "2026-11-22" } }, jwt);
    isInvalid(t, upd, ["session.end_timestamp"]);
    await api.withJwt("/v2/create_events", { events: [{ id: "ok", type: "llm" }] }, jwt);
    const patch = { events: [{ event_id: "ok", end_timestamp: "noon" }] };
    isInvalid(t, await api.withJwt("/v2/update_events", patch, jwt), ["events[0].end_timestamp"]);
    const flat = await api.withKey("/create_session", { id: "g6-flat", init_timestamp: "2026-11-22" });
    isInvalid(t, flat, ["init_timestamp"]);
  });
});
