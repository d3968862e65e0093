/**
 * The `agentmon` command: `keys create|list|revoke`, and unknown commands, called in-process
 * through main() on a real database file. Configuration is in server.config.test.ts, `serve` as a
 * real process in server.serve.test.ts.
 */
import { join } from "node:path";
import t from "tap";
import { hashApiKey } from "../domain/keys.ts";
import { main } from "../server.ts";
import { API_KEY, build, INVALID_JWT, tempDir } from "./helper.ts";
import { allCells, capture, keysIn, run, seedKeys, UUID } from "./server.helpers.ts";

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

t.test("keys create --scope: the key can do exactly that (4.7); without it, all three", async (t) => {
  const db = join(tempDir(t), "keys.db");
  const all = await run(["keys", "create"], db);
  t.match(all.err.join("\n"), /scopes ingest,read,admin/, "stderr names the scopes");
  const ingestRead = await run(["keys", "create", "--scope", "ingest,read"], db);
  t.equal(ingestRead.code, 0, "exit 0");
  t.match(ingestRead.out[0], UUID, "the key, on stdout alone");
  t.equal(ingestRead.out.length, 1);
  t.match(ingestRead.err.join("\n"), /scopes ingest,read\b/);
  const read = await run(["keys", "create", "--scope", " Read, read ,"], db);
  t.equal(read.code, 0, "any case, spaces, repeats and an empty item are fine");
  t.match(read.err.join("\n"), /with scope read\./);
  const spelled = await run(["keys", "create", "--scope", "all"], db);
  t.equal(spelled.code, 0, "all is every scope");
  const annotate = await run(["keys", "create", "--scope", "annotate"], db);
  t.equal(annotate.code, 0, "annotate alone (issue 25)");
  t.same(
    (await keysIn(db)).map((k) => k.scopes),
    [["ingest", "read", "admin"], ["ingest", "read"], ["read"], ["ingest", "read", "admin", "annotate"], ["annotate"]],
    "stored as asked",
  );
  const list = await run(["keys", "list"], db);
  t.match(
    list.out.find((l) => l.includes((read.out[0] ?? "").slice(0, 8))) ?? "",
    / {2}read {2}/,
    "keys list shows them",
  );
  t.match(list.out.find((l) => l.includes((all.out[0] ?? "").slice(0, 8))) ?? "", / {2}ingest,read,admin {2}/);

  const app = await build(t, { dbPath: db });
  const readKey = read.out[0] ?? "";
  const refused = await app.withKey("/v2/create_session", { session: { id: "s1" } }, readKey);
  t.equal(refused.statusCode, 403, "a read key cannot write");
  t.strictSame(refused.json(), {
    error: "Forbidden",
    message: "This API key has scope read; this operation needs ingest",
  });
  t.equal((await app.withKey("/v2/create_session", { session: { id: "s1" } }, ingestRead.out[0])).statusCode, 200);
  const listed = await app.inject({ method: "GET", url: "/v2/sessions", headers: { "x-agentmon-api-key": readKey } });
  t.equal(listed.statusCode, 200, "and reads");
  const deleted = await app.inject({
    method: "DELETE",
    url: "/v2/sessions/s1",
    headers: { "x-agentmon-api-key": ingestRead.out[0] ?? "" },
  });
  t.equal(deleted.statusCode, 403, "ingest,read cannot delete");
  t.match(deleted.json().message, /has scopes ingest, read; this operation needs admin/);
});

t.test("keys create with a bad --scope: exit 1 with one clear line, no key made", async (t) => {
  const db = join(tempDir(t), "keys.db");
  for (const [given, pattern] of [
    ["write", /unknown scope "write": the scopes are ingest, read, admin, annotate \(or all\)/],
    ["read,Delete,x", /unknown scope "delete", "x"/],
    ["", /no scope given/],
    [" , ", /no scope given/],
  ] as const) {
    const { code, out, err } = await run(["keys", "create", "--scope", given], db);
    t.equal(code, 1, `--scope ${JSON.stringify(given)}: exit 1`);
    t.equal(err.length, 1, "one line on stderr");
    t.match(err[0] ?? "", /^agentmon: --scope: /, "that names the flag");
    t.match(err[0] ?? "", pattern);
    t.same(out, [], "nothing on stdout");
  }
  const misplaced = await run(["keys", "list", "--scope", "read"], db);
  t.equal(misplaced.code, 1, "--scope on keys list: exit 1");
  t.match(misplaced.err.join("\n"), /--scope is a flag of keys create only/);
  t.same(await keysIn(db), [], "no key was made");
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

t.test("--help and -h, anywhere before --: exit 0 with the usage, nothing run", async (t) => {
  for (const argv of [
    ["--help"],
    ["-h"],
    ["serve", "--help"],
    ["keys", "create", "-h"],
    ["prices", "import", "--help"],
  ]) {
    const c = capture();
    t.equal(await main(argv, { AGENTMON_DB: ":memory:" }, c.io), 0, `${argv.join(" ")}: exit 0`);
    t.match(c.err.join("\n"), /Usage:[\s\S]*agentmon serve/, `${argv.join(" ")}: the usage`);
    t.same(c.out, [], `${argv.join(" ")}: nothing on stdout`);
  }
});
