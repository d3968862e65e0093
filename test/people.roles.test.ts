/**
 * Roles (issue 26, decision 035): every operation of openapi.yaml × every role × a project the
 * person is in and one they are not, from the one declaration each operation makes
 * (`x-agentmon-role`). A role that allows the operation gets past the check (whatever the
 * operation then answers); one that does not gets 403; another project is answered as not found,
 * as it is for an API key; an operation that takes no browser session refuses the cookie alone.
 */
import t from "tap";
import { mayAct, ROLES, type Role, type RoleNeed } from "../domain/people.ts";
import { loadSpec } from "../lib/spec.ts";
import { build } from "./helper.ts";
import { asBrowser, person, signIn } from "./people.helpers.ts";

interface Operation {
  operationId: string;
  "x-agentmon-role": RoleNeed;
  security?: Record<string, string[]>[];
}
const { spec } = loadSpec<{ paths: Record<string, Record<string, Operation>> }>();
const operations = Object.entries(spec.paths).flatMap(([path, item]) =>
  Object.entries(item).map(([method, op]) => ({ path, method: method.toUpperCase(), op })),
);

/** Who signs in: no role in the project, each role, and the instance owner (no membership). */
const WHO: (Role | "member of no project" | "owner")[] = ["member of no project", ...ROLES, "owner"];

t.test("every operation names its role, and the role test covers each one", async (t) => {
  t.ok(operations.length > 40);
  for (const { op } of operations) t.ok(op["x-agentmon-role"], `${op.operationId} has x-agentmon-role`);
});

t.test("every operation × role × project", async (t) => {
  const api = await build(t);
  await api.session("s1"); // in project "default"
  const target = await person(api.store, "target@example.com", { roles: [["default", "viewer"]] });
  const emails = new Map<string, string>();
  for (const who of WHO) {
    const email = `${who.replaceAll(" ", "-")}@example.com`;
    emails.set(who, email);
    await person(api.store, email, {
      owner: who === "owner",
      roles: who === "owner" || who === "member of no project" ? [] : [["default", who]],
    });
  }
  const bodies: Record<string, unknown> = {
    createInvitation: { email: "new@example.com", role: "viewer" },
    setUserDisabled: { disabled: false },
    deleteSessions: { tag: ["nothing-has-this-tag"] },
    createProject: { name: `made-${Math.random()}` },
    createKey: { scopes: ["read"] },
    setMember: { role: "viewer" },
    setProjectRetention: { days: null },
    createScores: { scores: [{ name: "x", value: 1, session_id: "s1" }] },
    updateScore: { comment: "changed" },
    putScoreConfig: { data_type: "boolean" },
  };
  for (const { path, method, op } of operations) {
    const needs = op["x-agentmon-role"];
    const takesCookie = (op.security ?? []).some((s) => "browserSession" in s);
    const url = path
      .replace("{session_id}", "s1")
      .replace("{user_id}", target.id)
      .replace("{path}", "app.css")
      .replace("{key_id}", "no-such-key")
      .replace("{score_id}", "no-such-score")
      .replace("{name}", "a-config");
    if (!takesCookie) {
      t.equal(needs, "none", `${op.operationId}: no browser session, so no role`);
      if ((op.security ?? []).length === 0) continue; // public: no credential at all
      const browser = await signIn(api, emails.get("owner") as string);
      const res = await asBrowser(api, browser, method as "GET", url, { project: "default", body: {} });
      t.ok(
        res.statusCode === 401 || (op.operationId === "getMetrics" && res.statusCode === 404),
        `${op.operationId}: the cookie alone is no credential (${res.statusCode})`,
      );
      continue;
    }
    for (const who of WHO) {
      for (const project of ["default", "other"]) {
        // A fresh session each time: logOut and logOutEverywhere end theirs.
        const browser = await signIn(api, emails.get(who) as string);
        const res = await asBrowser(api, browser, method as "GET", url, {
          project,
          ...(method === "GET" ? {} : { body: bodies[op.operationId] ?? {} }),
        });
        const owner = who === "owner";
        const role = who === "owner" || who === "member of no project" || project !== "default" ? undefined : who;
        const label = `${method} ${path} (${needs}) as ${who} in ${project}: ${res.statusCode} ${res.body.slice(0, 120)}`;
        const projectRole = (ROLES as readonly string[]).includes(needs);
        if (projectRole && role === undefined && !owner) {
          t.equal(res.statusCode, 404, label);
          t.equal(res.json().message, `No project ${project}`, "answered as not found");
        } else if (mayAct(needs, role, owner)) {
          t.notOk([401, 403].includes(res.statusCode) || /No project/.test(res.body), label);
        } else {
          t.equal(res.statusCode, 403, label);
        }
      }
    }
  }
});

t.test("a person's request names its project; an API key with a cookie is still the key's", async (t) => {
  const api = await build(t);
  await api.session("s1");
  await person(api.store, "ann@example.com", { roles: [["default", "viewer"]] });
  const ann = await signIn(api, "ann@example.com");
  const none = await asBrowser(api, ann, "GET", "/v2/sessions");
  t.equal(none.statusCode, 400, none.body);
  const listed = await asBrowser(api, ann, "GET", "/v2/sessions", { project: "default" });
  t.equal(listed.statusCode, 200, listed.body);
  t.same(
    listed.json().sessions.map((s: { session: { id: string } }) => s.session.id),
    ["s1"],
  );
  const keyed = await api.inject({
    method: "GET",
    url: "/v2/sessions",
    headers: { cookie: ann.cookie, "x-agentmon-api-key": "22222222-2222-4222-8222-222222222222" },
  });
  t.equal(keyed.statusCode, 200);
  t.same(keyed.json().sessions, [], "the other project's key sees its own project");
  const viewerDelete = await asBrowser(api, ann, "DELETE", "/v2/sessions/s1", { project: "default" });
  t.equal(viewerDelete.statusCode, 403, viewerDelete.body);
  t.equal(viewerDelete.json().message, 'Your role in project "default" is viewer; this operation needs editor');
});
