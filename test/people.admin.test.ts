/**
 * Projects, keys, members and retention through the API (issue 26 part 5, decision 035): a
 * project admin manages their project only; the owner makes projects; every change is audited.
 */
import t from "tap";
import { build, isError } from "./helper.ts";
import { asBrowser, person, signIn } from "./people.helpers.ts";

t.test("an admin makes a key (shown once), lists and revokes it; another project's key is not found", async (t) => {
  const api = await build(t);
  await person(api.store, "adam@example.com", { roles: [["default", "admin"]] });
  const adam = await signIn(api, "adam@example.com");
  const made = await asBrowser(api, adam, "POST", "/v2/keys", { project: "default", body: { scopes: ["ingest"] } });
  t.equal(made.statusCode, 200, made.body);
  const { key, api_key } = made.json();
  t.same(api_key.scopes, ["ingest"]);
  t.equal(
    (await api.withKey("/v2/create_session", { session: { id: "by-new-key" } }, key)).statusCode,
    200,
    "it works",
  );
  const listed = await asBrowser(api, adam, "GET", "/v2/keys", { project: "default" });
  t.ok(listed.json().keys.some((k: { id: string }) => k.id === api_key.id));
  t.notOk(listed.body.includes(key), "a listing never shows a key");
  const others = (await api.store.listApiKeys()).filter((k) => k.project_name === "other");
  const foreign = await asBrowser(api, adam, "POST", `/v2/keys/${others[0]?.id}/revoke`, { project: "default" });
  isError(t, foreign, 404, "Not found");
  const revoked = await asBrowser(api, adam, "POST", `/v2/keys/${api_key.id}/revoke`, { project: "default" });
  t.equal(revoked.statusCode, 200, revoked.body);
  t.type(revoked.json().api_key.revoked_at, "string");
  isError(t, await api.withKey("/v2/create_session", { session: { id: "after" } }, key), 401, "Invalid API key");
  const trail = (await asBrowser(api, adam, "GET", "/v2/audit", { project: "default" })).json().records;
  t.same(
    trail.map((r: { action: string; actor_name: string }) => [r.action, r.actor_name]),
    [
      ["key.revoked", "adam@example.com"],
      ["key.created", "adam@example.com"],
    ],
  );
});

t.test("members: an admin gives and removes roles; a viewer may not; retention needs an editor", async (t) => {
  const api = await build(t);
  await person(api.store, "adam@example.com", { roles: [["default", "admin"]] });
  const vera = await person(api.store, "vera@example.com", { roles: [["default", "viewer"]] });
  await person(api.store, "ed@example.com", { roles: [["default", "editor"]] });
  const adam = await signIn(api, "adam@example.com");
  const veraBrowser = await signIn(api, "vera@example.com");
  const ed = await signIn(api, "ed@example.com");
  const put = (who: typeof adam, url: string, body: unknown) =>
    asBrowser(api, who, "PUT", url, { project: "default", body });
  isError(t, await put(veraBrowser, `/v2/members/${vera.id}`, { role: "admin" }), 403, "Forbidden");
  t.equal((await put(adam, `/v2/members/${vera.id}`, { role: "editor" })).statusCode, 200);
  const members = (await asBrowser(api, adam, "GET", "/v2/members", { project: "default" })).json().members;
  t.same(
    members.map((m: { email: string; role: string }) => [m.email, m.role]),
    [
      ["adam@example.com", "admin"],
      ["ed@example.com", "editor"],
      ["vera@example.com", "editor"],
    ],
  );
  // By the account's email (any case): the same person, the same row; an address without an
  // account is a 404 and adds nobody.
  t.equal((await put(adam, "/v2/members/VERA%40Example.com", { role: "viewer" })).statusCode, 200);
  const byEmail = (await asBrowser(api, adam, "GET", "/v2/members", { project: "default" })).json().members;
  t.same(
    byEmail.filter((m: { email: string }) => m.email === "vera@example.com").map((m: { role: string }) => m.role),
    ["viewer"],
    "the role set through the email",
  );
  isError(t, await put(adam, "/v2/members/nobody%40example.com", { role: "viewer" }), 404, "Not found");
  t.equal((await put(adam, `/v2/members/${vera.id}`, { role: "editor" })).statusCode, 200);
  const retention = await put(ed, "/v2/retention", { days: 30 });
  t.equal(retention.statusCode, 200, retention.body);
  t.equal(retention.json().project.retention_days, 30);
  const removed = await asBrowser(api, adam, "DELETE", `/v2/members/${vera.id}`, { project: "default" });
  t.equal(removed.statusCode, 200, removed.body);
  isError(t, await asBrowser(api, veraBrowser, "GET", "/v2/sessions", { project: "default" }), 404, "Not found");
  const trail = (await asBrowser(api, adam, "GET", "/v2/audit", { project: "default" })).json().records;
  t.same(
    trail.map((r: { action: string }) => r.action),
    ["member.removed", "retention.changed", "member.role_changed", "member.role_changed", "member.role_changed"],
  );
});

t.test("projects: the owner makes one and sees every project; a member sees theirs", async (t) => {
  const api = await build(t);
  await person(api.store, "olga@example.com", { owner: true });
  await person(api.store, "vera@example.com", { roles: [["default", "viewer"]] });
  const olga = await signIn(api, "olga@example.com");
  const vera = await signIn(api, "vera@example.com");
  const made = await asBrowser(api, olga, "POST", "/v2/projects", { body: { name: "team-b" } });
  t.equal(made.statusCode, 200, made.body);
  isError(t, await asBrowser(api, olga, "POST", "/v2/projects", { body: { name: "team-b" } }), 409, "Conflict");
  isError(t, await asBrowser(api, vera, "POST", "/v2/projects", { body: { name: "mine" } }), 403, "Forbidden");
  const all = (await asBrowser(api, olga, "GET", "/v2/projects")).json().projects;
  t.same(
    all.map((p: { name: string }) => p.name),
    ["default", "other", "team-b"],
  );
  t.same(
    (await asBrowser(api, vera, "GET", "/v2/projects"))
      .json()
      .projects.map((p: { name: string; role: string }) => [p.name, p.role]),
    [["default", "viewer"]],
  );
});
