/**
 * Cost (issue 5, part 2): llm events sent without `cost` are priced from the model price table
 * (prices/models.json, overridden or extended by AGENTMON_PRICES), every llm event says where its
 * cost came from, and token_cost (S6) and the stats are the same sums. Also migration 002 on a
 * real version-1 database file.
 */
import { spawn } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import Database from "better-sqlite3";
import t from "tap";
import { loadConfig } from "../cli/config.ts";
import { openDb } from "../db/sqlite/open.ts";
import { type PriceEntry, parsePrices, priceTable, readPrices, shippedPrices } from "../domain/prices.ts";
import { parseTimestamp } from "../domain/timestamps.ts";
import { formatCost } from "../domain/views.ts";
import { main } from "../server.ts";
import { API_KEY, build, type TestApp, tempDir } from "./helper.ts";

const read = (api: TestApp, url: string) =>
  api.inject({ method: "GET", url, headers: { "x-agentmon-api-key": API_KEY } });

async function send(api: TestApp, url: string, body: unknown, jwt: string) {
  const res = await api.withJwt(url, body, jwt);
  if (res.statusCode !== 200) throw new Error(`${url} answered ${res.statusCode}: ${res.body}`);
  return res.json();
}

/** The read API's view of one event: its cost_source and cost. */
async function costOf(api: TestApp, sessionId: string, eventId: string) {
  const events = (await read(api, `/v2/sessions/${encodeURIComponent(sessionId)}/events?limit=1000`)).json().events;
  const event = events.find((e: { id: string }) => e.id === eventId);
  return { cost_source: event?.cost_source, cost: event?.cost };
}

/** token_cost of update_session, stats.cost of getSessionStats, and the list row's stats.cost. */
async function threeSums(api: TestApp, sessionId: string, jwt: string) {
  const tokenCost = (await send(api, "/v2/update_session", { session: {} }, jwt)).token_cost;
  const stats = (await read(api, `/v2/sessions/${sessionId}/stats`)).json().stats.cost;
  const rows = (await read(api, "/v2/sessions?limit=200")).json().sessions;
  const row = rows.find((r: { session: { id: string } }) => r.session.id === sessionId)?.stats.cost;
  return { tokenCost, stats, row };
}

// ----------------------------------------------------------------------------------- pricing

t.test("an llm event without cost is priced from the shipped table; the three sums agree", async (t) => {
  const api = await build(t);
  const jwt = await api.session("mini");
  // gpt-4o-mini: 0.15 USD per million prompt tokens, 0.60 per million completion tokens.
  await send(
    api,
    "/v2/create_events",
    {
      events: [
        {
          type: "llm",
          id: "a",
          model: "gpt-4o-mini",
          init_timestamp: "2026-11-22T05:00:00Z",
          prompt_tokens: 12,
          completion_tokens: 1,
        },
        { event_type: "llms", id: "b", model: "GPT-4o-mini-2024-07-18", prompt_tokens: 1_000_000 },
      ],
    },
    jwt,
  );
  t.strictSame(await costOf(api, "mini", "a"), { cost_source: "table", cost: 0.0000024 });
  t.strictSame(await costOf(api, "mini", "b"), { cost_source: "table", cost: 0.15 }, "dated name, any case");
  t.strictSame(await threeSums(api, "mini", jwt), { tokenCost: "0.1500024", stats: "0.1500024", row: "0.1500024" });
});

