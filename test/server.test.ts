/**
 * The `agentmon` command: `keys create|list|revoke` and configuration, called in-process through
 * main(); then `serve` as a real process on a real port.
 */
import { spawn } from "node:child_process";
import { randomUUID } from "node:crypto";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import t, { type Test } from "tap";
import { ConfigError, loadConfig, readSize } from "../cli/config.ts";
import { openDb } from "../db/sqlite/open.ts";
import { sqliteStore } from "../db/sqlite/store.ts";
import { hashApiKey, keyPrefix } from "../domain/keys.ts";
import type { ApiKeyRecord } from "../domain/types.ts";
import { main } from "../server.ts";
import { API_KEY, build, eventIds, INVALID_JWT, inspect, MIB, tempDir } from "./helper.ts";
import { agentmon, childEnv, LISTENING, WAIT_MS } from "./process.ts";

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** An `io` for main() that keeps what it prints. */
function capture() {
  const out: string[] = [];
  const err: string[] = [];
  return { out, err, io: { out: (line: string) => out.push(line), err: (line: string) => err.push(line) } };
}

/** Runs `agentmon <args> --db <db>` in-process with an empty environment. */
async function run(args: string[], db: string) {
  const c = capture();
  const code = await main([...args, "--db", db], {}, c.io);
  return { code, out: c.out, err: c.err };
}

/** The key records in a database file, read through a connection of its own. */
async function keysIn(db: string): Promise<ApiKeyRecord[]> {
  const store = sqliteStore(openDb(db));
  try {
    return await store.listApiKeys();
  } finally {
    await store.close();
  }
}

async function seedKeys(db: string, project: string, keys: string[]) {
  const store = sqliteStore(openDb(db));
  for (const key of keys) await store.createApiKey(hashApiKey(key), keyPrefix(key), project, new Date().toISOString());
  await store.close();
}

/** Every text cell of every table of a database file, lower-cased. */
function allCells(db: string): string[] {
  const conn = openDb(db);
  try {
    const tables = conn.prepare("SELECT name FROM sqlite_master WHERE type = 'table'").all() as { name: string }[];
    return tables.flatMap(({ name }) =>
      (conn.prepare(`SELECT * FROM "${name}"`).all() as Record<string, unknown>[]).flatMap((row) =>
        Object.values(row).map((value) => String(value).toLowerCase()),
      ),
    );
  } finally {
    conn.close();
  }
}

/** A ConfigError whose message is one line naming `name`. */
function isOneLineConfigError(t: Test, fn: () => unknown, name: string, what: string) {
  let error: unknown;
  try {
    fn();
  } catch (e) {
    error = e;
  }
  t.ok(error instanceof ConfigError, `${what}: a ConfigError`);
  const message = (error as Error | undefined)?.message ?? "";
  t.notMatch(message, /\n/, `${what}: one line`);
  t.ok(message.includes(name), `${what}: names ${name} (${message})`);
}

t.test("keys create prints the new key once, on stdout", async (t) => {
  const db = join(tempDir(t), "keys.db");
  const { code, out, err } = await run(["keys", "create", "--project", "X"], db);
  t.equal(code, 0, "exit 0");
  t.equal(out.length, 1, "one line on stdout");
  const key = out[0] ?? "";
  t.match(key, UUID, "the line is the key, a UUID");
  t.notOk(err.join("\n").includes(key), "stderr does not repeat the key");
  t.ok(err.join("\n").includes(key.slice(0, 8)), "stderr names its prefix");

  const [record, ...others] = await keysIn(db);
  t.equal(others.length, 0, "one key stored");
  t.equal(record?.project_name, "X", "in project X");
  t.equal(record?.prefix, key.slice(0, 8), "prefix kept");
  t.equal(record?.revoked_at, null, "not revoked");
  const cells = allCells(db);
  t.notOk(
    cells.some((cell) => cell.includes(key.toLowerCase())),
    "the database never holds the key",
  );
  t.ok(cells.includes(hashApiKey(key)), "only its hash");

  const app = await build(t, { dbPath: db });
  const res = await app.withKey("/v2/create_session", { session: { id: "s1" } }, key);
  t.equal(res.statusCode, 200, `the key works: ${res.body}`);
});

