/**
 * The audit trail (issue 26, decision 035): administrative acts are recorded with who, when,
 * from where and what; GET /v2/audit answers a project's, paged; nothing changes or removes a
 * record.
 */
import { join } from "node:path";
import Database from "better-sqlite3";
import t from "tap";
import { API_KEY, build, isError, OTHER_PROJECT_KEY, tempDir } from "./helper.ts";
import { asBrowser, person, signIn } from "./people.helpers.ts";

const audit = (api: Awaited<ReturnType<typeof build>>, query = "", key = API_KEY) =>
  api.inject({ method: "GET", url: `/v2/audit${query}`, headers: { "x-agentmon-api-key": key } });

t.test("a bulk delete is audited with its key and address; GET /v2/audit pages a project's trail", async (t) => {
  const api = await build(t);
  for (const id of ["a", "b", "c"]) await api.session(id, { tags: ["old"] });
  await api.session("keep");
  const dry = await api.post(
    "/v2/delete_sessions",
    { tag: ["old"], dry_run: true },
    {
      "x-agentmon-api-key": API_KEY,
    },
  );
  t.equal(dry.statusCode, 200, dry.body);
  t.same((await audit(api)).json().records, [], "a dry run is no act");
  for (const tag of ["old", "nothing-has-this"]) {
    const res = await api.post("/v2/delete_sessions", { tag: [tag] }, { "x-agentmon-api-key": API_KEY }, "10.1.2.3");
    t.equal(res.statusCode, 200, res.body);
  }
  await api.store.appendAudit({
    at: new Date().toISOString(),
    actor: "cli",
    actor_name: "agentmon CLI",
    address: "local",
    action: "retention.changed",
    project_id: (await api.store.listProjects()).find((p) => p.name === "default")?.id ?? null,
    target: null,
    details: { retention_days: 30 },
  });
  const all = (await audit(api)).json();
  t.equal(all.next_cursor, null);
  t.same(
    all.records.map((r: { action: string }) => r.action),
    ["retention.changed", "sessions.deleted"],
    "newest first; a delete that removed nothing is no act",
  );
  const [, deleted] = all.records;
  t.match(deleted, {
    actor: `key:${API_KEY.slice(0, 8)}`,
    actor_name: `API key ${API_KEY.slice(0, 8)}…`,
    address: "10.1.2.3",
    project: "default",
    target: null,
    details: { sessions: 3, filter: { tag: ["old"] } },
  });
  t.same((await audit(api, "", OTHER_PROJECT_KEY)).json().records, [], "another project's key sees none of it");

  const first = (await audit(api, "?limit=1")).json();
  t.equal(first.records.length, 1);
  t.type(first.next_cursor, "string");
  const second = (await audit(api, `?limit=1&cursor=${first.next_cursor}`)).json();
  t.same(second.records, [deleted], "the next page");
  t.equal(second.next_cursor, null);
  isError(t, await audit(api, `?cursor=${first.next_cursor}x`), 400, "Invalid request");
  isError(t, await audit(api, "?limit=0"), 400, "Invalid request");
});

t.test(
  "people: an admin reads the project's trail, a viewer may not; the owner also sees the instance's acts",
  async (t) => {
    const api = await build(t);
    await person(api.store, "adam@example.com", { roles: [["default", "admin"]] });
    await person(api.store, "vera@example.com", { roles: [["default", "viewer"]] });
    await person(api.store, "olga@example.com", { owner: true });
    const adam = await signIn(api, "adam@example.com");
    const invited = await asBrowser(api, adam, "POST", "/v2/people/invitations", {
      project: "default",
      body: { email: "New@Example.com", role: "viewer" },
    });
    t.equal(invited.statusCode, 200, invited.body);
    await api.store.setUserDisabled((await api.store.userByEmail("vera@example.com"))?.id ?? "", null);
    const olga = await signIn(api, "olga@example.com");
    const disabled = await asBrowser(
      api,
      olga,
      "POST",
      `/v2/people/${(await api.store.userByEmail("vera@example.com"))?.id}/disabled`,
      {
        body: { disabled: true },
      },
    );
    t.equal(disabled.statusCode, 200, disabled.body);

    const seen = await asBrowser(api, adam, "GET", "/v2/audit", { project: "default" });
    t.same(
      seen
        .json()
        .records.map((r: { action: string; target: string; actor_name: string }) => [r.action, r.target, r.actor_name]),
      [["user.invited", "new@example.com", "adam@example.com"]],
      "the project's acts only",
    );
    const owner = await asBrowser(api, olga, "GET", "/v2/audit", { project: "default" });
    t.same(
      owner.json().records.map((r: { action: string; project: string | null }) => [r.action, r.project]),
      [
        ["user.disabled", null],
        ["user.invited", "default"],
      ],
    );
    const vera = await api.post("/v2/auth/login", { email: "vera@example.com", password: "x".repeat(12) });
    t.equal(vera.statusCode, 401, "disabled");
  },
);

t.test("the trail is append-only in the database itself", async (t) => {
  const path = join(tempDir(t), "audit.db");
  const api = await build(t, { dbPath: path });
  await api.store.appendAudit({
    at: "2026-11-28T00:00:00.000Z",
    actor: "cli",
    actor_name: "agentmon CLI",
    address: "local",
    action: "key.created",
    project_id: null,
    target: null,
    details: {},
  });
  const db = new Database(path);
  t.teardown(() => db.close());
  t.throws(() => db.prepare("UPDATE audit SET actor = 'someone else'").run(), /append-only/);
  t.throws(() => db.prepare("DELETE FROM audit").run(), /append-only/);
  t.equal((db.prepare("SELECT count(*) AS n FROM audit").get() as { n: number }).n, 1);
});
