/**
 * Exporting the audit trail (issue 26 item 6, decision 035): GET /v2/audit/export and `agentmon
 * audit export` write every record as NDJSON, one AuditEntry a line, oldest first, read a page at
 * a time; the project's records for a key, the instance's acts too for the owner, every record
 * from the command line; on SQLite and PostgreSQL (STORE=postgres for the HTTP side; the command
 * runs on both engines whatever STORE says).
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { Writable } from "node:stream";
import { Ajv2020 } from "ajv/dist/2020.js";
import t, { type Test } from "tap";
import { openPostgresStore } from "../db/postgres/store.ts";
import { openDb } from "../db/sqlite/open.ts";
import { sqliteStore } from "../db/sqlite/store.ts";
import type { Store } from "../db/store.ts";
import { hashApiKey, keyPrefix } from "../domain/keys.ts";
import type { AuditRecord } from "../domain/people.ts";
import { loadSpec } from "../lib/spec.ts";
import { main } from "../server.ts";
import { AUDIT_EXPORT_PAGE } from "../services/people.ts";
import { API_KEY, build, defaultStore, OTHER_PROJECT_KEY, tempDir } from "./helper.ts";
import { asBrowser, person, signIn } from "./people.helpers.ts";
import { postgresRequired, postgresUnavailable, testDatabase } from "./postgres.ts";
import { capture } from "./server.helpers.ts";

const { spec } = loadSpec<{ components: { schemas: Record<string, Record<string, unknown>> } }>();
const ENTRY = spec.components.schemas.AuditEntry as { required: string[] };
const validEntry = new Ajv2020({ strict: false }).compile({ ...ENTRY, additionalProperties: false });

/** More than two pages: 0, 1, 2 of every 5 in project `default`, 3 in `other`, 4 the instance's. */
const RECORDS = 2 * AUDIT_EXPORT_PAGE + 100;
/** A target that JSON keeps on one line only if it escapes it. */
const NASTY = 'line\nbreak\r"quote" \u2028 ünï 🙂';

async function fill(store: Store) {
  const ids = new Map((await store.listProjects()).map((p) => [p.name, p.id]));
  const made: AuditRecord[] = [];
  for (let i = 0; i < RECORDS; i++) {
    const project = [ids.get("default"), ids.get("default"), ids.get("default"), ids.get("other"), null][i % 5];
    made.push(
      await store.appendAudit({
        at: new Date(Date.UTC(2026, 10, 28, 0, 0, 0, i)).toISOString(),
        actor: "cli",
        actor_name: "agentmon CLI",
        address: "local",
        action: i % 5 === 4 ? "user.created" : "key.created",
        project_id: project ?? null,
        target: i === 0 ? NASTY : `t${i}`,
        details: { i, nested: { list: [1, null, "x"] } },
      }),
    );
  }
  return made;
}

/** The lines of an NDJSON body, each checked against AuditEntry (exactly its fields), parsed. */
function linesOf(t: Test, body: string) {
  t.ok(body === "" || body.endsWith("\n"), "every line ends with a newline");
  const lines = body === "" ? [] : body.slice(0, -1).split("\n");
  const parsed = lines.map((line) => JSON.parse(line) as Record<string, unknown>);
  const bad = parsed.filter((entry) => !validEntry(entry));
  t.strictSame(bad, [], "each line an AuditEntry, with nothing else");
  t.ok(
    parsed.every((e) => Object.keys(e).sort().join() === [...ENTRY.required].sort().join()),
    "each line has exactly AuditEntry's fields",
  );
  return parsed;
}

/** What the records should be exported as, oldest first. */
const entries = (records: AuditRecord[], names: Map<string | null, string>) =>
  records.map(({ project_id, ...r }) => ({ ...r, project: names.get(project_id) ?? null }));