t.test("keys create without --project makes a key of the default project", async (t) => {
  const db = join(tempDir(t), "keys.db");
  const { code, out } = await run(["keys", "create"], db);
  t.equal(code, 0);
  t.match(out[0], UUID);
  t.equal((await keysIn(db))[0]?.project_name, "default");
  const again = await run(["keys", "create"], db);
  t.not(again.out[0], out[0], "each call makes a new key");
  t.equal((await keysIn(db)).length, 2);
});

t.test("keys list shows 8-character prefixes, never the whole key", async (t) => {
  const db = join(tempDir(t), "keys.db");
  const empty = await run(["keys", "list"], db);
  t.equal(empty.code, 0, "exit 0 with no keys");
  t.ok(empty.out.length + empty.err.length > 0, "says there are none");

  const a = (await run(["keys", "create", "--project", "alpha"], db)).out[0] ?? "";
  const b = (await run(["keys", "create", "--project", "beta"], db)).out[0] ?? "";
  const { code, out, err } = await run(["keys", "list"], db);
  t.equal(code, 0, "exit 0");
  const text = [...out, ...err].join("\n");
  for (const [key, project] of [
    [a, "alpha"],
    [b, "beta"],
  ] as const) {
    const line = out.find((l) => l.includes(key.slice(0, 8)));
    t.ok(line, `a line shows prefix ${key.slice(0, 8)}`);
    t.ok(line?.includes(project), `with its project ${project}`);
    t.notOk(text.includes(key), "never the whole key");
    t.notOk(text.includes(key.slice(8)), "nor its secret part");
  }
  await run(["keys", "revoke", a.slice(0, 8)], db);
  const after = await run(["keys", "list"], db);
  t.match(after.out.find((l) => l.includes(a.slice(0, 8))) ?? "", /revoked/i, "a revoked key is shown as revoked");
  t.notMatch(after.out.find((l) => l.includes(b.slice(0, 8))) ?? "", /revoked/i, "the other is not");
});

t.test("keys revoke <prefix> revokes that key only, and it fails at once", async (t) => {
  const db = join(tempDir(t), "keys.db");
  const a = (await run(["keys", "create"], db)).out[0] ?? "";
  const b = (await run(["keys", "create"], db)).out[0] ?? "";
  const { code, out, err } = await run(["keys", "revoke", a.slice(0, 8)], db);
  t.equal(code, 0, `exit 0 (${err.join(" ")})`);
  t.equal(out.length, 1, "one line");
  t.notOk([...out, ...err].join("\n").includes(a), "does not print the key");
  const records = await keysIn(db);
  t.type(records.find((r) => r.prefix === a.slice(0, 8))?.revoked_at, "string", "a is revoked");
  t.equal(records.find((r) => r.prefix === b.slice(0, 8))?.revoked_at, null, "b is not");

  const app = await build(t, { dbPath: db });
  const refused = await app.withKey("/v2/create_session", { session: { id: "s1" } }, a);
  t.equal(refused.statusCode, 401, "the revoked key fails");
  const accepted = await app.withKey("/v2/create_session", { session: { id: "s2" } }, b);
  t.equal(accepted.statusCode, 200, "the other key works");
});

t.test("keys revoke <whole key> revokes it", async (t) => {
  const db = join(tempDir(t), "keys.db");
  const a = (await run(["keys", "create"], db)).out[0] ?? "";
  const { code, out } = await run(["keys", "revoke", a], db);
  t.equal(code, 0, "exit 0");
  t.equal(out.length, 1, "one line");
  t.notOk(out.join("\n").includes(a), "does not echo the key");
  t.type((await keysIn(db))[0]?.revoked_at, "string", "revoked");
  const upper = (await run(["keys", "create"], db)).out[0] ?? "";
  t.equal((await run(["keys", "revoke", upper.toUpperCase()], db)).code, 0, "an upper-case key is the same key");
  t.ok(
    (await keysIn(db)).every((r) => r.revoked_at !== null),
    "both revoked",
  );
});

