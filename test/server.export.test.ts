/**
 * `agentmon export` and `agentmon import` in-process through main() on real SQLite files: an
 * export imported into an empty database gives the same read-API answers; importing twice changes
 * nothing; a file cut short or mis-counted is said so.
 */
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { Writable } from "node:stream";
import t from "tap";
import { openPostgresStore } from "../db/postgres/store.ts";
import { hashApiKey, keyPrefix } from "../domain/keys.ts";
import { main } from "../server.ts";
import { API_KEY, build, OTHER_PROJECT_KEY, type TestApp, tempDir } from "./helper.ts";
import { SMALL } from "./otlp.helpers.ts";
import { postgresRequired, postgresUnavailable, testDatabase } from "./postgres.ts";
import { at, createEvents, read, T0 } from "./read.helpers.ts";
import { capture, run, seedKeys } from "./server.helpers.ts";

/** Sessions of every shape the write API and OTLP make, in the `default` project; one of `other`. */
async function seed(api: TestApp) {
  const a = await api.session("s-a", {
    init_timestamp: at(T0),
    tags: ["x", "y"],
    host_env: { os: "linux" },
    team: 7,
    nested: { deep: [1, null] },
  });
  await createEvents(api, a, [
    { type: "llm", id: "a1", model: "gpt-4o-mini", prompt: [{ role: "user", content: "hi" }], completion: "yo" },
    { type: "llm", id: "a1b", model: "gpt-4o-mini", prompt_tokens: 10, completion_tokens: 2, agent_id: "ag1" },
    {
      type: "llm",
      id: "a2",
      model: "m",
      prompt: "x",
      cost: 0.5,
      custom: { deep: [1, null] },
      usage: { prompt_tokens_details: { cached_tokens: 3 } },
    },
    { type: "llm", id: "a2b", model: "unpriced-model", prompt_tokens: 1, end_timestamp: at(T0 + 9) },
    { event_type: "tools", id: "a3", tool_name: "search", params: { q: 1 }, returns: "r", init_timestamp: at(T0 + 3) },
    { type: "action", id: "a4", action_type: "click", timestamp: at(T0 + 4), screenshot: "data:x" },
    {
      type: "error",
      id: "a5",
      error_type: "E",
      code: 500,
      details: "bad",
      trigger_event_id: "a1",
      init_timestamp: at(T0 + 5),
    },
  ]);
  await api.withJwt("/v2/create_agent", { id: "ag1", name: "planner", role: "lead" }, a);
  await api.withJwt("/v2/create_agent", { id: "ag2" }, a);
  const b = await api.session("s-b", { init_timestamp: at(T0 + 1000), end_state: "Fail", end_state_reason: "Timeout" });
  await api.withJwt("/v2/update_session", { session: { end_timestamp: at(T0 + 2000), extra_field: "late" } }, b);
  await api.session("s-c", { init_timestamp: at(T0 + 2000), tags: [] });
  await api.session("theirs", {}, OTHER_PROJECT_KEY);
  const traces = await api.inject({
    method: "POST",
    url: "/v1/traces",
    headers: { "content-type": "application/json", authorization: `Bearer ${API_KEY}` },
    payload: JSON.stringify(SMALL),
  });
  if (traces.statusCode !== 200) throw new Error(`/v1/traces answered ${traces.statusCode}`);
}

/** Every read-API answer of the project's sessions: the list's pages, and each session whole. */
async function answers(api: TestApp) {
  const list = (await read(api, "/v2/sessions?limit=200")).json();
  const sessions = [];
  for (const row of list.sessions) {
    const id = row.session.id as string;
    sessions.push({
      one: (await read(api, `/v2/sessions/${id}`)).json(),
      events: (await read(api, `/v2/sessions/${id}/events?limit=1000`)).json(),
      stats: (await read(api, `/v2/sessions/${id}/stats`)).json(),
      whole: (await read(api, `/v2/sessions/${id}/export`)).json(),
      otlp: (await read(api, `/v2/sessions/${id}/export?format=otlp`)).json(),
    });
  }
  return { list, sessions };
}

t.test("export → import into an empty database: the same read-API answers; twice changes nothing", async (t) => {
  const dir = tempDir(t);
  const source = join(dir, "source.db");
  const target = join(dir, "target.db");
  const file = join(dir, "export.ndjson");
  const from = await build(t, { dbPath: source });
  await seed(from);

  let r = await run(["export", "--out", file], source);
  t.equal(r.code, 0, r.err.join("\n"));
  t.strictSame(r.err, ["Exported 4 sessions and 9 events (ndjson)."]);
  const text = readFileSync(file, "utf8");
  t.match(text.trimEnd().split("\n").at(-1), '{"trailer":{"sessions":4,"events":9}}');
  t.notMatch(text, /theirs/);

  await seedKeys(target, "default", [API_KEY]);
  r = await run(["import", file], target);
  t.equal(r.code, 0, r.err.join("\n"));
  t.strictSame(r.out, [
    'Imported 4 sessions into project "default" (4 new, 0 already there), 2 agents, 9 events, 0 scores.',
  ]);
  const to = await build(t, { dbPath: target });
  const expected = await answers(from);
  t.strictSame(await answers(to), expected, "the same answers, field for field");

  r = await run(["import", file], target);
  t.equal(r.code, 0);
  t.strictSame(r.out, [
    'Imported 4 sessions into project "default" (0 new, 4 already there), 2 agents, 9 events, 0 scores.',
  ]);
  t.strictSame(await answers(to), expected, "a second import changed nothing");

  const again = join(dir, "again.ndjson");
  t.equal((await run(["export", "--out", again], target)).code, 0);
  t.equal(readFileSync(again, "utf8"), text, "the import exports as the same file");
});