t.test("a client cost always wins, on create and on update", async (t) => {
  const api = await build(t);
  const jwt = await api.session("client");
  const events = [{ type: "llm", id: "c", model: "gpt-4o-mini", prompt_tokens: 1_000_000, cost: 7 }];
  await send(api, "/v2/create_events", { events }, jwt);
  t.strictSame(await costOf(api, "client", "c"), { cost_source: "client", cost: 7 });
  await send(api, "/v2/update_events", { events: [{ event_id: "c", completion_tokens: 5, model: "gpt-4o" }] }, jwt);
  t.strictSame(await costOf(api, "client", "c"), { cost_source: "client", cost: 7 }, "new tokens do not re-price it");

  await send(
    api,
    "/v2/create_events",
    { events: [{ type: "llm", id: "d", model: "gpt-4o-mini", prompt_tokens: 10 }] },
    jwt,
  );
  t.equal((await costOf(api, "client", "d")).cost_source, "table");
  await send(api, "/v2/update_events", { events: [{ event_id: "d", cost: 0.01 }] }, jwt);
  t.strictSame(await costOf(api, "client", "d"), { cost_source: "client", cost: 0.01 }, "a cost sent later wins");
  await send(api, "/v2/update_events", { events: [{ event_id: "d", prompt_tokens: 99 }] }, jwt);
  t.strictSame(await costOf(api, "client", "d"), { cost_source: "client", cost: 0.01 }, "and keeps winning");
  t.equal((await threeSums(api, "client", jwt)).tokenCost, "7.01");
});

t.test("update_events that changes model, tokens or time re-prices a table cost", async (t) => {
  const api = await build(t);
  const jwt = await api.session("reprice");
  const update = (fields: Record<string, unknown>) =>
    send(api, "/v2/update_events", { events: [{ event_id: "r", ...fields }] }, jwt);
  // The AgentOps SDK sends the completion and its tokens in an update, after the call ends.
  await send(
    api,
    "/v2/create_events",
    { events: [{ type: "llm", id: "r", model: "gpt-4o", init_timestamp: "2025-01-01T00:00:00Z" }] },
    jwt,
  );
  t.strictSame(await costOf(api, "reprice", "r"), { cost_source: "unknown", cost: undefined }, "no tokens yet");
  await update({ prompt_tokens: 1000, completion_tokens: 100 });
  t.strictSame(await costOf(api, "reprice", "r"), { cost_source: "table", cost: 0.0035 }, "2.50 + 10 per million");
  await update({ completion_tokens: 1000 });
  t.strictSame(await costOf(api, "reprice", "r"), { cost_source: "table", cost: 0.0125 });
  await update({ model: "gpt-4o-mini" });
  t.strictSame(await costOf(api, "reprice", "r"), { cost_source: "table", cost: 0.00075 });
  await update({ model: "a-model-nobody-prices" });
  t.strictSame(await costOf(api, "reprice", "r"), { cost_source: "unknown", cost: undefined });
  await update({ model: "gpt-4o", init_timestamp: "2024-06-01T00:00:00Z" });
  t.strictSame(await costOf(api, "reprice", "r"), { cost_source: "table", cost: 0.02 }, "5 + 15 before 2024-10-02");
  await update({ type: "tool" });
  const events = (await read(api, "/v2/sessions/reprice/events")).json().events;
  t.notOk("cost_source" in events[0] || "cost" in events[0], "a tool event has no cost from the table");
  t.equal((await threeSums(api, "reprice", jwt)).tokenCost, "0.00", "nor is it summed");
});

t.test("the entry used is the matching one with the latest effective_from not after the event", async (t) => {
  const api = await build(t);
  const jwt = await api.session("dates");
  const at = ["2024-05-12T23:59:59.999999Z", "2024-05-13T00:00:00Z", "2024-10-01T23:59:59Z", "2024-10-02T00:00:00Z"];
  const events = at.map((init, i) => ({
    type: "llm",
    id: `d${i}`,
    model: "gpt-4o-2024-08-06",
    init_timestamp: init,
    prompt_tokens: 1_000_000,
  }));
  await send(api, "/v2/create_events", { events }, jwt);
  t.strictSame(await costOf(api, "dates", "d0"), { cost_source: "unknown", cost: undefined }, "before any entry");
  t.strictSame(await costOf(api, "dates", "d1"), { cost_source: "table", cost: 5 }, "from its first day");
  t.strictSame(await costOf(api, "dates", "d2"), { cost_source: "table", cost: 5 }, "to the last day before the next");
  t.strictSame(await costOf(api, "dates", "d3"), { cost_source: "table", cost: 2.5 }, "then the next entry");
});

