/**
 * Bulk delete (issue 16 part 2): POST /v2/delete_sessions through real HTTP (inject), on the store
 * STORE names. Data is always written through the write API.
 */
import t from "tap";
import { API_KEY, build, INVALID_API_KEY, isAnswer, isInvalid, OTHER_PROJECT_KEY, type TestApp } from "./helper.ts";
import { at, createEvents, ids, read, T0 } from "./read.helpers.ts";

const URL = "/v2/delete_sessions";
const DAY = 86_400_000;

/** Five sessions of the key's project, one of the other project's; answers nothing. */
async function seed(api: TestApp) {
  const make = async (id: string, fields: Record<string, unknown>, events: number, key = API_KEY) => {
    const jwt = await api.session(id, fields, key);
    await createEvents(
      api,
      jwt,
      Array.from({ length: events }, (_, n) => ({ type: "llm", id: `${id}-${n}`, agent_id: `agent-${id}` })),
    );
  };
  await make("old-a", { init_timestamp: at(T0), tags: ["load", "x"] }, 3);
  await make("old-b", { init_timestamp: at(T0 + 1000), tags: ["load"], end_state: "Fail" }, 2);
  await make("mid", { init_timestamp: at(T0 + 5 * DAY), end_state: "Fail", end_state_reason: "Timeout" }, 1);
  await make("new", { init_timestamp: at(T0 + 20 * DAY), tags: ["x"] }, 4);
  await make("plain", { init_timestamp: at(T0 + 21 * DAY) }, 0);
  await make("theirs", { init_timestamp: at(T0), tags: ["load"], end_state: "Fail" }, 2, OTHER_PROJECT_KEY);
}

const listed = async (api: TestApp, key = API_KEY) => ids((await read(api, "/v2/sessions", key)).json().sessions);

t.test("each filter: a dry run counts, deletes nothing; the real run removes exactly that", async (t) => {
  const api = await build(t);
  await seed(api);
  const cases: [Record<string, unknown>, string[], number][] = [
    [{ tag: ["load", "x"] }, ["old-a"], 3],
    [{ to: at(T0 + 2 * DAY), end_state: "failed" }, ["old-b"], 2],
    [{ q: "timeout" }, ["mid"], 1],
    [{ agent_id: "agent-new" }, ["new"], 4],
    [{ from: at(T0 + 21 * DAY) }, ["plain"], 0],
  ];
  for (const [filter, gone, events] of cases) {
    const before = await listed(api);
    const dry = await api.withKey(URL, { ...filter, dry_run: true });
    isAnswer(t, dry, 200, { status: "success", sessions: gone.length, events, dry_run: true }, JSON.stringify(filter));
    t.same(await listed(api), before, "the dry run deleted nothing");
    const real = await api.withKey(URL, filter);
    isAnswer(t, real, 200, { status: "success", sessions: gone.length, events, dry_run: false });
    t.same(
      await listed(api),
      before.filter((id) => !gone.includes(id as string)),
      "exactly those are gone",
    );
    for (const id of gone) t.equal((await read(api, `/v2/sessions/${id}`)).statusCode, 404);
  }
  t.same(await listed(api, OTHER_PROJECT_KEY), ["theirs"], "another project's sessions are untouched");
  t.equal((await read(api, "/v2/sessions/theirs/events", OTHER_PROJECT_KEY)).json().events.length, 2);
});

t.test("many sessions: removed in batches; sending it again finds none", async (t) => {
  const api = await build(t);
  for (let n = 0; n < 230; n++) await api.session(`s${n}`, { init_timestamp: at(T0 + n), tags: ["bulk"] });
  const jwt = await api.session("big", { init_timestamp: at(T0), tags: ["bulk"] });
  await createEvents(
    api,
    jwt,
    Array.from({ length: 2500 }, (_, n) => ({ type: "tool", id: `e${n}` })),
  );
  isAnswer(t, await api.withKey(URL, { tag: ["bulk"], dry_run: true }), 200, {
    status: "success",
    sessions: 231,
    events: 2500,
    dry_run: true,
  });
  isAnswer(t, await api.withKey(URL, { tag: ["bulk"] }), 200, {
    status: "success",
    sessions: 231,
    events: 2500,
    dry_run: false,
  });
  isAnswer(t, await api.withKey(URL, { tag: ["bulk"] }), 200, {
    status: "success",
    sessions: 0,
    events: 0,
    dry_run: false,
  });
});

t.test("bad input: 400 with details, nothing deleted", async (t) => {
  const api = await build(t);
  await seed(api);
  const before = await listed(api);
  const bad: [unknown, string[]][] = [
    [{}, [""]],
    [{ dry_run: true }, [""]],
    [{ to: "yesterday" }, ["to"]],
    [{ from: "2026-11-22" }, ["from"]],
    [{ tags: ["load"] }, ["tags"]],
    [{ tag: "load" }, ["tag"]],
    [{ end_state: "maybe" }, ["end_state"]],
    [{ to: at(T0), dry_run: "yes" }, ["dry_run"]],
    [{ agent_id: "" }, ["agent_id"]],
  ];
  for (const [body, paths] of bad) {
    const res = await api.withKey(URL, body);
    t.test(JSON.stringify(body), async (t) => {
      isInvalid(t, res, paths);
    });
  }
  t.same(await listed(api), before, "nothing was deleted");
});

t.test("credentials: the API key's project; a JWT or no key is a 401", async (t) => {
  const api = await build(t);
  await seed(api);
  isAnswer(t, await api.post(URL, { to: at(T0 + 100 * DAY) }), 401, INVALID_API_KEY);
  const jwt = await api.session("jwt-holder");
  isAnswer(t, await api.withJwt(URL, { to: at(T0 + 100 * DAY) }, jwt), 401, INVALID_API_KEY);
  isAnswer(t, await api.withKey(URL, { to: at(T0 + 100 * DAY) }, OTHER_PROJECT_KEY), 200, {
    status: "success",
    sessions: 1,
    events: 2,
    dry_run: false,
  });
  t.same(await listed(api, OTHER_PROJECT_KEY), [], "the other project's session is gone");
  t.equal((await listed(api)).length, 6, "this project's are all there");
});