t.test("keys revoke on the database of a running server: the key and its JWTs fail at once", async (t) => {
  const db = join(tempDir(t), "keys.db");
  const app = await build(t, { dbPath: db });
  const key = API_KEY;
  const jwt = await app.session("s1", {}, key);
  const { code } = await run(["keys", "revoke", key.slice(0, 8)], db);
  t.equal(code, 0);
  const res = await app.withKey("/v2/create_session", { session: { id: "s2" } }, key);
  t.equal(res.statusCode, 401, "the key fails");
  const events = await app.withJwt("/v2/create_events", { events: [{ type: "llm" }] }, jwt);
  t.equal(events.statusCode, 401, "its JWT fails");
  t.equal(events.json().error, INVALID_JWT.error);
});

t.test("keys revoke with an ambiguous or unknown key: exit 1 with one line", async (t) => {
  const db = join(tempDir(t), "keys.db");
  const one = "abcd1111-1111-4111-8111-111111111111";
  const two = "abcd2222-2222-4222-8222-222222222222";
  await seedKeys(db, "default", [one, two]);
  for (const [given, what] of [
    ["abcd", "a prefix of two keys"],
    ["ffff0000", "a prefix of no key"],
    ["99999999-9999-4999-8999-999999999999", "a whole key never created"],
  ] as const) {
    const { code, out, err } = await run(["keys", "revoke", given], db);
    t.equal(code, 1, `${what}: exit 1`);
    t.equal(err.length, 1, `${what}: one line on stderr`);
    t.notMatch(err[0] ?? "", /\n/, `${what}: a single line`);
    t.notMatch(err[0] ?? "", /^\s+at /m, `${what}: no stack trace`);
    t.same(out, [], `${what}: nothing on stdout`);
  }
  t.ok(
    (await keysIn(db)).every((r) => r.revoked_at === null),
    "nothing revoked",
  );
  const none = await run(["keys", "revoke"], db);
  t.equal(none.code, 1, "no key given: exit 1");
  t.equal(none.err.length, 1, "one line");
});

t.test("an unknown command or subcommand: exit 2 with the usage", async (t) => {
  const db = join(tempDir(t), "keys.db");
  const c = capture();
  t.equal(await main(["frobnicate"], {}, c.io), 2, "unknown command");
  t.match(c.err.join("\n"), /Usage/, "usage on stderr");
  t.same(c.out, [], "nothing on stdout");
  const sub = await run(["keys", "frobnicate"], db);
  t.equal(sub.code, 2, "unknown keys subcommand");
  t.match(sub.err.join("\n"), /keys create/);
  const flag = capture();
  t.equal(await main(["keys", "list", "--no-such-flag"], {}, flag.io), 1, "an unknown flag: exit 1");
  t.equal(flag.err.length, 1, "one line");
});

t.test("loadConfig: defaults", async (t) => {
  const config = loadConfig({}, {});
  t.equal(config.port, 3000, "PORT 3000");
  t.equal(config.host, "127.0.0.1", "HOST 127.0.0.1");
  t.equal(config.db, "./data/agentmon.db", "AGENTMON_DB ./data/agentmon.db");
  t.equal(config.bodyLimit, 5 * MIB, "body limit 5 MiB");
  t.equal(config.apiKey, undefined, "no configured key");
  t.equal(config.publicUrl, undefined, "no public URL");
  t.equal(config.jwtSecret, undefined, "no configured secret");
  t.equal(config.maxEvents, 1000, "1000 events a call");
  t.equal(config.authFailLimit, 20, "20 failures");
  t.equal(config.authFailWindowSeconds, 60, "in 60 s");
  t.equal(config.logLevel, "info", "log level info");
  t.equal(config.trustProxy, false, "no proxy trusted");
});

t.test("loadConfig: AGENTMON_TRUST_PROXY", async (t) => {
  t.equal(loadConfig({ AGENTMON_TRUST_PROXY: "true" }, {}).trustProxy, true);
  t.equal(loadConfig({ AGENTMON_TRUST_PROXY: "FALSE" }, {}).trustProxy, false);
  t.equal(loadConfig({ AGENTMON_TRUST_PROXY: "10.0.0.1, 10.1.0.0/16" }, {}).trustProxy, "10.0.0.1,10.1.0.0/16");
  t.equal(loadConfig({}, { "trust-proxy": "::1" }).trustProxy, "::1");
});

