/**
 * Bulk export (issue 16 part 3): GET /v2/export in each format, on the store STORE names; filters,
 * isolation, a bad format; and streaming over a real socket: a client that does not read holds
 * the reading back, one that goes away stops it, and a failure mid-way ends without the trailer.
 */
import { request } from "node:http";
import t, { type Test } from "tap";
import type { Store } from "../db/store.ts";
import { API_KEY, build, OTHER_PROJECT_KEY, type TestApp } from "./helper.ts";
import { at, createEvents, isBadParameter, read, T0 } from "./read.helpers.ts";

/** Four sessions of the key's project (every kind of event, agents, aliases), one of the other's. */
async function seed(api: TestApp) {
  const a = await api.session("s-a", { init_timestamp: at(T0), tags: ["x", "y"], host_env: { os: "linux" }, team: 7 });
  await createEvents(api, a, [
    {
      type: "llm",
      id: "a1",
      model: "gpt-4o-mini",
      prompt: 'hi, "you"\nthere',
      completion: "yo",
      prompt_tokens: 10,
      completion_tokens: 2,
      agent_id: "ag1",
      init_timestamp: at(T0 + 1),
    },
    {
      type: "llm",
      id: "a2",
      model: 'm, "v2"\nx',
      prompt: "x",
      cost: 0.5,
      init_timestamp: at(T0 + 2),
      custom: { deep: [1, null] },
    },
    { event_type: "tools", id: "a3", tool_name: "search", params: { q: 1 }, returns: "r", init_timestamp: at(T0 + 3) },
    { type: "action", id: "a4", action_type: "click", timestamp: at(T0 + 4) },
    { type: "error", id: "a5", error_type: "E", code: 500, details: "bad", init_timestamp: at(T0 + 5) },
  ]);
  await api.withJwt("/v2/create_agent", { id: "ag1", name: "planner", role: "lead" }, a);
  await api.session("s-b", { init_timestamp: at(T0 + 1000), end_state: "Fail", end_state_reason: "Timeout" });
  const c = await api.session("s-c", { init_timestamp: at(T0 + 2000), tags: ["x"] });
  await createEvents(api, c, [{ type: "tool", id: "c1", name: "n", init_timestamp: at(T0 + 2001) }]);
  await api.session("s-d", { init_timestamp: at(T0 + 3000) });
  const theirs = await api.session("theirs", { init_timestamp: at(T0 + 500), tags: ["x"] }, OTHER_PROJECT_KEY);
  await createEvents(api, theirs, [{ type: "tool", id: "t1", name: "secret" }]);
}

const lines = (body: string) => body.split("\n").filter((line) => line !== "");

/** A small RFC 4180 reader, for the test only. */
function parseCsv(text: string): string[][] {
  const rows: string[][] = [];
  let row: string[] = [];
  let field = "";
  let quoted = false;
  for (let i = 0; i < text.length; i++) {
    const ch = text[i];
    if (quoted) {
      if (ch === '"' && text[i + 1] === '"') {
        field += '"';
        i++;
      } else if (ch === '"') quoted = false;
      else field += ch;
    } else if (ch === '"') quoted = true;
    else if (ch === ",") {
      row.push(field);
      field = "";
    } else if (ch === "\r" && text[i + 1] === "\n") {
      row.push(field);
      rows.push(row);
      row = [];
      field = "";
      i++;
    } else field += ch;
  }
  return rows;
}

t.test("ndjson: one line per session as exportSession shows it, newest first, then the trailer", async (t) => {
  const api = await build(t);
  await seed(api);
  const res = await read(api, "/v2/export");
  t.equal(res.statusCode, 200);
  t.match(res.headers["content-type"], /^application\/x-ndjson/);
  const all = lines(res.body).map((line) => JSON.parse(line));
  const trailer = all.pop();
  t.same(trailer, { trailer: { sessions: 4, events: 6 } });
  t.same(
    all.map((doc) => doc.session.id),
    ["s-d", "s-c", "s-b", "s-a"],
  );
  for (const doc of all) {
    const { status: _status, ...one } = (await read(api, `/v2/sessions/${doc.session.id}/export`)).json();
    t.strictSame(doc, one, `${doc.session.id}: as GET /v2/sessions/{id}/export shows it`);
  }
  t.notMatch(res.body, /theirs|secret/, "another project's sessions are absent");

  const theirs = lines((await read(api, "/v2/export", OTHER_PROJECT_KEY)).body).map((line) => JSON.parse(line));
  t.same(
    theirs.map((doc) => doc.session?.id ?? doc.trailer),
    ["theirs", { sessions: 1, events: 1 }],
  );
});

