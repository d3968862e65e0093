/**
 * `agentmon prices check` and `agentmon prices import FILE` (issue 17 part 6,
 * docs/decisions/015-prices.md) as real processes on a real database file: the models of stored
 * llm events without a price, an import that a server then prices with from its next start
 * (AGENTMON_PRICES still first; events already stored keep their cost), and every refusal as one
 * line with nothing imported.
 */
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import t from "tap";
import { openDb } from "../db/sqlite/open.ts";
import { sqliteStore } from "../db/sqlite/store.ts";
import { main } from "../server.ts";
import { costOf, send } from "./cost.helpers.ts";
import { API_KEY, build, tempDir } from "./helper.ts";
import { agentmon, childEnv, LISTENING } from "./process.ts";
import { capture } from "./server.helpers.ts";

/** Runs `agentmon <args> --db <db>` as a child process to its end. */
async function cli(t: Parameters<typeof agentmon>[0], args: string[], db: string, env: Record<string, string> = {}) {
  const child = agentmon(t, [...args, "--db", db], childEnv(env));
  const { code } = await child.exited();
  const lines = (text: string) => text.split("\n").filter((line) => line !== "");
  return { code, out: lines(child.stdout()), err: lines(child.stderr()) };
}

/** Runs `agentmon <args> --db <db>` through main(), in this process, with an empty environment. */
async function inProcess(args: string[], db: string) {
  const { io, out, err } = capture();
  const code = await main([...args, "--db", db], {}, io);
  return { code, out, err };
}

/** The table imported last into a database file, read through a connection of its own. */
async function importedIn(db: string) {
  const store = sqliteStore(openDb(db), { checkpointer: false });
  try {
    return await store.importedPrices();
  } finally {
    await store.close();
  }
}

const HOUSE = [
  {
    pattern: "^house-model$",
    effective_from: "2026-01-01",
    prompt_per_million: 2,
    completion_per_million: 8,
    cache_read_per_million: 0.5,
    per_request: 0.001,
    note: "our negotiated price, 2026-11",
  },
  { pattern: "^other-house$", effective_from: "2026-01-01", prompt_per_million: 1, completion_per_million: 1 },
];