t.test("loadConfig: the environment overrides the defaults, flags override the environment", async (t) => {
  const key = randomUUID();
  const env = {
    PORT: "4000",
    HOST: "0.0.0.0",
    AGENTMON_DB: "/tmp/env.db",
    AGENTMON_API_KEY: key,
    AGENTMON_PUBLIC_URL: "https://mon.example.com/",
    AGENTMON_JWT_SECRET: "s".repeat(40),
    AGENTMON_BODY_LIMIT: "1MiB",
    AGENTMON_MAX_EVENTS: "50",
    AGENTMON_AUTH_FAIL_LIMIT: "5",
    AGENTMON_AUTH_FAIL_WINDOW: "30",
    AGENTMON_LOG_LEVEL: "warn",
  };
  const fromEnv = loadConfig(env, {});
  t.match(fromEnv, {
    port: 4000,
    host: "0.0.0.0",
    db: "/tmp/env.db",
    apiKey: key,
    bodyLimit: MIB,
    maxEvents: 50,
    authFailLimit: 5,
    authFailWindowSeconds: 30,
    logLevel: "warn",
  });
  t.match(fromEnv.publicUrl, /^https:\/\/mon\.example\.com\/?$/, "public URL");

  const flagKey = randomUUID();
  const fromFlags = loadConfig(env, {
    port: "5000",
    host: "::1",
    db: "/tmp/flag.db",
    "api-key": flagKey,
    "body-limit": "2MiB",
    "max-events": "7",
    "auth-fail-limit": "9",
    "auth-fail-window": "90",
    "log-level": "error",
  });
  t.match(fromFlags, {
    port: 5000,
    host: "::1",
    db: "/tmp/flag.db",
    apiKey: flagKey,
    bodyLimit: 2 * MIB,
    maxEvents: 7,
    authFailLimit: 9,
    authFailWindowSeconds: 90,
    logLevel: "error",
  });
});

t.test("loadConfig: bad settings are a ConfigError of one clear line", async (t) => {
  for (const port of ["abc", "70000", "-1", "3000.5", "80x"]) {
    isOneLineConfigError(t, () => loadConfig({ PORT: port }, {}), "PORT", `PORT=${port}`);
  }
  isOneLineConfigError(t, () => loadConfig({}, { port: "nope" }), "PORT", "--port nope");
  for (const key of ["not-a-uuid", "11111111111141118111111111111111", "secret"]) {
    isOneLineConfigError(t, () => loadConfig({ AGENTMON_API_KEY: key }, {}), "AGENTMON_API_KEY", `key ${key}`);
  }
  for (const size of ["lots", "5 parsecs", "-5MiB", "0"]) {
    isOneLineConfigError(t, () => loadConfig({ AGENTMON_BODY_LIMIT: size }, {}), "AGENTMON_BODY_LIMIT", size);
  }
  for (const level of ["loud", "INFO!", "verbose"]) {
    isOneLineConfigError(t, () => loadConfig({ AGENTMON_LOG_LEVEL: level }, {}), "AGENTMON_LOG_LEVEL", level);
  }
  for (const proxy of ["yes", "nginx", "10.0.0.1;rm"]) {
    isOneLineConfigError(t, () => loadConfig({ AGENTMON_TRUST_PROXY: proxy }, {}), "AGENTMON_TRUST_PROXY", proxy);
  }
  for (const url of ["not a url", "ftp://example.com", "example.com"]) {
    isOneLineConfigError(t, () => loadConfig({ AGENTMON_PUBLIC_URL: url }, {}), "AGENTMON_PUBLIC_URL", url);
  }
});

t.test("main: a bad setting exits 1 with one line on stderr", async (t) => {
  for (const [env, name] of [
    [{ PORT: "abc" }, "PORT"],
    [{ AGENTMON_API_KEY: "nope" }, "AGENTMON_API_KEY"],
    [{ AGENTMON_BODY_LIMIT: "huge" }, "AGENTMON_BODY_LIMIT"],
    [{ AGENTMON_LOG_LEVEL: "loud" }, "AGENTMON_LOG_LEVEL"],
    [{ AGENTMON_PUBLIC_URL: "nowhere" }, "AGENTMON_PUBLIC_URL"],
  ] as const) {
    const c = capture();
    t.equal(await main(["serve"], env, c.io), 1, `${name}: exit 1`);
    t.equal(c.err.length, 1, `${name}: one line`);
    t.ok(c.err[0]?.includes(name), `${name}: named (${c.err[0]})`);
    t.notMatch(c.err[0] ?? "", /\n|^\s+at /m, `${name}: no stack trace`);
  }
});

