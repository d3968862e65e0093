/**
 * Contract part 2, rules S1..S7: sessions, through real HTTP on a real (in-memory) SQLite store.
 * Every subtest name starts with the rule id it pins.
 */
import t, { type Test } from "tap";
import type { Store } from "../db/store.ts";
import {
  API_KEY,
  build,
  decodeJwt,
  eventIds,
  forbidden,
  INVALID_API_KEY,
  INVALID_JWT,
  inspect,
  invalid,
  isAnswer,
  OTHER_PROJECT_KEY,
  storedSession,
  type TestApp,
} from "./helper.ts";

const NOW = Date.UTC(2026, 10, 22, 5, 9, 43, 640);
const NOW_ISO = "2026-11-22T05:09:43.640Z";
const SESSION_URL = "http://agentmon.test/sessions/";

/** The clock of every app here; only S3 moves it, and puts it back. */
let clock = NOW;

const END_STATE_RULE =
  "must be one of Success, Fail, Indeterminate (any case), or an alias: " +
  'completed, complete, succeeded, ok, failed, failure, error, errored, unknown, ""';

/** The bare session of S6: every named field null but the id and init_timestamp. */
const bare = (id: string, init = NOW_ISO) => ({
  id,
  init_timestamp: init,
  end_timestamp: null,
  end_state: null,
  end_state_reason: null,
  tags: null,
  host_env: null,
});

async function projectIdOf(store: Store, name: string): Promise<string> {
  const key = (await store.listApiKeys()).find((k) => k.project_name === name);
  if (!key) throw new Error(`no project ${name}`);
  return key.project_id;
}

const HOST_ENV = {
  OS: { OS: "Linux", "OS Release": "6.18.44", "OS Version": "#1 SMP" },
  CPU: { "CPU Usage": "46.7%", "Total cores": 2 },
  RAM: { Used: "0.34 GB", Total: "23.54 GB" },
  SDK: { "Python Version": "3.11.2", "System Packages": { requests: "2.28.1" } },
};

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

// ------------------------------------------------------------------------------------------ S2

t.test("S2: create_session answer", async (t) => {
  const api = await build(t, { now: () => clock });
  t.test("S2: the answer is exactly status, jwt, session_id, session_url", async (t) => {
    const { withKey, store } = api;
    const res = await withKey("/v2/create_session", { session: { id: "s2" } });
    t.equal(res.statusCode, 200);
    t.match(res.headers["content-type"], /^application\/json/);
    const body = res.json();
    t.strictSame(Object.keys(body).sort(), ["jwt", "session_id", "session_url", "status"]);
    t.equal(body.status, "success");
    t.equal(body.session_id, "s2");
    t.equal(body.session_url, `${SESSION_URL}s2`);
    t.match(body.jwt, /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/);
    const c = decodeJwt(body.jwt).claims;
    t.equal(c.session_id, "s2");
    t.equal(c.project_id, await projectIdOf(store, "default"));
    t.equal(c.iat, Math.floor(NOW / 1000));
    t.equal(c.exp, Math.floor(NOW / 1000) + 24 * 60 * 60);
  });

  t.test("S2: session_url encodes the id", async (t) => {
    const { withKey } = api;
    const id = "run 1/a?b#c&d";
    const res = await withKey("/v2/create_session", { session: { id } });
    t.equal(res.statusCode, 200);
    t.equal(res.json().session_url, `${SESSION_URL}${encodeURIComponent(id)}`);
    t.equal(res.json().session_url, "http://agentmon.test/sessions/run%201%2Fa%3Fb%23c%26d");
  });

  t.test("S2: the answer names the id whichever field carried it", async (t) => {
    const { withKey } = api;
    const res = await withKey("/v2/create_session", { session: { session_id: "via-sid" } });
    t.equal(res.statusCode, 200);
    t.equal(res.json().session_id, "via-sid");
    t.equal(res.json().session_url, `${SESSION_URL}via-sid`);
  });

  t.test("S2: the jwt is usable for update_session on that session", async (t) => {
    const { withKey, withJwt, store } = api;
    const created = await withKey("/v2/create_session", { session: { id: "usable" } });
    const res = await withJwt("/v2/update_session", { session: { end_state: "Success" } }, created.json().jwt);
    t.equal(res.statusCode, 200);
    t.equal(res.json().session.id, "usable");
    t.equal((await inspect(store).getSession("usable"))?.end_state, "Success");
  });

  t.test("S2: the unversioned path answers the same shape", async (t) => {
    const { withKey } = api;
    const res = await withKey("/create_session", { id: "un v2" });
    t.equal(res.statusCode, 200);
    const body = res.json();
    t.strictSame(Object.keys(body).sort(), ["jwt", "session_id", "session_url", "status"]);
    t.equal(body.status, "success");
    t.equal(body.session_id, "un v2");
    t.equal(body.session_url, `${SESSION_URL}un%20v2`);
  });
});

