/** The Store contract: people (accounts, one-time links, members, browser sessions, the audit trail; decision 035). */
import type { Test } from "tap";
import { Conflict } from "../../../db/errors.ts";
import type { AuditRecord, NewUser, UserToken } from "../../../domain/people.ts";
import type { Fixtures } from "./fixture.ts";
import { NASTY } from "./values.ts";

const T0 = "2026-11-28T00:00:00.000Z";
const LATER = "2026-11-28T01:00:00.000Z";
const EXPIRES = "2026-11-29T00:00:00.000Z";

const person = (email: string, fields: Partial<NewUser> = {}): NewUser => ({
  email,
  name: `Name of ${email}`,
  password_hash: "$argon2id$hash",
  owner: false,
  created_at: T0,
  ...fields,
});

const token = (hash: string, fields: Partial<UserToken>): UserToken => ({
  token_hash: hash,
  kind: "invite",
  user_id: null,
  email: null,
  project_id: null,
  role: null,
  created_by: "cli",
  created_at: T0,
  expires_at: EXPIRES,
  used_at: null,
  ...fields,
});

export function peopleContract(t: Test, { fresh }: Fixtures) {
  t.test("people: created, found by id and email, listed, unique by email, disabled and enabled", async (t) => {
    const { store } = await fresh(t);
    const ann = await store.createUser(person("ann@example.com", { owner: true, name: NASTY }));
    t.strictSame(ann, {
      id: ann.id,
      email: "ann@example.com",
      name: NASTY,
      owner: true,
      created_at: T0,
      disabled_at: null,
    });
    const bob = await store.createUser(person("bob@example.com", { password_hash: null }));
    t.strictSame(await store.userById(bob.id), bob);
    t.strictSame(await store.userByEmail("ann@example.com"), { ...ann, password_hash: "$argon2id$hash" });
    t.equal((await store.userByEmail("bob@example.com"))?.password_hash, null, "no password");
    t.equal(await store.userByEmail("nobody@example.com"), undefined);
    t.equal(await store.userById("nope"), undefined);
    t.strictSame(await store.listUsers(), [ann, bob], "oldest first");
    await t.rejects(store.createUser(person("ann@example.com")), Conflict, "an email is one person's");

    const disabled = await store.setUserDisabled(bob.id, LATER);
    t.equal(disabled?.disabled_at, LATER);
    t.equal((await store.setUserDisabled(bob.id, null))?.disabled_at, null, "enabled again");
    t.equal(await store.setUserDisabled("nope", LATER), undefined);
  });

  t.test("projects: made without a key, unique by name", async (t) => {
    const { store } = await fresh(t);
    const made = await store.createProject(NASTY, T0);
    t.strictSame(made, { id: made.id, name: NASTY, created_at: T0, retention_days: null });
    t.ok((await store.listProjects()).some((p) => p.id === made.id));
    await t.rejects(store.createProject("mine", T0), Conflict, "a name is one project's");
  });

  t.test("members: given, changed, removed, listed by project and by person", async (t) => {
    const { store, p, other } = await fresh(t);
    const ann = await store.createUser(person("ann@example.com"));
    const bob = await store.createUser(person("bob@example.com"), { projectId: p, role: "viewer" });
    t.equal(await store.setMember(p, ann.id, "admin", T0), undefined, "no role before");
    t.equal(await store.setMember(other, ann.id, "viewer", T0), undefined);
    t.equal(await store.setMember(other, ann.id, "editor", LATER), "viewer", "the role before the change");
    const mine = await store.listMembers(p);
    t.strictSame(
      mine.map((m) => [m.project_name, m.email, m.role]),
      [
        ["mine", "ann@example.com", "admin"],
        ["mine", "bob@example.com", "viewer"],
      ],
    );
    t.strictSame(mine[0], {
      project_id: p,
      project_name: "mine",
      user_id: ann.id,
      email: "ann@example.com",
      name: "Name of ann@example.com",
      role: "admin",
      created_at: T0,
    });
    t.strictSame(
      (await store.membershipsOf(ann.id)).map((m) => [m.project_name, m.role]),
      [
        ["mine", "admin"],
        ["theirs", "editor"],
      ],
    );
    t.equal((await store.listMembers()).length, 3, "every project's");
    t.equal(await store.setMember(p, bob.id, null, LATER), "viewer", "removed");
    t.equal(await store.setMember(p, bob.id, null, LATER), undefined, "removing twice is no error");
    t.strictSame(await store.membershipsOf(bob.id), []);
  });

  t.test("one-time links: an owner link signs up once, an invitation only its address, with its role", async (t) => {
    const { store, p } = await fresh(t);
    await store.createUserToken(token("owner-hash", { kind: "owner" }));
    const owner = await store.signUp("owner-hash", "owner", person("own@example.com"), T0);
    t.equal(owner !== "invalid" && owner.owner, true, "the owner link makes the owner");
    t.equal(await store.signUp("owner-hash", "owner", person("again@example.com"), T0), "invalid", "used once");
    t.equal(await store.userByEmail("again@example.com"), undefined, "and nobody was made");

    await store.createUserToken(token("invite-hash", { email: "vic@example.com", project_id: p, role: "viewer" }));
    t.equal(await store.signUp("invite-hash", "owner", person("vic@example.com"), T0), "invalid", "not an owner link");
    t.equal(
      await store.signUp("invite-hash", "invite", person("eve@example.com"), T0),
      "invalid",
      "another address is refused",
    );
    const vic = await store.signUp("invite-hash", "invite", person("vic@example.com"), T0);
    t.ok(vic !== "invalid", "the invited address signs up (the refusals above did not use the link)");
    if (vic === "invalid") return;
    t.equal(vic.owner, false, "an invitation never makes an owner");
    t.strictSame(
      (await store.membershipsOf(vic.id)).map((m) => [m.project_id, m.role]),
      [[p, "viewer"]],
    );

    await store.createUserToken(token("old-hash", { email: "old@example.com", expires_at: T0 }));
    t.equal(await store.signUp("old-hash", "invite", person("old@example.com"), T0), "invalid", "expired");
    await store.createUserToken(token("dup-hash", { email: "vic@example.com" }));
    await t.rejects(store.signUp("dup-hash", "invite", person("vic@example.com"), T0), Conflict);
  });

  t.test("reset links: set the password once, end the person's sessions; not for a disabled person", async (t) => {
    const { store } = await fresh(t);
    const ann = await store.createUser(person("ann@example.com"));
    await store.createBrowserSession({
      id_hash: "s1",
      user_id: ann.id,
      created_at: T0,
      expires_at: EXPIRES,
      address: "::1",
    });
    await store.createUserToken(token("reset-hash", { kind: "reset", user_id: ann.id }));
    t.equal(await store.resetPassword("invite-hash", "x", T0), undefined, "unknown");
    t.strictSame(await store.resetPassword("reset-hash", "$argon2id$new", T0), ann);
    t.equal((await store.userByEmail("ann@example.com"))?.password_hash, "$argon2id$new");
    t.equal(await store.browserSession("s1", T0), undefined, "the sessions are ended");
    t.equal(await store.resetPassword("reset-hash", "$argon2id$again", T0), undefined, "used once");

    await store.createUserToken(token("reset-2", { kind: "reset", user_id: ann.id }));
    await store.setUserDisabled(ann.id, T0);
    t.equal(await store.resetPassword("reset-2", "$argon2id$x", T0), undefined, "a disabled person");
    await store.setUserDisabled(ann.id, null);
    t.ok(await store.resetPassword("reset-2", "$argon2id$y", T0), "the refusal left the link usable");
  });

  t.test("browser sessions: found while live, ended by logout, logout everywhere and disabling", async (t) => {
    const { store } = await fresh(t);
    const ann = await store.createUser(person("ann@example.com"));
    const bob = await store.createUser(person("bob@example.com"));
    const s = (id_hash: string, user_id: string) => ({
      id_hash,
      user_id,
      created_at: T0,
      expires_at: EXPIRES,
      address: NASTY,
    });
    await store.createBrowserSession(s("a1", ann.id));
    await store.createBrowserSession(s("a2", ann.id));
    await store.createBrowserSession(s("b1", bob.id));
    t.strictSame(await store.browserSession("a1", LATER), { session: s("a1", ann.id), user: ann });
    t.equal(await store.browserSession("a1", EXPIRES), undefined, "expired");
    t.equal(await store.browserSession("nope", LATER), undefined);
    await t.rejects(store.createBrowserSession(s("a1", bob.id)), Conflict, "an id is one session's");
    await store.deleteBrowserSession("a1");
    t.equal(await store.browserSession("a1", LATER), undefined, "logged out");
    t.ok(await store.browserSession("a2", LATER), "the other session stays");
    await store.createBrowserSession(s("a3", ann.id));
    t.equal(await store.deleteUserSessions(ann.id), 2, "logout everywhere");
    t.equal(await store.browserSession("a2", LATER), undefined);
    t.ok(await store.browserSession("b1", LATER), "another person's stays");
    await store.setUserDisabled(bob.id, LATER);
    t.equal(await store.browserSession("b1", LATER), undefined, "disabling ends them");
    await store.setUserDisabled(bob.id, null);
    t.equal(await store.browserSession("b1", LATER), undefined, "and enabling does not bring them back");
  });

  t.test("audit trail: appended with a seq, newest first, by project, paged", async (t) => {
    const { store, p, other } = await fresh(t);
    const at = (n: number) => `2026-11-28T00:00:0${n}.000Z`;
    const made: AuditRecord[] = [];
    for (const [n, project] of [p, other, null, p].entries()) {
      made.push(
        await store.appendAudit({
          at: at(n),
          actor: "cli",
          actor_name: "agentmon CLI",
          address: "local",
          action: "key.created",
          project_id: project,
          target: n === 0 ? NASTY : null,
          details: n === 0 ? { scopes: ["read"], nested: { a: null } } : {},
        }),
      );
    }
    t.ok(
      made.every((r, i) => i === 0 || r.seq > (made[i - 1]?.seq ?? 0)),
      "seq grows",
    );
    t.strictSame(made[0], {
      seq: made[0]?.seq,
      at: at(0),
      actor: "cli",
      actor_name: "agentmon CLI",
      address: "local",
      action: "key.created",
      project_id: p,
      target: NASTY,
      details: { scopes: ["read"], nested: { a: null } },
    });
    t.strictSame(await store.listAudit({ limit: 10 }), [...made].reverse(), "all, newest first");
    t.strictSame(await store.listAudit({ projectId: p, limit: 10 }), [made[3], made[0]], "one project's");
    t.strictSame(
      await store.listAudit({ projectId: p, withInstance: true, limit: 10 }),
      [made[3], made[2], made[0]],
      "with the instance's acts",
    );
    const first = await store.listAudit({ limit: 2 });
    t.strictSame(first, [made[3], made[2]]);
    t.strictSame(await store.listAudit({ limit: 2, beforeSeq: first[1]?.seq }), [made[1], made[0]], "the next page");
    // Oldest first, as the export reads it: from seq 0, then after the last seq of a page.
    const oldest = await store.listAudit({ afterSeq: 0, limit: 3 });
    t.strictSame(oldest, [made[0], made[1], made[2]], "oldest first");
    t.strictSame(
      await store.listAudit({ afterSeq: oldest[2]?.seq, limit: 3 }),
      [made[3]],
      "the next page, oldest first",
    );
    t.strictSame(await store.listAudit({ afterSeq: made[3]?.seq, limit: 3 }), [], "after the last: nothing");
    t.strictSame(
      await store.listAudit({ projectId: p, withInstance: true, afterSeq: 0, limit: 10 }),
      [made[0], made[2], made[3]],
      "one project's and the instance's, oldest first",
    );
    t.strictSame(await store.listAudit({ projectId: p, afterSeq: made[0]?.seq, limit: 10 }), [made[3]]);
  });
}
