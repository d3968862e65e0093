/**
 * Contract part 2, rules S6..S7: update_session's answer, and an ended session stays writable,
 * through real HTTP on a real (in-memory) SQLite store. Every subtest name starts with the rule id
 * it pins.
 */
import t from "tap";
import { build, eventIds, inspect, isAnswer, type TestApp } from "./helper.ts";
import { bare, HOST_ENV, NOW, NOW_ISO, SESSION_URL } from "./sessions.helpers.ts";

/** The clock of every app here; it stays at NOW (only S3, in sessions.s2-s3.test.ts, moves its own). */
const clock = NOW;

let costSessions = 0;

/** Creates a new session holding these events and answers the token_cost that update_session reports. */
async function tokenCost({ session, withJwt }: TestApp, events: unknown[]): Promise<string> {
  costSessions += 1;
  const jwt = await session(`cost-${costSessions}`);
  if (events.length > 0) {
    const created = await withJwt("/v2/create_events", { events }, jwt);
    if (created.statusCode !== 200) throw new Error(`create_events answered ${created.statusCode}: ${created.body}`);
  }
  const res = await withJwt("/v2/update_session", { session: {} }, jwt);
  if (res.statusCode !== 200) throw new Error(`update_session answered ${res.statusCode}: ${res.body}`);
  return res.json().token_cost as string;
}

// ------------------------------------------------------------------------------------------ S6

