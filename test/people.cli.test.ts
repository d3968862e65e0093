/**
 * `agentmon users` and `agentmon members` (issue 26, decision 035), in-process through main() on
 * a real database file; the links they print work in the app.
 */
import { join } from "node:path";
import t from "tap";
import { openDb } from "../db/sqlite/open.ts";
import { sqliteStore } from "../db/sqlite/store.ts";
import { build, tempDir } from "./helper.ts";
import { asBrowser, browserOf, PASSWORD, signIn } from "./people.helpers.ts";
import { agentmon, childEnv, LISTENING } from "./process.ts";
import { run, seedKeys } from "./server.helpers.ts";

const tokenOf = (link: string | undefined) => (link ?? "").split("#")[1] ?? "";

async function auditOf(db: string) {
  const store = sqliteStore(openDb(db));
  try {
    return (await store.listAudit({ limit: 100 })).reverse().map((r) => [r.action, r.actor, r.target]);
  } finally {
    await store.close();
  }
}

t.test("users create prints a one-time link that sets the password; the person signs in with it", async (t) => {
  const db = join(tempDir(t), "people.db");
  await seedKeys(db, "default", ["11111111-1111-4111-8111-111111111111"]);
  const made = await run(
    ["users", "create", "--email", "Ann@Example.com", "--name", "Ann", "--project", "default", "--role", "editor"],
    db,
  );
  t.equal(made.code, 0, made.err.join("\n"));
  t.equal(made.out.length, 1, "one line on stdout: the link");
  t.match(made.out[0], /^http:\/\/127\.0\.0\.1:3000\/ui\/signup\.html#reset_/);
  t.match(made.err.join("\n"), /Created an account for ann@example\.com \(editor of "default"\)/);
  const listed = await run(["users", "list"], db);
  t.match(listed.out[0], /^ann@example\.com {2}Ann {2}created /);
  const again = await run(["users", "create", "--email", "ann@example.com"], db);
  t.equal(again.code, 1);
  t.match(again.err.join("\n"), /email already has an account/i);

  const api = await build(t, { dbPath: db });
  const reset = await api.post("/v2/auth/reset_password", { token: tokenOf(made.out[0]), password: PASSWORD });
  t.equal(reset.statusCode, 200, reset.body);
  const ann = await signIn(api, "ann@example.com");
  const me = await asBrowser(api, ann, "GET", "/v2/auth/me");
  t.same(me.json().memberships, [{ project: "default", role: "editor" }]);
  const twice = await api.post("/v2/auth/reset_password", { token: tokenOf(made.out[0]), password: PASSWORD });
  t.equal(twice.statusCode, 400, "the link works once");
});

t.test("users invite, members set/list/remove, users disable/enable, reset-link; each act is audited", async (t) => {
  const db = join(tempDir(t), "people.db");
  await seedKeys(db, "default", ["11111111-1111-4111-8111-111111111111"]);
  const bad = await run(
    ["users", "invite", "--email", "vic@example.com", "--project", "default", "--role", "boss"],
    db,
  );
  t.equal(bad.code, 1);
  t.match(bad.err.join("\n"), /--role must be one of viewer, annotator, editor, admin/);
  const nowhere = await run(
    ["users", "invite", "--email", "vic@example.com", "--project", "nope", "--role", "viewer"],
    db,
  );
  t.match(nowhere.err.join("\n"), /no project is named "nope"/);
  const invited = await run(
    ["users", "invite", "--email", "vic@example.com", "--project", "default", "--role", "viewer"],
    db,
  );
  t.equal(invited.code, 0, invited.err.join("\n"));
  t.match(invited.out[0], /#invite_/);

  const api = await build(t, { dbPath: db });
  const signup = await api.post("/v2/auth/signup", {
    token: tokenOf(invited.out[0]),
    email: "vic@example.com",
    name: "Vic",
    password: PASSWORD,
  });
  t.equal(signup.statusCode, 200, signup.body);
  t.same(signup.json().memberships, [{ project: "default", role: "viewer" }]);
  const vic = browserOf(signup);

  t.equal((await run(["members", "set", "default", "vic@example.com", "admin"], db)).code, 0);
  t.match((await run(["members", "list", "--project", "default"], db)).out, ["default  vic@example.com  admin"]);
  t.equal((await run(["members", "remove", "default", "vic@example.com"], db)).code, 0);
  t.match((await run(["members", "list"], db)).out[0], /No members yet/);
  const gone = await asBrowser(api, vic, "GET", "/v2/sessions", { project: "default" });
  t.equal(gone.statusCode, 404, "no member now: the project is not found for them");

  t.equal((await run(["users", "disable", "vic@example.com"], db)).code, 0);
  t.equal((await asBrowser(api, vic, "GET", "/v2/auth/me")).statusCode, 401, "disabled from the CLI: refused at once");
  t.equal((await run(["users", "enable", "VIC@example.com"], db)).code, 0);
  const link = await run(["users", "reset-link", "vic@example.com"], db);
  t.match(link.out[0], /#reset_/);
  t.match((await run(["users", "disable", "nobody@example.com"], db)).err.join("\n"), /no person has the email/);

  t.same(await auditOf(db), [
    ["user.invited", "cli", "vic@example.com"],
    ["user.created", (await api.store.userByEmail("vic@example.com"))?.id, "vic@example.com"],
    ["member.role_changed", "cli", "vic@example.com"],
    ["member.removed", "cli", "vic@example.com"],
    ["user.disabled", "cli", "vic@example.com"],
    ["user.enabled", "cli", "vic@example.com"],
    ["user.password_reset_link", "cli", "vic@example.com"],
  ]);
});

t.test("serve: the first start prints, beside the first API key, a one-time link that makes the owner", async (t) => {
  const db = join(tempDir(t), "first.db");
  const server = agentmon(t, ["serve", "--port", "0", "--db", db], childEnv({ AGENTMON_LOG_LEVEL: "warn" }));
  const base = (await server.waitFor(LISTENING))[1] ?? "";
  const link = server
    .stdout()
    .split("\n")
    .map((line) => line.trim())
    .find((line) => line.includes("/ui/signup.html#owner_"));
  t.match(link, new RegExp(`^${base.replace(/[.:/]/g, "\\$&")}/ui/signup\\.html#owner_`), "the link, on this server");
  const res = await fetch(`${base}/v2/auth/signup`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ token: tokenOf(link), email: "owner@example.com", name: "Owner", password: PASSWORD }),
  });
  t.equal(res.status, 200);
  t.equal(((await res.json()) as { user: { owner: boolean } }).user.owner, true, "the owner");
  t.match(res.headers.get("set-cookie") ?? "", /agentmon_session=.*HttpOnly/);
  server.child.kill("SIGTERM");
  t.equal((await server.exited()).code, 0);

  const again = agentmon(t, ["serve", "--port", "0", "--db", db], childEnv({ AGENTMON_LOG_LEVEL: "warn" }));
  await again.waitFor(LISTENING);
  t.notOk(again.stdout().includes("/ui/signup.html#"), "no owner link once someone has an account");
  again.child.kill("SIGTERM");
  await again.exited();
});