t.test("unknown: no model, an unpriced model, or no token counts; other kinds never get a table cost", async (t) => {
  const api = await build(t);
  const jwt = await api.session("unknown");
  await send(
    api,
    "/v2/create_events",
    {
      events: [
        { type: "llm", id: "u1", prompt_tokens: 5 },
        { type: "llm", id: "u2", model: "my-local-llama", prompt_tokens: 5 },
        { type: "llm", id: "u3", model: "gpt-4o-mini" },
        { type: "llm", id: "u4", model: "gpt-4o-mini", prompt_tokens: null, completion_tokens: null },
        { type: "llm", id: "u5", model: "gpt-4o-mini-but-not-really", prompt_tokens: 5 },
        { type: "tool", id: "t1", model: "gpt-4o-mini", prompt_tokens: 5 },
        { type: "llm", id: "z", model: "gpt-4o-mini", prompt_tokens: 0, completion_tokens: 0 },
      ],
    },
    jwt,
  );
  for (const id of ["u1", "u2", "u3", "u4", "u5"]) {
    t.strictSame(await costOf(api, "unknown", id), { cost_source: "unknown", cost: undefined }, id);
  }
  t.strictSame(await costOf(api, "unknown", "t1"), { cost_source: undefined, cost: undefined }, "a tool event");
  t.strictSame(await costOf(api, "unknown", "z"), { cost_source: "table", cost: 0 }, "zero tokens cost zero");
  t.strictSame(await threeSums(api, "unknown", jwt), { tokenCost: "0.00", stats: "0.00", row: "0.00" });
});

t.test("token_cost, stats.cost and the list row's cost are the same sum, over many events", async (t) => {
  const api = await build(t);
  const jwt = await api.session("many");
  let expected = 0;
  const events = Array.from({ length: 600 }, (_, i) => {
    if (i % 3 === 0) {
      expected += (i % 17) * 0.001;
      return { type: "llm", id: `m${i}`, cost: (i % 17) * 0.001 };
    }
    if (i % 3 === 1) {
      expected += ((i % 13) * 0.15 + (i % 7) * 0.6) / 1e6;
      return { type: "llm", id: `m${i}`, model: "gpt-4o-mini", prompt_tokens: i % 13, completion_tokens: i % 7 };
    }
    return { type: "tool", id: `m${i}`, cost: 1 };
  });
  await send(api, "/v2/create_events", { events }, jwt);
  const sums = await threeSums(api, "many", jwt);
  t.equal(sums.stats, sums.tokenCost);
  t.equal(sums.row, sums.tokenCost);
  t.equal(sums.tokenCost, formatCost(expected), "the sum of the client's and the table's costs");
  const exported = (await read(api, "/v2/sessions/many/export")).json();
  t.equal(exported.stats.cost, sums.tokenCost);
});

// ----------------------------------------------------------------------------------- overrides

t.test("AGENTMON_PRICES entries override and extend the shipped table", async (t) => {
  const overrides: PriceEntry[] = [
    { pattern: "^gpt-4o-mini$", effective_from: "2026-01-01", prompt_per_million: 1, completion_per_million: 2 },
    { pattern: "^my-local-llama", effective_from: "2020-01-01", prompt_per_million: 0.01, completion_per_million: 0 },
  ];
  const api = await build(t, { prices: priceTable(overrides) });
  const jwt = await api.session("over");
  const llm = (id: string, model: string, init: string) => ({
    type: "llm",
    id,
    model,
    init_timestamp: init,
    prompt_tokens: 1_000_000,
    completion_tokens: 1_000_000,
  });
  await send(
    api,
    "/v2/create_events",
    {
      events: [
        llm("o1", "gpt-4o-mini", "2026-11-22T00:00:00Z"),
        llm("o2", "gpt-4o-mini", "2025-06-01T00:00:00Z"),
        llm("o3", "my-local-llama-3b", "2026-11-22T00:00:00Z"),
        llm("o4", "gpt-4o", "2026-11-22T00:00:00Z"),
      ],
    },
    jwt,
  );
  t.strictSame(await costOf(api, "over", "o1"), { cost_source: "table", cost: 3 }, "the override wins");
  t.strictSame(
    await costOf(api, "over", "o2"),
    { cost_source: "table", cost: 0.75 },
    "before the override's date, the shipped entry still prices it",
  );
  t.strictSame(await costOf(api, "over", "o3"), { cost_source: "table", cost: 0.01 }, "a model the table lacks");
  t.strictSame(await costOf(api, "over", "o4"), { cost_source: "table", cost: 12.5 }, "other models: shipped");
});