t.test("the list's filters, read the same way", async (t) => {
  const api = await build(t);
  await seed(api);
  const cases: [string, string[], number][] = [
    ["tag=x", ["s-c", "s-a"], 6],
    ["tag=x&tag=y", ["s-a"], 5],
    ["end_state=failed", ["s-b"], 0],
    ["q=timeout", ["s-b"], 0],
    ["agent_id=ag1", ["s-a"], 5],
    [`from=${at(T0 + 1000)}&to=${at(T0 + 3000)}`, ["s-c", "s-b"], 1],
    ["tag=nothing", [], 0],
  ];
  for (const [query, expected, events] of cases) {
    const all = lines((await read(api, `/v2/export?${query}`)).body).map((line) => JSON.parse(line));
    const trailer = all.pop();
    t.same(
      all.map((doc) => doc.session.id),
      expected,
      query,
    );
    t.same(trailer, { trailer: { sessions: expected.length, events } }, `${query}: the trailer`);
  }
});

t.test("csv: a header, one row per event, RFC 4180 quoting, the trailer row", async (t) => {
  const api = await build(t);
  await seed(api);
  const res = await read(api, "/v2/export?format=csv");
  t.equal(res.statusCode, 200);
  t.match(res.headers["content-type"], /^text\/csv/);
  t.ok(res.body.endsWith("\r\n"));
  const rows = parseCsv(res.body);
  t.strictSame(rows[0], [
    "session_id",
    "event_id",
    "type",
    "init_timestamp",
    "end_timestamp",
    "agent_id",
    "model",
    "prompt_tokens",
    "completion_tokens",
    "cost",
    "cost_source",
    "data",
  ]);
  t.strictSame(rows.at(-1), ["", "", "trailer", "", "", "", "", "", "", "", "", '{"sessions":4,"events":6}']);
  const events = rows.slice(1, -1);
  t.same(
    events.map((row) => `${row[0]}/${row[1]}`),
    ["s-c/c1", "s-a/a1", "s-a/a2", "s-a/a3", "s-a/a4", "s-a/a5"],
  );
  const views = (await read(api, "/v2/sessions/s-a/events")).json().events as Record<string, unknown>[];
  for (const row of events.filter((row) => row[0] === "s-a")) {
    const view = views.find((v) => v.id === row[1]) as Record<string, unknown>;
    const data = JSON.parse(row[11] as string);
    const back: Record<string, unknown> = { ...data, id: row[1], session_id: row[0], type: row[2] };
    const columns = [
      "init_timestamp",
      "end_timestamp",
      "agent_id",
      "model",
      "prompt_tokens",
      "completion_tokens",
      "cost",
      "cost_source",
    ];
    columns.forEach((name, i) => {
      const text = row[3 + i] as string;
      if (text === "") {
        if (view[name] === null) back[name] = null;
        return;
      }
      back[name] = typeof view[name] === "number" ? Number(text) : text;
    });
    t.same(back, view, `${row[1]}: the columns and data give back the event`);
  }
  t.ok(res.body.includes(',"m, ""v2""\nx",'), "a quote is doubled, a comma and a newline kept inside quotes");
  t.notMatch(res.body, /theirs|secret/);
});

t.test("otlp: one OTLP/JSON request per session, as exportSession?format=otlp makes it", async (t) => {
  const api = await build(t);
  await seed(api);
  const res = await read(api, "/v2/export?format=otlp&tag=x");
  t.equal(res.statusCode, 200);
  const all = lines(res.body).map((line) => JSON.parse(line));
  t.same(all.pop(), { trailer: { sessions: 2, events: 6 } });
  const expected = [];
  for (const id of ["s-c", "s-a"]) expected.push((await read(api, `/v2/sessions/${id}/export?format=otlp`)).json());
  t.strictSame(all, expected);
});

t.test("a bad format or filter is a 400 before anything is sent; a read key is enough", async (t) => {
  const api = await build(t);
  isBadParameter(t, await read(api, "/v2/export?format=xml"), ["query.format"]);
  isBadParameter(t, await read(api, "/v2/export?end_state=maybe"), ["query.end_state"]);
  isBadParameter(t, await read(api, "/v2/export?from=yesterday"), ["query.from"]);
  t.equal((await read(api, "/v2/export", API_KEY)).statusCode, 200);
  t.equal((await read(api, "/v2/export")).body, '{"trailer":{"sessions":0,"events":0}}\n', "nothing to export");
});

// ------------------------------------------------------------------------------- streaming