t.test("GET /v2/audit/export streams the project's whole trail, oldest first, a page at a time", async (t) => {
  const inner = await defaultStore(t);
  const calls: { afterSeq?: number | undefined; limit: number }[] = [];
  // The real store, its listAudit calls counted: the export reads pages, never the whole trail.
  const store = new Proxy(inner, {
    get(target, name, receiver) {
      if (name === "listAudit") {
        return (options: Parameters<Store["listAudit"]>[0]) => {
          calls.push({ afterSeq: options.afterSeq, limit: options.limit });
          return target.listAudit(options);
        };
      }
      const value = Reflect.get(target, name, receiver);
      return typeof value === "function" ? value.bind(target) : value;
    },
  });
  const api = await build(t, { store });
  const get = (key: string) =>
    api.inject({ method: "GET", url: "/v2/audit/export", headers: { "x-agentmon-api-key": key } });

  const before = await get(API_KEY);
  t.equal(before.statusCode, 200, "an export of a trail with nothing yet");
  const names = new Map<string | null, string>((await inner.listProjects()).map((p) => [p.id, p.name]));
  const ids = new Map((await inner.listProjects()).map((p) => [p.name, p.id]));
  t.strictSame(
    linesOf(t, before.body),
    entries(await inner.listAudit({ projectId: ids.get("default"), afterSeq: 0, limit: 10_000 }), names),
    "before: what is there (maybe nothing)",
  );
  const made = await fill(inner);
  const all = [...(await inner.listAudit({ afterSeq: 0, limit: 10_000 }))];
  t.ok(made.every((r) => all.some((a) => a.seq === r.seq)));

  calls.length = 0;
  const res = await get(API_KEY);
  t.equal(res.statusCode, 200);
  t.match(res.headers["content-type"], /^application\/x-ndjson/);
  t.equal(res.headers["cache-control"], "no-store");
  const lines = linesOf(t, res.body);
  const mine = all.filter((r) => r.project_id === ids.get("default"));
  t.ok(mine.length > AUDIT_EXPORT_PAGE, "more than a page");
  t.strictSame(lines, entries(mine, names), "every record of the project, oldest first, as listAudit shows them");
  t.equal(lines[0]?.target, NASTY, "a target with line breaks stays on its line");
  t.ok(
    lines.every((e, i) => i === 0 || (e.seq as number) > (lines[i - 1]?.seq as number)),
    "in seq order",
  );
  t.strictSame(
    calls.map((c) => c.limit),
    calls.map(() => AUDIT_EXPORT_PAGE),
    "read a page at a time",
  );
  t.equal(calls.length, Math.ceil((mine.length + 1) / AUDIT_EXPORT_PAGE), "as many pages as it takes");
  t.equal(calls[0]?.afterSeq, 0, "from the first");

  // The same records GET /v2/audit pages, newest first.
  const paged: unknown[] = [];
  let cursor = "";
  for (;;) {
    const page = await api.inject({
      method: "GET",
      url: `/v2/audit?limit=200${cursor === "" ? "" : `&cursor=${encodeURIComponent(cursor)}`}`,
      headers: { "x-agentmon-api-key": API_KEY },
    });
    paged.push(...page.json().records);
    if (page.json().next_cursor === null) break;
    cursor = page.json().next_cursor;
  }
  t.strictSame(lines, paged.reverse(), "the export is the list, oldest first");

  const theirs = linesOf(t, (await get(OTHER_PROJECT_KEY)).body);
  t.strictSame(
    theirs,
    entries(
      all.filter((r) => r.project_id === ids.get("other")),
      names,
    ),
    "another project's key: its project's records only",
  );
  t.ok(
    theirs.every((e) => e.project === "other"),
    "nothing of default, nothing of the instance",
  );

  // The instance owner also gets the instance's acts; a project admin does not.
  await person(api.store, "owner@example.com", { owner: true });
  await person(api.store, "admin@example.com", { roles: [["default", "admin"]] });
  await person(api.store, "editor@example.com", { roles: [["default", "editor"]] });
  const owner = await signIn(api, "owner@example.com");
  const asOwner = await asBrowser(api, owner, "GET", "/v2/audit/export", { project: "default" });
  t.equal(asOwner.statusCode, 200, "the owner may");
  const withInstance = all.filter((r) => r.project_id === ids.get("default") || r.project_id === null);
  const ownerLines = linesOf(t, asOwner.body);
  // Signing in may itself be audited by now; the records filled are all there, in order.
  t.strictSame(ownerLines.slice(0, withInstance.length), entries(withInstance, names), "the owner: instance acts too");
  const admin = await signIn(api, "admin@example.com");
  const asAdmin = await asBrowser(api, admin, "GET", "/v2/audit/export", { project: "default" });
  t.equal(asAdmin.statusCode, 200, "a project admin may");
  t.ok(
    linesOf(t, asAdmin.body).every((e) => e.project === "default"),
    "a project admin: the project's only",
  );
  const editor = await signIn(api, "editor@example.com");
  const refused = await asBrowser(api, editor, "GET", "/v2/audit/export", { project: "default" });
  t.equal(refused.statusCode, 403, "an editor may not");
  t.equal(refused.json().message, 'Your role in project "default" is editor; this operation needs admin');
});

t.test("a read key may not export the trail; an unknown project is a 404", async (t) => {
  const api = await build(t);
  const made = await api.inject({
    method: "POST",
    url: "/v2/keys",
    headers: { "x-agentmon-api-key": API_KEY, "content-type": "application/json" },
    payload: { scopes: ["read"] },
  });
  t.equal(made.statusCode, 200, made.body);
  const res = await api.inject({
    method: "GET",
    url: "/v2/audit/export",
    headers: { "x-agentmon-api-key": made.json().key },
  });
  t.equal(res.statusCode, 403);
  t.match(res.json().message, /this operation needs admin/);
  await person(api.store, "owner@example.com", { owner: true });
  const owner = await signIn(api, "owner@example.com");
  const nowhere = await asBrowser(api, owner, "GET", "/v2/audit/export", { project: "nope" });
  t.equal(nowhere.statusCode, 404, nowhere.body);
});

