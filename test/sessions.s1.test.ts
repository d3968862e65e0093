/**
 * Contract part 2, rule S1: create_session, through real HTTP on a real (in-memory) SQLite store.
 * Every subtest name starts with the rule id it pins. S2..S7 are in the other sessions.*.test.ts files.
 */
import t, { type Test } from "tap";
import { build, INVALID_API_KEY, inspect, invalid, isAnswer, storedSession } from "./helper.ts";
import { bare, HOST_ENV, NOW, NOW_ISO, projectIdOf } from "./sessions.helpers.ts";

/** The clock of every app here; it stays at NOW (only S3, in sessions.s2-s3.test.ts, moves its own). */
const clock = NOW;

// ------------------------------------------------------------------------------------------ S1

t.test("S1: create_session", async (t) => {
  const api = await build(t, { now: () => clock });

  /** /v2/create_session with this session answers 200 naming `id`, and the bare session `id` is stored. */
  async function createsBare(t: Test, session: Record<string, unknown>, id: string) {
    const res = await api.withKey("/v2/create_session", { session });
    t.equal(res.statusCode, 200, id);
    t.equal(res.json().session_id, id, id);
    t.strictSame(await storedSession(api.store, id), bare(id), id);
  }

  t.test("S1: id alone creates the session in the key's project", async (t) => {
    await createsBare(t, { id: "s-id" }, "s-id");
    t.equal((await inspect(api.store).getSession("s-id"))?.project_id, await projectIdOf(api.store, "default"));
  });

  t.test("S1: session_id alone (the SDK's name) creates the session", async (t) => {
    await createsBare(t, { session_id: "s-sid" }, "s-sid");
  });

  t.test("S1: id and session_id both given and equal are accepted", async (t) => {
    await createsBare(t, { id: "same", session_id: "same" }, "same");
  });

  t.test("S1: id and session_id that differ are a 400 at session.session_id, nothing stored", async (t) => {
    const { withKey, store } = api;
    const res = await withKey("/v2/create_session", { session: { id: "a", session_id: "b" } });
    isAnswer(t, res, 400, invalid({ path: "session.session_id", message: 'must equal id ("a") when both are given' }));
    t.equal(await inspect(store).getSession("a"), undefined);
    t.equal(await inspect(store).getSession("b"), undefined);
  });

  t.test("S1: neither id nor session_id is a 400", async (t) => {
    const { withKey } = api;
    const expected = invalid({ path: "session.id", message: "is required: give id or session_id" });
    for (const session of [{}, { id: null, session_id: null }, { tags: ["x"] }]) {
      const res = await withKey("/v2/create_session", { session });
      isAnswer(t, res, 400, expected, JSON.stringify(session));
    }
  });

  t.test("S1: a body without the session wrapper is a 400 on /v2/create_session", async (t) => {
    const { withKey, store } = api;
    const res = await withKey("/v2/create_session", { id: "unwrapped" });
    isAnswer(t, res, 400, invalid({ path: "session", message: "is required" }));
    t.equal(await inspect(store).getSession("unwrapped"), undefined);
  });

  t.test("S1: an empty id or session_id is a 400", async (t) => {
    const { withKey } = api;
    const byId = await withKey("/v2/create_session", { session: { id: "" } });
    isAnswer(t, byId, 400, invalid({ path: "session.id", message: "must not be empty" }));
    const bySessionId = await withKey("/v2/create_session", { session: { session_id: "" } });
    isAnswer(t, bySessionId, 400, invalid({ path: "session.session_id", message: "must not be empty" }));
  });

  t.test("S1: an id of 256 characters is accepted, 257 is a 400", async (t) => {
    const { withKey, store } = api;
    const ok = await withKey("/v2/create_session", { session: { id: "x".repeat(256) } });
    t.equal(ok.statusCode, 200);
    t.ok(await inspect(store).getSession("x".repeat(256)));
    const long = await withKey("/v2/create_session", { session: { id: "y".repeat(257) } });
    isAnswer(t, long, 400, invalid({ path: "session.id", message: "must be at most 256 characters" }));
    t.equal(await inspect(store).getSession("y".repeat(257)), undefined);
  });

  t.test("S1: an id that is not a string is a 400", async (t) => {
    const { withKey } = api;
    const res = await withKey("/v2/create_session", { session: { id: 42 } });
    isAnswer(t, res, 400, invalid({ path: "session.id", message: "must be a string or null" }));
  });

  t.test("S1: any unique string is an id", async (t) => {
    for (const id of ["79f6fc6b-8463-4bc7-8a68-c3f84a2c9423", "run #1 / ünïcode ✓", "  spaced  "]) {
      await createsBare(t, { id }, id);
    }
  });

  t.test("S1: init_timestamp absent is the server's receive time", async (t) => {
    const { withKey, store } = api;
    t.equal((await withKey("/v2/create_session", { session: { id: "absent" } })).statusCode, 200);
    t.equal((await inspect(store).getSession("absent"))?.init_timestamp, NOW_ISO);
    const nulled = await withKey("/v2/create_session", { session: { id: "null", init_timestamp: null } });
    t.equal(nulled.statusCode, 200);
    t.equal((await inspect(store).getSession("null"))?.init_timestamp, NOW_ISO);
  });

  t.test("S1: init_timestamp given is stored in UTC", async (t) => {
    const { withKey, store } = api;
    const session = { id: "given", init_timestamp: "2026-11-22T10:39:43.640361+05:30" };
    t.equal((await withKey("/v2/create_session", { session })).statusCode, 200);
    t.equal((await inspect(store).getSession("given"))?.init_timestamp, "2026-11-22T05:09:43.640361Z");
  });

  t.test("S1: an init_timestamp that is a date alone is a 400 naming the path", async (t) => {
    const { withKey, store } = api;
    const res = await withKey("/v2/create_session", { session: { id: "date", init_timestamp: "2026-11-22" } });
    isAnswer(
      t,
      res,
      400,
      invalid({
        path: "session.init_timestamp",
        message: "must be an ISO 8601 date-time with a time, such as 2026-11-22T05:09:43.640361Z",
      }),
    );
    t.equal(await inspect(store).getSession("date"), undefined);
  });

  t.test("S1: tags, host_env, end_state, end_timestamp, end_state_reason on create are stored", async (t) => {
    const { withKey, store } = api;
    const res = await withKey("/v2/create_session", {
      session: {
        session_id: "full",
        init_timestamp: "2026-11-22T05:09:43.640361+00:00",
        end_timestamp: "2026-11-22T05:09:50.5Z",
        end_state: "Success",
        end_state_reason: "driver finished",
        tags: ["realclient", "driver"],
        host_env: HOST_ENV,
        video: null,
        jwt: null,
      },
    });
    t.equal(res.statusCode, 200);
    t.strictSame(await storedSession(store, "full"), {
      id: "full",
      init_timestamp: "2026-11-22T05:09:43.640361Z",
      end_timestamp: "2026-11-22T05:09:50.5Z",
      end_state: "Success",
      end_state_reason: "driver finished",
      tags: ["realclient", "driver"],
      host_env: HOST_ENV,
      video: null,
    });
  });

  t.test("S1: tags must be an array of strings", async (t) => {
    const { withKey, store } = api;
    const res = await withKey("/v2/create_session", { session: { id: "bad-tags", tags: ["ok", 7] } });
    isAnswer(t, res, 400, invalid({ path: "session.tags[1]", message: "must be a string" }));
    t.equal(await inspect(store).getSession("bad-tags"), undefined);
  });

  t.test("S1: /create_session takes the fields flat", async (t) => {
    const { withKey, store } = api;
    const res = await withKey("/create_session", { session_id: "flat", tags: ["a"], extra_field: 1 });
    t.equal(res.statusCode, 200);
    t.equal(res.json().session_id, "flat");
    t.strictSame(await storedSession(store, "flat"), { ...bare("flat"), tags: ["a"], extra_field: 1 });
  });

  t.test("S1: /create_session accepts the wrapped form", async (t) => {
    const { withKey, store } = api;
    const res = await withKey("/create_session", { session: { id: "wrapped", tags: ["w"] } });
    t.equal(res.statusCode, 200);
    t.equal(res.json().session_id, "wrapped");
    t.strictSame(await storedSession(store, "wrapped"), { ...bare("wrapped"), tags: ["w"] });
  });

  t.test("S1: /create_session with a top-level id is flat even beside a session object", async (t) => {
    const { withKey, store } = api;
    const res = await withKey("/create_session", { id: "top", session: { id: "inner" } });
    t.equal(res.statusCode, 200);
    t.equal(res.json().session_id, "top");
    t.strictSame(await storedSession(store, "top"), { ...bare("top"), session: { id: "inner" } });
    t.equal(await inspect(store).getSession("inner"), undefined);
  });

  t.test("S1: /create_session with a session object and null top-level ids is the wrapped form", async (t) => {
    // G5: for the fields the contract names, null means "not given", so no top-level id is given here.
    const { withKey, store } = api;
    for (const [id, body] of [
      ["wrapped-null-id", { id: null, session: { id: "wrapped-null-id", tags: ["n"] } }],
      ["wrapped-null-sid", { session_id: null, session: { session_id: "wrapped-null-sid", tags: ["n"] } }],
    ] as const) {
      const res = await withKey("/create_session", body);
      t.equal(res.statusCode, 200, id);
      t.equal(res.json().session_id, id);
      t.strictSame(await storedSession(store, id), { ...bare(id), tags: ["n"] }, id);
    }
  });

  t.test("S1: /create_session flat with differing id and session_id is a 400 at session_id", async (t) => {
    const { withKey, store } = api;
    const res = await withKey("/create_session", { id: "fa", session_id: "fb" });
    isAnswer(t, res, 400, invalid({ path: "session_id", message: 'must equal id ("fa") when both are given' }));
    t.equal(await inspect(store).getSession("fa"), undefined);
    t.equal(await inspect(store).getSession("fb"), undefined);
  });

  t.test("S1: /create_session flat with no id is a 400", async (t) => {
    const { withKey } = api;
    const res = await withKey("/create_session", { tags: ["x"] });
    isAnswer(t, res, 400, invalid({ path: "id", message: "is required: give id or session_id" }));
  });

  t.test("S1: create_session needs an API key", async (t) => {
    const { app, store } = api;
    const res = await app.inject({
      method: "POST",
      url: "/v2/create_session",
      headers: { "content-type": "application/json" },
      payload: JSON.stringify({ session: { id: "nokey" } }),
    });
    isAnswer(t, res, 401, INVALID_API_KEY);
    t.equal(await inspect(store).getSession("nokey"), undefined);
  });
});
