/**
 * Contract part 2, rules S4..S5: update_session and end_state, through real HTTP on a real
 * (in-memory) SQLite store. Every subtest name starts with the rule id it pins.
 */
import t from "tap";
import {
  build,
  forbidden,
  INVALID_JWT,
  inspect,
  invalid,
  isAnswer,
  OTHER_PROJECT_KEY,
  storedSession,
} from "./helper.ts";
import { bare, HOST_ENV, NOW } from "./sessions.helpers.ts";

/** The clock of every app here; it stays at NOW (only S3, in sessions.s2-s3.test.ts, moves its own). */
const clock = NOW;

const END_STATE_RULE =
  "must be one of Success, Fail, Indeterminate (any case), or an alias: " +
  'completed, complete, succeeded, ok, failed, failure, error, errored, unknown, ""';

// ------------------------------------------------------------------------------------------ S4

t.test("S4: update_session", async (t) => {
  const api = await build(t, { now: () => clock });
  t.test("S4: an update with no id changes the JWT's session", async (t) => {
    const { session, withJwt, store } = api;
    const jwt = await session("s4-noid");
    const res = await withJwt("/v2/update_session", { session: { end_state_reason: "no id" } }, jwt);
    t.equal(res.statusCode, 200);
    t.equal(res.json().session.end_state_reason, "no id");
    t.equal((await inspect(store).getSession("s4-noid"))?.end_state_reason, "no id");
  });

  t.test("S4: an id equal to the JWT's session is fine", async (t) => {
    const { session, withJwt, store } = api;
    const jwt = await session("s4-id");
    const res = await withJwt("/v2/update_session", { session: { id: "s4-id", end_state_reason: "by id" } }, jwt);
    t.equal(res.statusCode, 200);
    t.equal((await inspect(store).getSession("s4-id"))?.end_state_reason, "by id");
  });

  t.test("S4: session_id alone equal to the JWT's session is fine", async (t) => {
    const { session, withJwt, store } = api;
    const jwt = await session("s4-sid");
    const body = { session: { session_id: "s4-sid", end_state_reason: "by session_id" } };
    const res = await withJwt("/v2/update_session", body, jwt);
    t.equal(res.statusCode, 200);
    t.equal((await inspect(store).getSession("s4-sid"))?.end_state_reason, "by session_id");
  });

  t.test("S4: id and session_id both equal to the JWT's session are fine", async (t) => {
    const { session, withJwt, store } = api;
    const jwt = await session("s4-both");
    const body = { session: { id: "s4-both", session_id: "s4-both", end_state_reason: "both" } };
    const res = await withJwt("/v2/update_session", body, jwt);
    t.equal(res.statusCode, 200);
    t.equal((await inspect(store).getSession("s4-both"))?.end_state_reason, "both");
  });

  t.test("S4: an id of another session is a 403 and changes nothing", async (t) => {
    const { session, withJwt, store } = api;
    const jwt = await session("mine", { tags: ["m"] });
    await session("yours", { tags: ["y"] });
    const mine = await inspect(store).getSession("mine");
    const yours = await inspect(store).getSession("yours");
    for (const ids of [{ id: "yours" }, { session_id: "yours" }, { id: "yours", session_id: "yours" }]) {
      const res = await withJwt("/v2/update_session", { session: { ...ids, tags: ["hacked"] } }, jwt);
      isAnswer(t, res, 403, forbidden("mine", "yours"), JSON.stringify(ids));
    }
    const ghost = await withJwt("/v2/update_session", { session: { id: "ghost", tags: ["x"] } }, jwt);
    isAnswer(t, ghost, 403, forbidden("mine", "ghost"));
    t.strictSame(await inspect(store).getSession("mine"), mine);
    t.strictSame(await inspect(store).getSession("yours"), yours);
    t.equal(await inspect(store).getSession("ghost"), undefined);
  });

  t.test("S4: an id of a session of another project is a 403 too", async (t) => {
    const { session, withJwt, store } = api;
    const jwt = await session("mine2");
    await session("theirs2", { tags: ["t"] }, OTHER_PROJECT_KEY);
    const before = await inspect(store).getSession("theirs2");
    const res = await withJwt("/v2/update_session", { session: { id: "theirs2", tags: ["x"] } }, jwt);
    isAnswer(t, res, 403, forbidden("mine2", "theirs2"));
    t.strictSame(await inspect(store).getSession("theirs2"), before);
  });

  t.test("S4: id and session_id that differ are a 400 and change nothing", async (t) => {
    const { session, withJwt, store } = api;
    const jwt = await session("s4-differ", { tags: ["keep"] });
    const before = await inspect(store).getSession("s4-differ");
    for (const [id, sid] of [
      ["s4-differ", "other"],
      ["other", "s4-differ"],
    ] as const) {
      const res = await withJwt("/v2/update_session", { session: { id, session_id: sid, tags: ["x"] } }, jwt);
      isAnswer(
        t,
        res,
        400,
        invalid({ path: "session.session_id", message: `must equal id ("${id}") when both are given` }),
        `${id}/${sid}`,
      );
    }
    t.strictSame(await inspect(store).getSession("s4-differ"), before);
  });

  t.test("S4: only the fields present change", async (t) => {
    const { session, withJwt, store } = api;
    const jwt = await session("partial", {
      init_timestamp: "2026-01-01T00:00:00Z",
      tags: ["a", "b"],
      host_env: HOST_ENV,
      end_state_reason: "started",
      custom: { nested: [1, 2] },
    });
    const res = await withJwt("/v2/update_session", { session: { end_state: "Fail" } }, jwt);
    t.equal(res.statusCode, 200);
    const expected = {
      id: "partial",
      init_timestamp: "2026-01-01T00:00:00Z",
      end_timestamp: null,
      end_state: "Fail",
      end_state_reason: "started",
      tags: ["a", "b"],
      host_env: HOST_ENV,
      custom: { nested: [1, 2] },
    };
    t.strictSame(res.json().session, expected);
    t.strictSame(await storedSession(store, "partial"), expected);

    const res2 = await withJwt("/v2/update_session", { session: { end_timestamp: "2026-01-01T01:00:00+01:00" } }, jwt);
    t.equal(res2.statusCode, 200);
    t.strictSame(await storedSession(store, "partial"), { ...expected, end_timestamp: "2026-01-01T00:00:00Z" });
  });

  t.test("S4: init_timestamp, host_env and end_state_reason can be changed", async (t) => {
    const { session, withJwt, store } = api;
    const jwt = await session("change", { host_env: { OS: { OS: "Linux" } }, end_state_reason: "r1" });
    const body = {
      session: { init_timestamp: "2026-02-02 02:02:02", host_env: { RAM: { Used: "1 GB" } }, end_state_reason: "r2" },
    };
    const res = await withJwt("/v2/update_session", body, jwt);
    t.equal(res.statusCode, 200);
    t.strictSame(await storedSession(store, "change"), {
      ...bare("change", "2026-02-02T02:02:02Z"),
      host_env: { RAM: { Used: "1 GB" } },
      end_state_reason: "r2",
    });
  });

  t.test("S4: named fields sent as null do not clear anything", async (t) => {
    const { session, withJwt, store } = api;
    const jwt = await session("nulls", {
      end_timestamp: "2026-11-22T06:00:00Z",
      end_state: "Success",
      end_state_reason: "done",
      tags: ["t"],
      host_env: { OS: { OS: "Linux" } },
    });
    const before = await storedSession(store, "nulls");
    const body = {
      session: {
        id: null,
        session_id: null,
        init_timestamp: null,
        end_timestamp: null,
        end_state: null,
        end_state_reason: null,
        tags: null,
        host_env: null,
      },
    };
    const res = await withJwt("/v2/update_session", body, jwt);
    t.equal(res.statusCode, 200);
    t.strictSame(res.json().session, before);
    t.strictSame(await storedSession(store, "nulls"), before);
  });

  t.test("S4: tags replace the whole list", async (t) => {
    const { session, withJwt, store } = api;
    const jwt = await session("tags", { tags: ["a", "b", "c"] });
    const res = await withJwt("/v2/update_session", { session: { tags: ["d"] } }, jwt);
    t.equal(res.statusCode, 200);
    t.strictSame(res.json().session.tags, ["d"]);
    t.strictSame((await inspect(store).getSession("tags"))?.tags, ["d"]);
    const emptied = await withJwt("/v2/update_session", { session: { tags: [] } }, jwt);
    t.equal(emptied.statusCode, 200);
    t.strictSame((await inspect(store).getSession("tags"))?.tags, []);
  });

  t.test("S4: unknown fields merge into the stored ones", async (t) => {
    const { session, withJwt, store } = api;
    const jwt = await session("merge", { a: 1, b: { x: 1, y: 2 }, keep: "me" });
    const res = await withJwt("/v2/update_session", { session: { b: { z: 3 }, c: null, d: [1, { e: null }] } }, jwt);
    t.equal(res.statusCode, 200);
    const expected = { ...bare("merge"), a: 1, b: { z: 3 }, keep: "me", c: null, d: [1, { e: null }] };
    t.strictSame(res.json().session, expected);
    t.strictSame(await storedSession(store, "merge"), expected);
  });

  t.test("S4: update_session takes the JWT only, not the API key", async (t) => {
    const { session, withKey, store } = api;
    await session("jwt-only");
    const res = await withKey("/v2/update_session", { session: { id: "jwt-only", end_state: "Fail" } });
    isAnswer(t, res, 401, INVALID_JWT);
    t.equal((await inspect(store).getSession("jwt-only"))?.end_state, null);
  });

  t.test("S4: a JWT of another project's session cannot reach a session of mine", async (t) => {
    const { session, withJwt, store } = api;
    await session("mine3", { tags: ["m"] });
    const theirs = await session("theirs3", {}, OTHER_PROJECT_KEY);
    const before = await inspect(store).getSession("mine3");
    const res = await withJwt("/v2/update_session", { session: { id: "mine3", tags: ["x"] } }, theirs);
    isAnswer(t, res, 403, forbidden("theirs3", "mine3"));
    t.strictSame(await inspect(store).getSession("mine3"), before);
  });

  t.test("S4: the session wrapper is required", async (t) => {
    const { session, withJwt } = api;
    const jwt = await session("wrap");
    const res = await withJwt("/v2/update_session", { end_state: "Fail" }, jwt);
    isAnswer(t, res, 400, invalid({ path: "session", message: "is required" }));
  });
});