t.test("readSize", async (t) => {
  t.equal(readSize("5MiB"), 5 * MIB);
  t.equal(readSize("5mib"), 5 * MIB);
  t.equal(readSize("512KiB"), 512 * 1024);
  t.equal(readSize("1048576"), MIB);
  t.equal(readSize("1MB"), 1_000_000);
  t.equal(readSize("1.5MiB"), 1.5 * MIB);
  t.equal(readSize(" 2 MiB "), 2 * MIB);
  for (const bad of ["", "abc", "5XB", "-1", "MiB", "1.2.3MiB"]) {
    isOneLineConfigError(t, () => readSize(bad), "AGENTMON_BODY_LIMIT", `${JSON.stringify(bad)} is refused`);
  }
});

async function postJson(url: string, body: unknown, headers: Record<string, string>) {
  const res = await fetch(url, {
    method: "POST",
    headers: { "content-type": "application/json", ...headers },
    body: JSON.stringify(body),
    signal: AbortSignal.timeout(WAIT_MS),
  });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}

/** The JSON lines of a process's stdout. */
function jsonLines(stdout: string): Record<string, unknown>[] {
  return stdout
    .split("\n")
    .filter((line) => line.startsWith("{"))
    .map((line) => JSON.parse(line) as Record<string, unknown>);
}

t.test("serve: a real process answers, logs each request once, stops on SIGTERM and keeps its data", async (t) => {
  const dir = tempDir(t);
  const db = join(dir, "a.db");
  const key = randomUUID();
  const env = childEnv({ AGENTMON_API_KEY: key, AGENTMON_LOG_LEVEL: "info" });
  const server = agentmon(t, ["serve", "--port", "0", "--db", db], env);
  const base = (await server.waitFor(LISTENING))[1] ?? "";
  t.match(base, /^http:\/\/127\.0\.0\.1:\d+$/, "listens on 127.0.0.1 on a port of its own");
  t.notMatch(base, /:0$/, "a real port");

  const created = await postJson(
    `${base}/v2/create_session`,
    { session: { id: "real-1" } },
    {
      "x-agentmon-api-key": key,
    },
  );
  t.equal(created.status, 200, `create_session: ${JSON.stringify(created.body)}`);
  const jwt = String(created.body.jwt);
  t.equal(created.body.session_id, "real-1");
  const sessionUrl = String(created.body.session_url);
  t.ok(sessionUrl.startsWith(`${base}/`), `S2: session_url ${sessionUrl} is an address on this server (${base})`);

  const refused = await postJson(
    `${base}/v2/create_session`,
    { session: { id: "real-2" } },
    {
      "x-agentmon-api-key": randomUUID(),
    },
  );
  t.equal(refused.status, 401, "an unknown key is refused by the real server");

  const events = await postJson(
    `${base}/v2/create_events`,
    { events: [{ type: "llm", id: "ev-1" }] },
    {
      authorization: `Bearer ${jwt}`,
    },
  );
  t.equal(events.status, 200, `create_events: ${JSON.stringify(events.body)}`);
  t.same(events.body.event_ids, ["ev-1"]);

  await server.waitFor(/"\/v2\/create_events"/);
  server.child.kill("SIGTERM");
  const { code, signal } = await server.exited();
  t.equal(code, 0, "exit code 0 after SIGTERM");
  t.equal(signal, null, "exited by itself, not killed");

  // Two create_session calls (one refused) and one create_events call: one JSON line each.
  const logs = jsonLines(server.stdout());
  for (const [url, requests] of [
    ["/v2/create_session", 2],
    ["/v2/create_events", 1],
  ] as const) {
    const lines = logs.filter((line) => JSON.stringify(line).includes(`"${url}"`));
    t.equal(lines.length, requests, `${url}: one JSON log line per request`);
  }
  const output = server.stdout() + server.stderr();
  t.notOk(output.includes(key), "the API key is never logged");
  t.notOk(output.includes(jwt), "the JWT is never logged");

  const store = sqliteStore(openDb(db));
  const session = await inspect(store).getSession("real-1");
  t.equal(session?.id, "real-1", "the session is in the database");
  t.same(await eventIds(store, "real-1"), ["ev-1"], "and its event");
  await store.close();

  // 4.4: the secret was generated at first start and kept in the database; a restart keeps JWTs valid.
  const again = agentmon(t, ["serve", "--port", "0", "--db", db], env);
  const base2 = (await again.waitFor(LISTENING))[1] ?? "";
  const later = await postJson(
    `${base2}/v2/create_events`,
    { events: [{ type: "tool", id: "ev-2" }] },
    {
      authorization: `Bearer ${jwt}`,
    },
  );
  t.equal(later.status, 200, `the JWT still works after a restart: ${JSON.stringify(later.body)}`);
  again.child.kill("SIGTERM");
  t.equal((await again.exited()).code, 0, "second run exits 0");
  t.notOk(again.stdout().includes(key), "the configured key is not printed");
});