t.test("S6: update_session answer", async (t) => {
  const api = await build(t, { now: () => clock });
  t.test("S6: the answer is exactly status, session, token_cost, session_url", async (t) => {
    const { session, withJwt } = api;
    const jwt = await session("answer 1");
    const res = await withJwt("/v2/update_session", { session: {} }, jwt);
    isAnswer(t, res, 200, {
      status: "success",
      session: bare("answer 1"),
      token_cost: "0.00",
      session_url: `${SESSION_URL}answer%201`,
    });
  });

  t.test("S6: the session carries id even when the client used session_id", async (t) => {
    const { withKey, withJwt } = api;
    const created = await withKey("/v2/create_session", { session: { session_id: "sid-only" } });
    const jwt = created.json().jwt;
    const res = await withJwt("/v2/update_session", { session: { session_id: "sid-only" } }, jwt);
    t.equal(res.statusCode, 200);
    const s = res.json().session;
    t.equal(s.id, "sid-only");
    t.notOk("session_id" in s, "no session_id key in the stored session");
    t.strictSame(s, bare("sid-only"));
  });

  t.test("S6: named fields never set are null, unknown fields sit at the top level as sent", async (t) => {
    const { session, withJwt } = api;
    const jwt = await session("shape", { video: null, nested: { a: [1, null, { b: "c" }] }, flag: false });
    const res = await withJwt("/v2/update_session", { session: { number: 1.5, jwt: "echoed-token" } }, jwt);
    t.equal(res.statusCode, 200);
    t.strictSame(res.json().session, {
      id: "shape",
      init_timestamp: NOW_ISO,
      end_timestamp: null,
      end_state: null,
      end_state_reason: null,
      tags: null,
      host_env: null,
      video: null,
      nested: { a: [1, null, { b: "c" }] },
      flag: false,
      number: 1.5,
    });
  });

  t.test("S6: every named field set is returned", async (t) => {
    const { session, withJwt } = api;
    const jwt = await session("all");
    const body = {
      session: {
        id: "all",
        init_timestamp: "2026-11-22T05:09:43.640361+00:00",
        end_timestamp: "2026-11-22T05:09:43.654544+00:00",
        end_state: "completed",
        end_state_reason: "driver finished",
        tags: ["realclient", "driver"],
        host_env: HOST_ENV,
      },
    };
    const res = await withJwt("/v2/update_session", body, jwt);
    isAnswer(t, res, 200, {
      status: "success",
      session: {
        id: "all",
        init_timestamp: "2026-11-22T05:09:43.640361Z",
        end_timestamp: "2026-11-22T05:09:43.654544Z",
        end_state: "Success",
        end_state_reason: "driver finished",
        tags: ["realclient", "driver"],
        host_env: HOST_ENV,
      },
      token_cost: "0.00",
      session_url: `${SESSION_URL}all`,
    });
  });

  t.test("S6: token_cost is 0.00 with no llm event", async (t) => {
    t.equal(await tokenCost(api, []), "0.00");
    t.equal(await tokenCost(api, [{ type: "llm", model: "m" }]), "0.00", "an llm event without cost");
  });

  t.test("S6: token_cost of one llm cost of 2.1e-06 is 0.0000021", async (t) => {
    t.equal(await tokenCost(api, [{ type: "llm", cost: 2.1e-6 }]), "0.0000021");
  });

  t.test("S6: token_cost of 0.5 is 0.50", async (t) => {
    t.equal(await tokenCost(api, [{ event_type: "llms", cost: 0.5 }]), "0.50");
  });

  t.test("S6: token_cost keeps at least two decimals for whole numbers", async (t) => {
    t.equal(await tokenCost(api, [{ type: "llm", cost: 3 }]), "3.00");
  });

  t.test("S6: token_cost never uses an exponent, however large the sum", async (t) => {
    t.equal(await tokenCost(api, [{ type: "llm", cost: 1e9 }]), "1000000000.00", "the largest cost an event may carry");
    const many = Array.from({ length: 1000 }, () => ({ type: "llm", cost: 1e9 }));
    t.equal(await tokenCost(api, many), "1000000000000.00", "1000 of them");
  });

  t.test("S6: a cost over one billion USD is a 400 naming the field", async (t) => {
    const jwt = await api.session("s6-too-costly");
    const res = await api.withJwt("/v2/create_events", { events: [{ type: "llm", cost: 1e21 }] }, jwt);
    t.equal(res.statusCode, 400);
    t.same(res.json().details, [{ path: "events[0].cost", message: "must be <= 1000000000" }]);
  });

  t.test("S6: token_cost has at most 12 decimals and no exponent", async (t) => {
    t.equal(await tokenCost(api, [{ type: "llm", cost: 0.123456789012345 }]), "0.123456789012");
    t.equal(await tokenCost(api, [{ type: "llm", cost: 1e-7 }]), "0.0000001");
  });

  t.test("S6: costs on tool, action and error events are not counted", async (t) => {
    const events = [
      { type: "tool", cost: 5 },
      { type: "action", cost: 7 },
      { type: "error", cost: 11 },
      { type: "llm", cost: 0.25 },
    ];
    t.equal(await tokenCost(api, events), "0.25");
    t.equal(await tokenCost(api, [{ type: "tool", cost: 5 }]), "0.00");
  });

  t.test("S6: token_cost is the sum of several llm costs", async (t) => {
    const events = [
      { type: "llm", cost: 0.1 },
      { type: "llm", cost: 0.2 },
      { event_type: "llms", cost: 0.0000021 },
      { type: "llm" },
    ];
    t.equal(await tokenCost(api, events), "0.3000021");
    t.equal(
      await tokenCost(api, [
        { type: "llm", cost: 1.25 },
        { type: "llm", cost: 2 },
      ]),
      "3.25",
    );
  });

  t.test("S6: token_cost counts only the session's own events", async (t) => {
    const { session, withJwt } = api;
    const a = await session("own-a");
    const b = await session("own-b");
    t.equal((await withJwt("/v2/create_events", { events: [{ type: "llm", cost: 1 }] }, a)).statusCode, 200);
    t.equal((await withJwt("/v2/create_events", { events: [{ type: "llm", cost: 0.5 }] }, b)).statusCode, 200);
    const res = await withJwt("/v2/update_session", { session: {} }, b);
    t.equal(res.json().token_cost, "0.50");
  });

  t.test("S6: updating a cost through update_events changes token_cost", async (t) => {
    const { session, withJwt } = api;
    const jwt = await session("upd");
    const events = [
      { type: "llm", id: "e1", cost: 0.5 },
      { type: "llm", id: "e2", cost: 0.25 },
    ];
    t.equal((await withJwt("/v2/create_events", { events }, jwt)).statusCode, 200);
    t.equal((await withJwt("/v2/update_session", { session: {} }, jwt)).json().token_cost, "0.75");
    const upd = await withJwt("/v2/update_events", { events: [{ event_id: "e1", cost: 0.0000021 }] }, jwt);
    t.equal(upd.statusCode, 200);
    t.equal((await withJwt("/v2/update_session", { session: {} }, jwt)).json().token_cost, "0.2500021");
  });
});