t.test(
  "check lists the unpriced models; import makes the next server price them; stored events keep their cost",
  async (t) => {
    const dir = tempDir(t);
    const db = join(dir, "prices.db");
    const api = await build(t, { dbPath: db });
    const jwt = await api.session("cli");
    await send(
      api,
      "/v2/create_events",
      {
        events: [
          { type: "llm", id: "h1", model: "house-model", init_timestamp: "2026-11-22T05:00:00Z", prompt_tokens: 1_000 },
          { type: "llm", id: "h2", model: "house-model", init_timestamp: "2026-11-22T06:00:00Z" },
          { type: "llm", id: "o1", model: "other-house", init_timestamp: "2026-11-22T05:30:00Z", completion_tokens: 3 },
          // Priced by the shipped table, but sent without token counts: no cost, and check says why.
          { type: "llm", id: "m1", model: "gpt-4o-mini", init_timestamp: "2026-11-22T05:00:00Z" },
          { type: "llm", id: "paid", model: "house-model", cost: 0.5 },
        ],
      },
      jwt,
    );

    const before = await cli(t, ["prices", "check"], db);
    t.equal(before.code, 1, `exit 1: a model has no price\n${before.out.join("\n")}\n${before.err.join("\n")}`);
    t.equal(before.out[0], "Price table: shipped (22 entries).");
    const row = (lines: string[], model: string) => lines.find((line) => line.trim().startsWith(`${model} `)) ?? "";
    t.match(
      row(before.out, "house-model"),
      /^\s+house-model\s+2\s+1\s+2026-11-22T05:00:00Z\s+2026-11-22T06:00:00Z\s+none$/,
    );
    t.match(row(before.out, "other-house"), /\s1\s+1\s+2026-11-22T05:30:00Z\s+2026-11-22T05:30:00Z\s+none$/);
    t.match(
      row(before.out, "gpt-4o-mini"),
      /\s1\s+0\s+.*shipped, from 2024-07-18$/,
      "priced now; it had no token counts",
    );
    t.ok(
      before.out.includes(
        "2 models have no price: add them to a price table (agentmon prices import FILE, or AGENTMON_PRICES).",
      ),
    );
    t.notOk(
      before.out.some((line) => line.includes("paid")),
      "a client's cost is a cost",
    );

    const file = join(dir, "house prices.json");
    writeFileSync(file, JSON.stringify(HOUSE, null, 2));
    const imported = await cli(t, ["prices", "import", file], db);
    t.equal(imported.code, 0, imported.err.join("\n"));
    t.equal(imported.out[0], `Imported 2 price entries from ${file} into ${db}.`);
    t.match(
      imported.out[1],
      /from its next start: after AGENTMON_PRICES, before the shipped table\. Events already stored keep their cost\./,
    );
    t.strictSame((await importedIn(db))?.text, JSON.stringify(HOUSE, null, 2), "the file, as it was");

    const after = await cli(t, ["prices", "check"], db);
    t.equal(after.code, 0, "exit 0: every model has a price now");
    t.match(after.out[0], /^Price table: imported \S+ from .*house prices\.json, then shipped \(22 entries\)\.$/);
    t.match(row(after.out, "house-model"), /imported, from 2026-01-01$/);
    t.strictSame(await costOf(api, "cli", "h1"), { cost_source: "unknown", cost: undefined }, "not re-priced");

    const env = { AGENTMON_API_KEY: API_KEY, AGENTMON_LOG_LEVEL: "silent" };
    const checkEnv = await cli(t, ["prices", "check"], db, {
      AGENTMON_PRICES: writeTable(dir, "env.json", [{ ...HOUSE[1], prompt_per_million: 5, completion_per_million: 5 }]),
    });
    t.match(checkEnv.out[0], /^Price table: AGENTMON_PRICES \(1 entry\), then imported .*, then shipped/);
    t.match(row(checkEnv.out, "other-house"), /AGENTMON_PRICES, from 2026-01-01$/);

    // A server started now prices with the imported table, on create and on update (the storage
    // thread's table has the same layers).
    const server = agentmon(t, ["serve", "--port", "0", "--db", db], childEnv(env));
    const base = (await server.waitFor(LISTENING))[1] as string;
    const post = async (path: string, body: unknown, headers: Record<string, string>) => {
      const res = await fetch(`${base}${path}`, {
        method: "POST",
        headers: { "content-type": "application/json", ...headers },
        body: JSON.stringify(body),
      });
      t.equal(res.status, 200, `${path}: ${res.status}`);
      return (await res.json()) as { jwt: string; token_cost: string };
    };
    const { jwt: jwt2 } = await post(
      "/v2/create_session",
      { session: { id: "next" } },
      { "x-agentmon-api-key": API_KEY },
    );
    const bearer = { authorization: `Bearer ${jwt2}` };
    // house-model: (10 000 − 4 000) × 2 = 12 000; 4 000 × 0.5 = 2 000; 500 × 8 = 4 000 → 18 000 → 0.018, + 0.001
    await post(
      "/v2/create_events",
      {
        events: [
          {
            type: "llm",
            id: "n1",
            model: "house-model",
            init_timestamp: "2026-11-22T07:00:00Z",
            prompt_tokens: 10_000,
            cache_read_tokens: 4_000,
            completion_tokens: 500,
          },
        ],
      },
      bearer,
    );
    t.equal((await post("/v2/update_session", { session: {} }, bearer)).token_cost, "0.019");
    // An update re-prices on the storage thread: 10 000 × 2 = 20 000; 4 000 → 0.024 + 0.001
    await post("/v2/update_events", { events: [{ event_id: "n1", cache_read_tokens: 0 }] }, bearer);
    t.equal((await post("/v2/update_session", { session: {} }, bearer)).token_cost, "0.025");
    server.child.kill("SIGTERM");
    t.equal((await server.exited()).code, 0, "stops cleanly");
  },
);

function writeTable(dir: string, name: string, entries: unknown): string {
  const path = join(dir, name);
  writeFileSync(path, typeof entries === "string" ? entries : JSON.stringify(entries));
  return path;
}