t.test("price tables: the shipped one is valid, and a broken file is refused with its reason", async (t) => {
  const shipped = shippedPrices();
  t.ok(shipped.length >= 10, "the shipped table has entries");
  t.strictSame(readPrices(new URL("../prices/models.json", import.meta.url)), shipped);
  const table = priceTable([], shipped);
  const when = parseTimestamp("2026-01-01T00:00:00Z")?.us ?? 0;
  const known: [string, number, number][] = [
    ["gpt-4o-mini", 0.15, 0.6],
    ["gpt-4o-2024-08-06", 2.5, 10],
    ["gpt-4.1", 2, 8],
    ["claude-3-5-sonnet-20241022", 3, 15],
    ["claude-3-5-haiku-latest", 0.8, 4],
    ["gemini-1.5-pro", 1.25, 5],
  ];
  for (const [model, prompt, completion] of known) {
    const entry = table.lookup(model, when);
    t.strictSame([entry?.prompt_per_million, entry?.completion_per_million], [prompt, completion], model);
  }
  t.equal(table.lookup("gpt-4o-mini-tts", when), undefined, "patterns are anchored: no accidental prefix match");

  const good = { pattern: "^m$", effective_from: "2025-01-01", prompt_per_million: 1, completion_per_million: 1 };
  const refused: [string, RegExp][] = [
    ["{", /f\.json is not valid JSON/],
    ["{}", /must be a JSON array of price entries/],
    ["[1]", /entry 0 must be an object/],
    [JSON.stringify([good, { ...good, pattern: "(" }]), /entry 1: pattern "\(" is not a valid regular expression/],
    [JSON.stringify([{ ...good, pattern: "" }]), /pattern must be a non-empty string/],
    [JSON.stringify([{ ...good, effective_from: "2025-02-30" }]), /effective_from must be a date written YYYY-MM-DD/],
    [JSON.stringify([{ ...good, effective_from: "2025-1-1" }]), /effective_from must be a date/],
    [JSON.stringify([{ ...good, prompt_per_million: -1 }]), /prompt_per_million must be a number >= 0/],
    [JSON.stringify([{ ...good, completion_per_million: "1" }]), /completion_per_million must be a number >= 0/],
    [JSON.stringify([{ ...good, price: 1 }]), /entry 0 has unknown keys: price/],
  ];
  for (const [text, message] of refused) t.throws(() => parsePrices(text, "f.json"), message, text.slice(0, 60));
  t.strictSame(parsePrices(JSON.stringify([good]), "f.json"), [good]);
});

t.test("AGENTMON_PRICES (or --prices) is read when the settings are, and a bad file stops the start", async (t) => {
  const dir = tempDir(t);
  const file = join(dir, "prices.json");
  const entries = [{ pattern: "^x$", effective_from: "2025-01-01", prompt_per_million: 1, completion_per_million: 2 }];
  writeFileSync(file, JSON.stringify(entries));
  t.strictSame(loadConfig({ AGENTMON_PRICES: file }, {}).prices, entries);
  t.strictSame(loadConfig({}, { prices: file }).prices, entries);
  t.equal(loadConfig({}, {}).prices, undefined, "no file: the shipped table alone");

  const broken = join(dir, "broken.json");
  writeFileSync(broken, JSON.stringify([{ ...entries[0], effective_from: "soon" }]));
  for (const path of [broken, join(dir, "missing.json")]) {
    const lines: string[] = [];
    const io = { out: (line: string) => lines.push(line), err: (line: string) => lines.push(line) };
    const code = await main(["serve", "--db", ":memory:", "--port", "0"], { AGENTMON_PRICES: path }, io);
    t.equal(code, 1, "exit code 1");
    t.equal(lines.length, 1, "one line");
    t.match(lines[0], /^agentmon: AGENTMON_PRICES: /);
    t.match(
      lines[0],
      path.endsWith("broken.json") ? /entry 0: effective_from/ : /cannot read the price table .*ENOENT/,
    );
  }
});