/** `agentmon <args>` through main(), its standard output collected. */
async function agentmon(args: string[], env: NodeJS.ProcessEnv) {
  const c = capture();
  let out = "";
  const stdout = new Writable({
    write(chunk, _encoding, done) {
      out += chunk;
      done();
    },
  });
  const code = await main(args, env, c.io, stdout);
  return { code, out, err: c.err.join("\n").trim() };
}

/** The command on one engine: every record, a project's, to a file and to standard output. */
async function commandOn(t: Test, store: Store, run: (args: string[]) => ReturnType<typeof agentmon>) {
  const ids = new Map((await store.listProjects()).map((p) => [p.name, p.id]));
  const names = new Map<string | null, string>((await store.listProjects()).map((p) => [p.id, p.name]));
  await fill(store);
  const all = await store.listAudit({ afterSeq: 0, limit: 10_000 });
  await store.close();
  const dir = tempDir(t);

  const file = join(dir, "audit.ndjson");
  const whole = await run(["audit", "export", "--out", file]);
  t.equal(whole.code, 0, whole.err);
  t.equal(whole.out, "", "nothing on standard output");
  t.equal(whole.err, `Exported ${all.length} audit records.`);
  const lines = linesOf(t, readFileSync(file, "utf8"));
  t.ok(lines.length > 2 * AUDIT_EXPORT_PAGE);
  t.strictSame(lines, entries(all, names), "every record, the instance's acts included, oldest first");
  t.ok(lines.some((e) => e.project === null) && lines.some((e) => e.project === "other"));

  const one = await run(["audit", "export", "--project", "default"]);
  t.equal(one.code, 0, one.err);
  const defaults = all.filter((r) => r.project_id === ids.get("default"));
  t.equal(one.err, `Exported ${defaults.length} audit records of project "default".`);
  t.strictSame(linesOf(t, one.out), entries(defaults, names), "--project: that project's records, on stdout");

  const again = await run(["audit", "export", "--out", file, "--project", "other"]);
  t.equal(again.code, 0, again.err);
  t.strictSame(
    linesOf(t, readFileSync(file, "utf8")),
    entries(
      all.filter((r) => r.project_id === ids.get("other")),
      names,
    ),
    "--out replaces the file",
  );

  const refusals: [string[], RegExp][] = [
    [["audit", "export", "--format", "csv"], /audit export takes --project NAME and --out FILE .*not --format$/],
    [["audit", "export", "--tag", "x", "--dry-run"], /not --tag, --dry-run$/],
    [["audit", "export", "--project", "nope"], /no project is named "nope"/],
    [["audit", "export", "--project", ""], /--project names the project/],
    [["audit", "export", "extra"], /audit export takes no arguments \(got "extra"\)/],
    [["audit", "export", "--out", join(dir, "no-such-dir", "x.ndjson")], /cannot write .*no-such-dir.*ENOENT/],
    [["audit", "export", "--nonsense"], /Unknown option '--nonsense'/],
  ];
  for (const [args, message] of refusals) {
    const r = await run(args);
    t.equal(r.code, 1, args.join(" "));
    t.match(r.err, message, args.join(" "));
    t.equal(r.out, "", "nothing written");
  }
  for (const args of [["audit"], ["audit", "list"]]) {
    const r = await run(args);
    t.equal(r.code, 2, args.join(" "));
    t.match(r.err, /agentmon audit export \[--project NAME\] \[--out FILE\]/, "the usage");
  }
}

t.test("agentmon audit export on SQLite", async (t) => {
  const db = join(tempDir(t), "audit.db");
  const store = sqliteStore(openDb(db));
  for (const [key, project] of [
    [API_KEY, "default"],
    [OTHER_PROJECT_KEY, "other"],
  ] as const) {
    await store.createApiKey(hashApiKey(key), keyPrefix(key), project, new Date().toISOString());
  }
  await commandOn(t, store, (args) => agentmon([...args, "--db", db], {}));
});

t.test("agentmon audit export on PostgreSQL", async (t) => {
  const unavailable = await postgresUnavailable();
  if (unavailable && !postgresRequired()) {
    t.comment(`skipped: ${unavailable}`);
    return;
  }
  const url = await testDatabase(t);
  const store = await openPostgresStore({ url });
  for (const [key, project] of [
    [API_KEY, "default"],
    [OTHER_PROJECT_KEY, "other"],
  ] as const) {
    await store.createApiKey(hashApiKey(key), keyPrefix(key), project, new Date().toISOString());
  }
  await commandOn(t, store, (args) => agentmon(args, { AGENTMON_DATABASE_URL: url }));
});