// ------------------------------------------------------------------------------------------ S5

t.test("S5: end_state", async (t) => {
  const api = await build(t, { now: () => clock });
  t.test("S5: Success, Fail, Indeterminate are accepted in any case and stored canonically", async (t) => {
    const { session, withJwt, store } = api;
    const jwt = await session("s5");
    const cases: [string, string][] = [
      ["Success", "Success"],
      ["success", "Success"],
      ["SUCCESS", "Success"],
      ["sUcCeSs", "Success"],
      ["Fail", "Fail"],
      ["fail", "Fail"],
      ["FAIL", "Fail"],
      ["Indeterminate", "Indeterminate"],
      ["indeterminate", "Indeterminate"],
      ["INDETERMINATE", "Indeterminate"],
    ];
    for (const [sent, canonical] of cases) {
      const res = await withJwt("/v2/update_session", { session: { end_state: sent } }, jwt);
      t.equal(res.statusCode, 200, sent);
      t.equal(res.json().session.end_state, canonical, sent);
      t.equal((await inspect(store).getSession("s5"))?.end_state, canonical, sent);
    }
  });

  t.test("S5: every alias maps to its canonical value", async (t) => {
    const { session, withJwt, store } = api;
    const jwt = await session("aliases");
    const cases: [string, string][] = [
      ["completed", "Success"],
      ["complete", "Success"],
      ["succeeded", "Success"],
      ["ok", "Success"],
      ["COMPLETED", "Success"],
      ["Ok", "Success"],
      ["failed", "Fail"],
      ["failure", "Fail"],
      ["error", "Fail"],
      ["errored", "Fail"],
      ["FAILED", "Fail"],
      ["Error", "Fail"],
      ["unknown", "Indeterminate"],
      ["UNKNOWN", "Indeterminate"],
      ["", "Indeterminate"],
    ];
    let previous = "";
    for (const [sent, canonical] of cases) {
      // Move away from the expected value first, so each alias is seen to change the stored one.
      const away = canonical === "Success" ? "Fail" : "Success";
      if (previous !== away)
        t.equal((await withJwt("/v2/update_session", { session: { end_state: away } }, jwt)).statusCode, 200);
      const res = await withJwt("/v2/update_session", { session: { end_state: sent } }, jwt);
      t.equal(res.statusCode, 200, JSON.stringify(sent));
      t.equal(res.json().session.end_state, canonical, JSON.stringify(sent));
      t.equal((await inspect(store).getSession("aliases"))?.end_state, canonical, JSON.stringify(sent));
      previous = canonical;
    }
  });

  t.test("S5: end_state on create is stored canonically", async (t) => {
    const { withKey, store } = api;
    const cases: [string, string][] = [
      ["completed", "Success"],
      ["FAILURE", "Fail"],
      ["", "Indeterminate"],
      ["indeterminate", "Indeterminate"],
    ];
    for (const [index, [sent, canonical]] of cases.entries()) {
      const res = await withKey("/v2/create_session", { session: { id: `c${index}`, end_state: sent } });
      t.equal(res.statusCode, 200, sent);
      t.equal((await inspect(store).getSession(`c${index}`))?.end_state, canonical, sent);
    }
  });

  t.test("S5: an unknown end_state is a 400 that lists the accepted values, nothing changes", async (t) => {
    const { session, withJwt, withKey, store } = api;
    const jwt = await session("bogus", { end_state: "Success" });
    for (const bad of ["bogus", "succes", "Success!", "done"]) {
      const res = await withJwt("/v2/update_session", { session: { end_state: bad, tags: ["x"] } }, jwt);
      t.equal(res.statusCode, 400, bad);
      const body = res.json();
      t.strictSame(body, invalid({ path: "session.end_state", message: END_STATE_RULE }), bad);
      for (const accepted of ["Success", "Fail", "Indeterminate"]) t.match(body.message, accepted);
    }
    const after = await inspect(store).getSession("bogus");
    t.equal(after?.end_state, "Success");
    t.equal(after?.tags, null);

    const create = await withKey("/v2/create_session", { session: { id: "bogus-create", end_state: "bogus" } });
    isAnswer(t, create, 400, invalid({ path: "session.end_state", message: END_STATE_RULE }));
    t.equal(await inspect(store).getSession("bogus-create"), undefined);
  });

  t.test("S5: a value padded with whitespace is not an accepted value", async (t) => {
    const { session, withJwt, store } = api;
    const jwt = await session("padded", { end_state: "Fail" });
    for (const bad of [" ", "  ", " Success", "ok ", "\tfailed"]) {
      const res = await withJwt("/v2/update_session", { session: { end_state: bad } }, jwt);
      isAnswer(t, res, 400, invalid({ path: "session.end_state", message: END_STATE_RULE }), JSON.stringify(bad));
    }
    t.equal((await inspect(store).getSession("padded"))?.end_state, "Fail");
  });

  t.test("S5: an end_state that is not a string is a 400", async (t) => {
    const { session, withJwt, store } = api;
    const jwt = await session("num", { end_state: "Fail" });
    const res = await withJwt("/v2/update_session", { session: { end_state: 1 } }, jwt);
    isAnswer(t, res, 400, invalid({ path: "session.end_state", message: "must be a string or null" }));
    t.equal((await inspect(store).getSession("num"))?.end_state, "Fail");
  });
});