t.test("a real agentmon process prices with the AGENTMON_PRICES file", async (t) => {
  const dir = tempDir(t);
  const file = join(dir, "prices.json");
  const entry = {
    pattern: "^house-model$",
    effective_from: "2020-01-01",
    prompt_per_million: 4,
    completion_per_million: 0,
  };
  writeFileSync(file, JSON.stringify([entry]));
  const env = {
    PATH: process.env.PATH,
    HOME: process.env.HOME,
    AGENTMON_API_KEY: API_KEY,
    AGENTMON_PRICES: file,
    AGENTMON_LOG_LEVEL: "silent",
  };
  const child = spawn(process.execPath, ["bin/agentmon.js", "serve", "--port", "0", "--db", join(dir, "p.db")], {
    cwd: fileURLToPath(new URL("..", import.meta.url)),
    env,
    stdio: ["ignore", "pipe", "pipe"],
  });
  t.teardown(() => {
    if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
  });
  let stdout = "";
  const base = await new Promise<string>((resolve, reject) => {
    // A bound so that a broken start fails the test instead of hanging it; not a speed check.
    const timer = setTimeout(() => reject(new Error(`no start within 60 s: ${stdout}`)), 60_000);
    child.stdout.setEncoding("utf8").on("data", (chunk: string) => {
      stdout += chunk;
      const match = /listening on (http:\/\/\S+)/.exec(stdout);
      if (match?.[1]) {
        clearTimeout(timer);
        resolve(match[1]);
      }
    });
    child.once("exit", () => reject(new Error(`agentmon exited: ${stdout}`)));
  });
  const post = async (path: string, body: unknown, headers: Record<string, string>) => {
    const res = await fetch(`${base}${path}`, {
      method: "POST",
      headers: { "content-type": "application/json", ...headers },
      body: JSON.stringify(body),
    });
    return (await res.json()) as { jwt: string };
  };
  const { jwt } = await post("/v2/create_session", { session: { id: "proc" } }, { "x-agentmon-api-key": API_KEY });
  const events = [{ type: "llm", id: "h", model: "house-model", prompt_tokens: 250_000 }];
  await post("/v2/create_events", { events }, { authorization: `Bearer ${jwt}` });
  const res = await fetch(`${base}/v2/sessions/proc/events`, { headers: { "x-agentmon-api-key": API_KEY } });
  const [event] = ((await res.json()) as { events: { cost_source: string; cost: number }[] }).events;
  t.equal(event?.cost_source, "table");
  t.equal(event?.cost, 1, "250 000 tokens at 4 USD per million");
  child.kill("SIGTERM");
  const code = await new Promise((resolve) => child.once("exit", (c) => resolve(c)));
  t.equal(code, 0, "stops cleanly");
});

// ----------------------------------------------------------------------------------- migration