t.test("serve: an empty database and no AGENTMON_API_KEY prints a new key and a curl line", async (t) => {
  const db = join(tempDir(t), "first.db");
  const server = agentmon(t, ["serve", "--port", "0", "--db", db], childEnv({ AGENTMON_LOG_LEVEL: "warn" }));
  const base = (await server.waitFor(LISTENING))[1] ?? "";
  const lines = server.stdout().split("\n");
  const key = lines.map((line) => line.trim()).find((line) => UUID.test(line));
  t.ok(key, "a line is the created key");
  const curl = lines.find((line) => line.includes("curl"));
  t.ok(curl, "a curl how-to line");
  t.ok(curl?.includes(`${key}`), "the curl line carries the key");
  const url = /curl\s.*?(https?:\/\/[^\s'"]+)/.exec(curl ?? "")?.[1];
  t.equal(url, `${base}/v2/create_session`, "the curl line calls this server's create_session");
  const body = /-d\s+'([^']*)'/.exec(curl ?? "")?.[1] ?? "";
  const tried = await postJson(`${base}/v2/create_session`, JSON.parse(body), { "x-agentmon-api-key": key ?? "" });
  t.equal(tried.status, 200, `the curl line's request works: ${JSON.stringify(tried.body)}`);
  t.equal((await keysIn(db)).length, 1, "one key created");
  t.ok(
    allCells(db).every((cell) => !cell.includes(key ?? "")),
    "stored only as a hash",
  );
  server.child.kill("SIGTERM");
  t.equal((await server.exited()).code, 0, "exit 0");
});

t.test("serve: a bad PORT exits 1 with one line on stderr and no stack trace", async (t) => {
  const dir = tempDir(t);
  const server = agentmon(t, ["serve", "--db", join(dir, "bad.db")], childEnv({ PORT: "not-a-port" }));
  const { code } = await server.exited();
  t.equal(code, 1, "exit 1");
  const stderr = server.stderr().trim();
  t.equal(stderr.split("\n").length, 1, `one line: ${stderr}`);
  t.match(stderr, /PORT/, "names PORT");
  t.notMatch(stderr, /^\s+at |Error:|node:internal/m, "no stack trace");
  t.notMatch(server.stdout(), /listening/, "does not listen");
});

t.test("serve: on a wildcard host, session_url names localhost, not the wildcard", async (t) => {
  const key = "44444444-4444-4444-8444-444444444444";
  const env = childEnv({ AGENTMON_API_KEY: key, AGENTMON_LOG_LEVEL: "warn", AGENTMON_DB: ":memory:" });
  const server = agentmon(t, ["serve", "--port", "0", "--host", "::"], env);
  const address = (await server.waitFor(LISTENING))[1] ?? "";
  t.match(address, /^http:\/\/\[::\]:\d+$/, "it listens on every address");
  const port = new URL(address).port;
  const created = await postJson(
    `http://127.0.0.1:${port}/v2/create_session`,
    { session: { id: "wild" } },
    { "x-agentmon-api-key": key },
  );
  t.equal(created.status, 200);
  t.equal(created.body.session_url, `http://localhost:${port}/sessions/wild`);
  server.child.kill("SIGTERM");
  t.equal((await server.exited()).code, 0, "exit 0");
});

