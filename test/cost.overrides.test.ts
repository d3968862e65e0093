/**
 * Cost (issue 5, part 2): AGENTMON_PRICES entries override and extend the shipped price table; the
 * shipped table is valid and a broken file is refused with its reason, in-process and in a real
 * agentmon process.
 */
import { spawn } from "node:child_process";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import t from "tap";
import { loadConfig } from "../cli/config.ts";
import { type PriceEntry, parsePrices, priceTable, readPrices, shippedPrices } from "../domain/prices.ts";
import { parseTimestamp } from "../domain/timestamps.ts";
import { main } from "../server.ts";
import { costOf, send } from "./cost.helpers.ts";
import { API_KEY, build, tempDir } from "./helper.ts";

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