t.test("migration 002 upgrades a real version-1 database file", async (t) => {
  const path = join(tempDir(t), "v1.db");
  // A version-1 file, made as agentmon 1 made it: migration 001 alone, user_version 1.
  const v1 = new Database(path);
  v1.pragma("journal_mode = WAL");
  v1.exec(readFileSync(new URL("../db/sqlite/migrations/001-create-tables.sql", import.meta.url), "utf8"));
  v1.pragma("user_version = 1");
  v1.prepare("INSERT INTO projects (id, name, created_at) VALUES ('p1', 'default', '2026-01-01T00:00:00Z')").run();
  v1.prepare(
    `INSERT INTO sessions (id, project_id, init_timestamp, init_us, extra)
     VALUES ('old', 'p1', '2026-11-22T05:00:00Z', ?, '{}')`,
  ).run(Date.UTC(2026, 10, 22, 5) * 1000);
  const insert = v1.prepare(
    `INSERT INTO events (session_pk, id, type, init_timestamp, init_us, end_timestamp, model, prompt_tokens,
       completion_tokens, cost, body, extra)
     VALUES (1, @id, @type, '2026-11-22T05:00:01Z', @init_us, @end, @model, @pt, @ct, @cost, '{}', '{}')`,
  );
  const rows = [
    { id: "paid", type: "llm", end: "2026-11-22T05:00:02Z", model: "gpt-4o-mini", pt: 10, ct: 1, cost: 0.25 },
    { id: "unpaid", type: "llm", end: "2026-11-22T05:00:09.5Z", model: "gpt-4o-mini", pt: 1000, ct: 0, cost: null },
    { id: "tool", type: "tool", end: "2026-11-22T05:00:03.123456Z", model: null, pt: null, ct: null, cost: 3 },
    { id: "open", type: "error", end: null, model: null, pt: null, ct: null, cost: null },
    { id: "odd", type: "action", end: "2026-11-22T05:00:04.120Z", model: null, pt: null, ct: null, cost: null },
  ];
  for (const row of rows) insert.run({ ...row, init_us: Date.UTC(2026, 10, 22, 5, 0, 1) * 1000 });
  v1.close();

  const db = openDb(path);
  t.equal(db.pragma("user_version", { simple: true }), 2, "now at version 2");
  const migrated = db.prepare("SELECT id, cost_source, cost, end_timestamp, end_us FROM events ORDER BY id").all() as {
    id: string;
    cost_source: string;
    cost: number | null;
    end_timestamp: string | null;
    end_us: number | null;
  }[];
  const by = new Map(migrated.map((row) => [row.id, row]));
  t.equal(by.get("paid")?.cost_source, "client", "a cost that was set is the client's");
  t.equal(by.get("tool")?.cost_source, "client");
  t.equal(by.get("unpaid")?.cost_source, "unknown", "no cost: unknown, not priced after the fact");
  t.equal(by.get("unpaid")?.cost, null);
  for (const row of migrated) {
    t.equal(row.end_us, row.end_timestamp === null ? null : parseTimestamp(row.end_timestamp)?.us, `${row.id}: end_us`);
  }
  const indexes = (db.prepare("SELECT name FROM sqlite_master WHERE type = 'index'").all() as { name: string }[]).map(
    (row) => row.name,
  );
  for (const name of ["sessions_by_project_time", "sessions_by_project_state", "events_by_agent"]) {
    t.ok(indexes.includes(name), `index ${name}`);
  }
  t.throws(
    () => db.prepare("UPDATE events SET cost_source = 'guess'").run(),
    /CHECK constraint failed/,
    "cost_source is one of three values",
  );
  db.close();

  t.test("the upgraded file serves the read API", async (t) => {
    const api = await build(t, { dbPath: path });
    const stats = (await read(api, "/v2/sessions/old/stats")).json().stats;
    t.equal(stats.cost, "0.25", "the llm costs the client sent");
    t.equal(stats.last_event_at, "2026-11-22T05:00:09.5Z", "the latest end, from the migrated end_us");
    t.equal(stats.duration_ms, 9500);
    t.strictSame(await costOf(api, "old", "unpaid"), { cost_source: "unknown", cost: undefined });
    const jwt = (await api.withKey("/v2/reauthorize_jwt", { session_id: "old" })).json().jwt as string;
    await send(api, "/v2/update_events", { events: [{ event_id: "unpaid", completion_tokens: 0 }] }, jwt);
    t.strictSame(
      await costOf(api, "old", "unpaid"),
      { cost_source: "table", cost: 0.00015 },
      "the next update of an unknown event prices it",
    );
  });
});