const SESSIONS = 300;
const PROMPT = "p".repeat(100_000);

/** SESSIONS sessions of about 100 KB each, written straight to the store; counts readSession calls. */
async function bigProject(t: Test, options: Parameters<typeof build>[1] = {}) {
  const api = await build(t, options);
  const project = (await api.store.listProjects()).find((p) => p.name === "default")?.id as string;
  for (let i = 0; i < SESSIONS; i++) {
    const id = `big-${String(i).padStart(4, "0")}`;
    const init = T0 + i;
    await api.store.createSession(project, {
      id,
      init_timestamp: at(init),
      init_us: init * 1000,
      end_timestamp: null,
      end_state: null,
      end_state_reason: null,
      tags: null,
      host_env: null,
      extra: {},
    });
    await api.store.insertEvents(project, id, [
      {
        id: "e",
        type: "llm",
        init_timestamp: at(init),
        init_us: init * 1000,
        end_timestamp: null,
        agent_id: null,
        model: "m",
        prompt_tokens: 1,
        completion_tokens: 1,
        cost: null,
        cost_source: "unknown",
        fields: { prompt: PROMPT },
        aliases: [],
        extra: {},
      },
    ]);
  }
  const counted = { reads: 0, failAt: Number.POSITIVE_INFINITY };
  const store = api.store as Store;
  const readSession = store.readSession.bind(store);
  store.readSession = async (...args) => {
    counted.reads += 1;
    if (counted.reads >= counted.failAt) throw new Error("storage went away");
    return readSession(...args);
  };
  await api.app.listen({ port: 0, host: "127.0.0.1" });
  const port = (api.app.server.address() as { port: number }).port;
  return { api, counted, port };
}

const settle = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Waits until the count stops moving. */
async function quiet(counted: { reads: number }) {
  let last = -1;
  while (counted.reads !== last) {
    last = counted.reads;
    await settle(300);
  }
  return last;
}

function open(port: number) {
  return new Promise<import("node:http").IncomingMessage>((resolve, reject) => {
    const req = request({ port, host: "127.0.0.1", path: "/v2/export", headers: { "x-agentmon-api-key": API_KEY } });
    req.on("response", resolve).on("error", reject).end();
  });
}

t.test("a client that does not read holds the reading back; then everything comes, with the trailer", async (t) => {
  // The request timeout bounds receiving the request only: a slow reader outlives it.
  const { counted, port } = await bigProject(t, { requestTimeoutMs: 1000 });
  const res = await open(port);
  t.equal(res.statusCode, 200);
  t.equal(res.headers["transfer-encoding"], "chunked", "streamed, no Content-Length");
  res.pause();
  await settle(2500);
  const held = await quiet(counted);
  t.ok(held < SESSIONS / 2, `with the client paused, the server read ${held} of ${SESSIONS} sessions and waited`);
  let text = "";
  let chunks = 0;
  res.setEncoding("utf8");
  res.on("data", (chunk: string) => {
    text += chunk;
    chunks += 1;
  });
  res.resume();
  await new Promise((resolve) => res.on("end", resolve));
  t.ok(chunks > 1, `${chunks} chunks`);
  const all = lines(text);
  t.equal(all.length, SESSIONS + 1);
  t.same(JSON.parse(all.at(-1) as string), { trailer: { sessions: SESSIONS, events: SESSIONS } });
  t.equal(counted.reads, SESSIONS);
});

t.test("a client that goes away stops the reading", async (t) => {
  const { counted, port } = await bigProject(t);
  const res = await open(port);
  await new Promise((resolve) => res.once("data", resolve));
  res.destroy();
  const stopped = await quiet(counted);
  t.ok(stopped < SESSIONS / 2, `the server read ${stopped} of ${SESSIONS} sessions, then stopped`);
});

t.test("a failure mid-way ends the transfer without the trailer", async (t) => {
  const { counted, port } = await bigProject(t);
  counted.failAt = 20;
  const res = await open(port);
  t.equal(res.statusCode, 200, "the status was sent before the failure");
  let text = "";
  res.setEncoding("utf8");
  res.on("data", (chunk: string) => {
    text += chunk;
  });
  const ending = await new Promise<string>((resolve) => {
    res.on("end", () => resolve("end"));
    res.on("aborted", () => resolve("aborted"));
    res.on("error", () => resolve("error"));
    res.on("close", () => resolve("close"));
  });
  t.not(ending, "end", `the transfer did not end normally (${ending})`);
  t.notMatch(text, /trailer/);
  t.equal(lines(text).length, 19, "the sessions read before the failure");
});