t.test(
  "serve: a configured AGENTMON_API_KEY that was revoked or belongs to another project stops the start",
  async (t) => {
    const dir = tempDir(t);
    const revoked = join(dir, "revoked.db");
    await seedKeys(revoked, "default", [API_KEY]);
    t.equal((await run(["keys", "revoke", API_KEY], revoked)).code, 0);
    const first = await run(["serve", "--port", "0", "--api-key", API_KEY], revoked);
    t.equal(first.code, 1, "exit 1");
    t.same(first.err, ["agentmon: AGENTMON_API_KEY names a key that was revoked"]);
    t.notOk(
      first.out.some((line) => line.includes("listening")),
      "does not listen",
    );

    const foreign = join(dir, "foreign.db");
    await seedKeys(foreign, "team-a", [API_KEY]);
    const second = await run(["serve", "--port", "0", "--api-key", API_KEY], foreign);
    t.equal(second.code, 1);
    t.same(second.err, ['agentmon: AGENTMON_API_KEY belongs to project "team-a", not "default"']);
    t.same((await keysIn(foreign)).length, 1, "the database was closed and is unchanged");
  },
);

t.test("serve: a database that cannot be opened stops the start with one line", async (t) => {
  const file = join(tempDir(t), "not-a-folder");
  await seedKeys(file, "default", []); // a file where a folder is needed
  const res = await run(["serve", "--port", "0"], join(file, "agentmon.db"));
  t.equal(res.code, 1);
  t.equal(res.err.length, 1);
  t.match(res.err[0], /^agentmon: cannot open the database .*not-a-folder\/agentmon\.db: /);
});

t.test("serve: a port in use exits 1 with one line, and the first key created is still shown", async (t) => {
  const { app } = await build(t);
  await app.listen({ port: 0, host: "127.0.0.1" });
  const { port } = app.server.address() as { port: number };
  const db = join(tempDir(t), "busy.db");
  const res = await run(["serve", "--port", String(port), "--host", "127.0.0.1"], db);
  t.equal(res.code, 1);
  t.match(res.err.join("\n"), /^agentmon: listen EADDRINUSE.*; choose another PORT$/);
  const shown = res.out.map((line) => line.trim()).find((line) => /^[0-9a-f-]{36}$/.test(line));
  const [stored] = await keysIn(db);
  t.equal(stored?.prefix, shown?.slice(0, 8), "the key that was created is the one printed");
});

t.test("serve: a short AGENTMON_JWT_SECRET is used, with a warning", async (t) => {
  const { app } = await build(t);
  await app.listen({ port: 0, host: "127.0.0.1" });
  const { port } = app.server.address() as { port: number };
  const res = await run(
    ["serve", "--port", String(port), "--host", "127.0.0.1", "--jwt-secret", "short"],
    join(tempDir(t), "w.db"),
  );
  t.ok(
    res.err.includes(
      "agentmon: warning: AGENTMON_JWT_SECRET is shorter than 32 characters; use a longer random secret",
    ),
  );
  t.equal(res.code, 1, "(the port is taken here, so it stops after warning)");
});

t.test("npm start and the agentmon bin's first line give node the same flags", async (t) => {
  const root = new URL("../", import.meta.url);
  const start: string = JSON.parse(readFileSync(new URL("package.json", root), "utf8")).scripts.start;
  const shebang = readFileSync(new URL("bin/agentmon.js", root), "utf8").split("\n")[0] ?? "";
  const startFlags = start.split(" ").filter((word) => word.startsWith("--"));
  t.match(start, /^node (--\S+ )*bin\/agentmon\.js serve$/);
  t.equal(shebang, `#!/usr/bin/env -S node ${startFlags.join(" ")}`.trimEnd());
  t.ok(startFlags.includes("--max-semi-space-size=8"), "the young generation is capped (B5)");

  // The bin runs directly, through its first line, as npx runs it.
  const res = await new Promise<{ code: number | null; out: string }>((resolve) => {
    const child = spawn(new URL("bin/agentmon.js", root).pathname, ["help"], { stdio: ["ignore", "pipe", "pipe"] });
    let out = "";
    child.stdout.on("data", (chunk) => {
      out += chunk;
    });
    child.stderr.on("data", (chunk) => {
      out += chunk;
    });
    child.on("exit", (code) => resolve({ code, out }));
  });
  t.match(res.out, /agentmon serve/, "it starts and answers with its usage");
});