// ------------------------------------------------------------------------------------------ S3

t.test("S3: creating an id that exists", async (t) => {
  const api = await build(t, { now: () => clock });
  t.test("S3: same id in the same project is 200 with a fresh working JWT, nothing overwritten", async (t) => {
    const { withKey, withJwt, store } = api;
    t.teardown(() => {
      clock = NOW;
    });
    const first = await withKey("/v2/create_session", {
      session: {
        id: "dup",
        tags: ["one"],
        host_env: { OS: { OS: "Linux" } },
        end_state_reason: "first",
        custom: 1,
      },
    });
    t.equal(first.statusCode, 200);
    const before = await storedSession(store, "dup");

    clock = NOW + 5000;
    const again = await withKey("/v2/create_session", {
      session: {
        session_id: "dup",
        init_timestamp: "2020-01-01T00:00:00Z",
        tags: ["two", "three"],
        host_env: { OS: { OS: "Windows" } },
        end_state: "Fail",
        end_state_reason: "second",
        custom: 2,
        other: true,
      },
    });
    t.equal(again.statusCode, 200);
    const body = again.json();
    t.strictSame(Object.keys(body).sort(), ["jwt", "session_id", "session_url", "status"]);
    t.equal(body.status, "success");
    t.equal(body.session_id, "dup");
    t.equal(body.session_url, `${SESSION_URL}dup`);
    t.not(body.jwt, first.json().jwt, "a fresh JWT");
    t.equal(decodeJwt(body.jwt).claims.iat, Math.floor((NOW + 5000) / 1000));
    t.equal(decodeJwt(body.jwt).claims.session_id, "dup");

    t.strictSame(await storedSession(store, "dup"), before, "nothing overwritten");
    t.strictSame(before, {
      ...bare("dup"),
      tags: ["one"],
      host_env: { OS: { OS: "Linux" } },
      end_state_reason: "first",
      custom: 1,
    });

    const update = await withJwt("/v2/update_session", { session: {} }, body.jwt);
    t.equal(update.statusCode, 200);
    t.strictSame(update.json().session, before);
    const old = await withJwt("/v2/update_session", { session: {} }, first.json().jwt);
    t.equal(old.statusCode, 200, "the first JWT keeps working too");
  });

  t.test("S3: a retry on the unversioned path is also 200 and overwrites nothing", async (t) => {
    const { withKey, store } = api;
    t.equal((await withKey("/create_session", { id: "dup-flat", tags: ["a"] })).statusCode, 200);
    const again = await withKey("/create_session", { id: "dup-flat", tags: ["b"] });
    t.equal(again.statusCode, 200);
    t.equal(again.json().session_id, "dup-flat");
    t.strictSame(await storedSession(store, "dup-flat"), { ...bare("dup-flat"), tags: ["a"] });
  });

  t.test("S3: same id in another project is a 409 and changes nothing", async (t) => {
    const { withKey, session, store } = api;
    await session("taken", { tags: ["mine"] });
    const before = await inspect(store).getSession("taken");
    const res = await withKey(
      "/v2/create_session",
      { session: { id: "taken", tags: ["theirs"], end_state: "Fail" } },
      OTHER_PROJECT_KEY,
    );
    isAnswer(t, res, 409, {
      error: "Session already exists",
      message: "Session taken belongs to another project; choose another id",
    });
    t.strictSame(await inspect(store).getSession("taken"), before);
    t.equal(before?.project_id, await projectIdOf(store, "default"));
  });

  t.test("S3: the 409 holds on the unversioned path and for the session_id name", async (t) => {
    const { withKey, session } = api;
    await session("taken2", {}, OTHER_PROJECT_KEY);
    const flat = await withKey("/create_session", { session_id: "taken2" }, API_KEY);
    t.equal(flat.statusCode, 409);
    t.equal(flat.json().error, "Session already exists");
    const wrapped = await withKey("/v2/create_session", { session: { session_id: "taken2" } }, API_KEY);
    isAnswer(t, wrapped, 409, {
      error: "Session already exists",
      message: "Session taken2 belongs to another project; choose another id",
    });
  });

  t.test("S3: a body that breaks the schema is a 400 before the 409", async (t) => {
    const { withKey, session } = api;
    await session("taken3", {}, OTHER_PROJECT_KEY);
    const res = await withKey("/v2/create_session", { session: { id: "taken3", tags: [1] } }, API_KEY);
    isAnswer(t, res, 400, invalid({ path: "session.tags[0]", message: "must be a string" }));
  });
});

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