// ------------------------------------------------------------------------------------------ S7

t.test("S7: an ended session stays writable", async (t) => {
  const api = await build(t, { now: () => clock });
  t.test("S7: events after end_state Success are accepted and stored", async (t) => {
    const { session, withJwt, store } = api;
    const jwt = await session("ended");
    const end = { session: { end_state: "Success", end_timestamp: "2026-11-22T05:09:43Z" } };
    t.equal((await withJwt("/v2/update_session", end, jwt)).statusCode, 200);
    const late = await withJwt(
      "/v2/create_events",
      { events: [{ type: "llm", id: "late", init_timestamp: "2026-11-22T05:09:44Z", cost: 0.5 }] },
      jwt,
    );
    isAnswer(t, late, 200, { status: "success", event_ids: ["late"] });
    t.strictSame(await eventIds(store, "ended"), ["late"]);
    const unversioned = await withJwt("/create_events", { events: [{ type: "tool", id: "late2" }] }, jwt);
    t.equal(unversioned.statusCode, 200);
    t.strictSame((await eventIds(store, "ended")).sort(), ["late", "late2"]);
    const after = await withJwt("/v2/update_session", { session: {} }, jwt);
    t.equal(after.json().token_cost, "0.50");
    t.equal(after.json().session.end_state, "Success");
  });

  t.test("S7: a later update changes the end state", async (t) => {
    const { session, withJwt, store } = api;
    const jwt = await session("reopen", { end_state: "Success", end_timestamp: "2026-11-22T05:09:43Z" });
    const res = await withJwt(
      "/v2/update_session",
      { session: { end_state: "Fail", end_timestamp: "2026-11-22T05:10:00Z", end_state_reason: "late failure" } },
      jwt,
    );
    t.equal(res.statusCode, 200);
    const s = await inspect(store).getSession("reopen");
    t.equal(s?.end_state, "Fail");
    t.equal(s?.end_timestamp, "2026-11-22T05:10:00Z");
    t.equal(s?.end_state_reason, "late failure");
    const back = await withJwt("/v2/update_session", { session: { end_state: "Indeterminate" } }, jwt);
    t.equal(back.statusCode, 200);
    t.equal((await inspect(store).getSession("reopen"))?.end_state, "Indeterminate");
  });

  t.test("S7: update_events and create_agent work after the end", async (t) => {
    const { session, withJwt, store } = api;
    const jwt = await session("ended2");
    t.equal((await withJwt("/v2/create_events", { events: [{ type: "llm", id: "e" }] }, jwt)).statusCode, 200);
    t.equal((await withJwt("/v2/update_session", { session: { end_state: "Fail" } }, jwt)).statusCode, 200);
    const upd = await withJwt("/v2/update_events", { events: [{ event_id: "e", completion: "late" }] }, jwt);
    t.equal(upd.statusCode, 200);
    t.equal((await inspect(store).listEvents("ended2"))[0]?.fields.completion, "late");
    const agent = await withJwt("/v2/create_agent", { id: "ag", name: "late agent" }, jwt);
    t.equal(agent.statusCode, 200);
    t.strictSame(await inspect(store).listAgents("ended2"), [{ id: "ag", name: "late agent", extra: {} }]);
  });
});