t.test("import refuses a bad table with one line and imports nothing", async (t) => {
  const dir = tempDir(t);
  const db = join(dir, "refused.db");
  const first = writeTable(dir, "first.json", HOUSE);
  t.equal((await cli(t, ["prices", "import", first], db)).code, 0);
  const entry = HOUSE[1] as Record<string, unknown>;
  const cases: [string, unknown, RegExp][] = [
    ["unknown.json", [{ ...entry, price: 1 }], /entry 0 has unknown keys: price \(allowed: /],
    [
      "overlap.json",
      [
        { ...entry, effective_until: "2026-06-01" },
        { ...entry, effective_from: "2026-03-01" },
      ],
      /entries 0 and 1 overlap \(pattern "\^other-house\$"\): entry 0 is valid from 2026-01-01 until 2026-06-01, entry 1 from 2026-03-01/,
    ],
    [
      "until.json",
      [{ ...entry, effective_until: "2025-12-31" }],
      /entry 0: effective_until \(2025-12-31\) must be after effective_from \(2026-01-01\)/,
    ],
    [
      "negative.json",
      [{ ...entry, cache_creation_per_million: -3.75 }],
      /entry 0: cache_creation_per_million must be a number >= 0/,
    ],
    ["broken.json", "[{", /broken\.json is not valid JSON/],
  ];
  for (const [name, table, message] of cases) {
    const path = writeTable(dir, name, table);
    // One as a real process; the others through main(), the same code without a process's start.
    const { code, out, err } =
      name === "overlap.json"
        ? await cli(t, ["prices", "import", path], db)
        : await inProcess(["prices", "import", path], db);
    t.equal(code, 1, `${name}: exit 1`);
    t.strictSame(out, [], `${name}: nothing on stdout`);
    t.equal(err.length, 1, `${name}: one line`);
    t.match(err[0], new RegExp(`^agentmon: nothing imported: ${path.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}`), name);
    t.match(err[0], message, name);
  }
  const missing = await inProcess(["prices", "import", join(dir, "missing.json")], db);
  t.equal(missing.code, 1);
  t.match(missing.err[0], /^agentmon: cannot read the price table .*missing\.json: ENOENT$/);
  const none = await inProcess(["prices", "import"], db);
  t.strictSame([none.code, none.err], [1, ["agentmon: prices import needs a file: agentmon prices import FILE"]]);
  t.equal((await importedIn(db))?.source, first, "the earlier import is still the one used");

  const usage = await cli(t, ["prices"], db);
  t.equal(usage.code, 2, "prices without a command: the usage, exit 2");
  t.match(usage.err.join("\n"), /agentmon prices check/);
});

t.test(
  "an imported table this agentmon finds invalid stops serve with one line; import still replaces it",
  async (t) => {
    const dir = tempDir(t);
    const db = join(dir, "stale.db");
    // As if an older agentmon had imported it: two entries of a pattern from the same day.
    const store = sqliteStore(openDb(db), { checkpointer: false });
    await store.importPrices(JSON.stringify([HOUSE[1], HOUSE[1]]), "/old/prices.json", "2026-11-01T00:00:00Z");
    await store.close();

    const { io, out, err } = capture();
    const code = await main(["serve", "--db", db, "--port", "0"], { AGENTMON_LOG_LEVEL: "silent" }, io);
    t.equal(code, 1, "exit 1");
    t.strictSame(out, []);
    t.equal(err.length, 1, "one line");
    t.match(
      err[0],
      /^agentmon: the price table imported on 2026-11-01T00:00:00Z is not valid \(\/old\/prices\.json: entries 0 and 1 overlap .*\); correct it and import it again with `agentmon prices import FILE`$/,
    );

    t.equal((await inProcess(["keys", "list"], db)).code, 0, "the keys commands do not read it");

    const fixed = writeTable(dir, "fixed.json", HOUSE);
    const again = await cli(t, ["prices", "import", fixed], db);
    t.equal(again.code, 0, again.err.join("\n"));
    const check = await cli(t, ["prices", "check"], db);
    t.equal(check.code, 0, check.err.join("\n"));
    t.equal(check.out[1], "Every llm event that names a model has a cost.");
  },
);
