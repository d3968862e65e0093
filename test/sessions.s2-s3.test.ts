/**
 * Contract part 2, rules S2..S3: create_session's answer, and creating an id that exists, through
 * real HTTP on a real (in-memory) SQLite store. Every subtest name starts with the rule id it pins.
 */
import t from "tap";
import { API_KEY, build, decodeJwt, inspect, invalid, isAnswer, OTHER_PROJECT_KEY, storedSession } from "./helper.ts";
import { bare, NOW, projectIdOf, SESSION_URL } from "./sessions.helpers.ts";

/** The clock of every app here; only S3 moves it, and puts it back. */
let clock = NOW;

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