t.test("export's filters and formats, to standard output", async (t) => {
  const dir = tempDir(t);
  const db = join(dir, "a.db");
  await seed(await build(t, { dbPath: db }));
  const exported = async (args: string[]) => {
    const c = capture();
    let out = "";
    const stdout = new Writable({
      write(chunk, _encoding, done) {
        out += chunk;
        done();
      },
    });
    const code = await main([...args, "--db", db], {}, c.io, stdout);
    return { code, out, err: c.err };
  };
  let r = await exported(["export", "--tag", "x", "--format", "csv"]);
  t.equal(r.code, 0);
  t.match(r.out, /^session_id,event_id,type,/);
  t.match(r.out, /,,trailer,,,,,,,,,"\{""sessions"":1,""events"":7\}"\r\n$/);
  r = await exported(["export", "--end-state", "failed", "--format", "otlp"]);
  t.equal(r.code, 0);
  t.strictSame(r.out.trimEnd().split("\n").at(-1), '{"trailer":{"sessions":1,"events":0}}');
  r = await exported(["export", "--project", "other"]);
  t.match(r.out, /"id":"theirs"/);
  for (const [args, pattern] of [
    [["export", "--format", "xml"], /--format must be one of ndjson, csv, otlp/],
    [["export", "--end-state", "maybe"], /--end-state must be one of/],
    [["export", "--from", "yesterday"], /--from must be a date-time/],
    [["export", "--project", "nobody"], /no project is named "nobody"/],
  ] as [string[], RegExp][]) {
    r = await exported(args);
    t.equal(r.code, 1, args.join(" "));
    t.match(r.err.join("\n"), pattern);
  }
});

t.test("import: a file cut short, mis-counted or not an export", async (t) => {
  const dir = tempDir(t);
  const source = join(dir, "source.db");
  const file = join(dir, "export.ndjson");
  await seed(await build(t, { dbPath: source }));
  t.equal((await run(["export", "--out", file], source)).code, 0);
  const lines = readFileSync(file, "utf8").trimEnd().split("\n");

  const target = join(dir, "t.db");
  await seedKeys(target, "default", [API_KEY]);
  const cut = join(dir, "cut.ndjson");
  writeFileSync(cut, `${lines.slice(0, 2).join("\n")}\n`);
  let r = await run(["import", cut], target);
  t.equal(r.code, 1);
  t.match(r.out.join("\n"), /Imported 2 sessions/);
  t.match(r.err.join("\n"), /no trailer line: the export was cut short/);

  const torn = join(dir, "torn.ndjson");
  writeFileSync(torn, `${lines[0]}\n${(lines[1] as string).slice(0, 40)}`);
  r = await run(["import", torn], target);
  t.equal(r.code, 1);
  t.match(r.err.join("\n"), /line 2: not a JSON line/);

  const miscounted = join(dir, "miscounted.ndjson");
  writeFileSync(miscounted, `${lines[0]}\n{"trailer":{"sessions":5,"events":0}}\n`);
  r = await run(["import", miscounted], target);
  t.equal(r.code, 1);
  t.match(r.err.join("\n"), /the trailer says 5 sessions/);

  r = await run(["import", join(dir, "missing.ndjson")], target);
  t.equal(r.code, 1);
  t.match(r.err.join("\n"), /cannot read/);
  r = await run(["import"], target);
  t.equal(r.code, 1);
  t.match(r.err.join("\n"), /import needs a file/);
});

t.test("PostgreSQL: a SQLite export imported there, and exported again, is the same", async (t) => {
  const unavailable = await postgresUnavailable();
  if (unavailable && !postgresRequired()) {
    t.comment(`skipped: ${unavailable}`);
    return;
  }
  const dir = tempDir(t);
  const source = join(dir, "source.db");
  const file = join(dir, "export.ndjson");
  const from = await build(t, { dbPath: source });
  await seed(from);
  t.equal((await run(["export", "--out", file], source)).code, 0);

  const url = await testDatabase(t);
  const store = await openPostgresStore({ url });
  await store.createApiKey(hashApiKey(API_KEY), keyPrefix(API_KEY), "default", new Date().toISOString());
  const on = async (args: string[]) => {
    const c = capture();
    const code = await main(args, { AGENTMON_DATABASE_URL: url }, c.io);
    return { code, out: c.out, err: c.err };
  };
  for (const round of [1, 2]) {
    const r = await on(["import", file]);
    t.equal(r.code, 0, r.err.join("\n"));
    t.match(r.out.join(""), round === 1 ? /\(4 new, 0 already there\)/ : /\(0 new, 4 already there\)/);
  }
  const to = await build(t, { store });
  t.strictSame(await answers(to), await answers(from), "the same read-API answers on PostgreSQL");
  const again = join(dir, "again.ndjson");
  t.equal((await on(["export", "--out", again])).code, 0);
  t.equal(readFileSync(again, "utf8"), readFileSync(file, "utf8"));
});
