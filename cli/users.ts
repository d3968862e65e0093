/**
 * `agentmon users create|list|invite|reset-link|disable|enable` and `agentmon members
 * list|set|remove` (issue 26, docs/decisions/035-people.md): people and their roles, from the
 * server's machine, on either engine. No password is ever typed on a command line (it would stay
 * in the shell's history): an account made here gets a one-time link that sets it.
 */
import type { Store } from "../db/store.ts";
import { ApiError } from "../domain/errors.ts";
import { isRole, normalEmail, ROLES, type Role, type UserRecord } from "../domain/people.ts";
import { auditedMail, type LinkMail, type MailResult, noMailer, smtpMailer } from "../services/mail.ts";
import { audit, CLI_ACTOR, createUser, makeLink } from "../services/people.ts";
import { type Config, ConfigError, type Output, USAGE } from "./config.ts";
import { openCommandStore } from "./storage.ts";

export interface UserFlags {
  email?: string | undefined;
  name?: string | undefined;
  project?: string | undefined;
  role?: string | undefined;
  owner?: boolean | undefined;
}

/** Where the links point: AGENTMON_PUBLIC_URL, else the address serve listens on. */
const baseOf = (config: Config) => config.publicUrl ?? `http://${config.host}:${config.port}`;

const describeUser = (u: UserRecord) =>
  `${u.email}  ${u.name}${u.owner ? "  OWNER" : ""}  created ${u.created_at}${u.disabled_at ? `  DISABLED ${u.disabled_at}` : ""}`;

function roleFlag(value: string | undefined): Role {
  if (!isRole(value)) throw new ConfigError(`--role must be one of ${ROLES.join(", ")}`);
  return value;
}

async function projectNamed(store: Store, name: string | undefined) {
  if (name === undefined || name.trim() === "") throw new ConfigError("--project names the project");
  const project = (await store.listProjects()).find((p) => p.name === name);
  if (project === undefined) throw new ConfigError(`no project is named "${name}" (agentmon projects list)`);
  return project;
}

async function userNamed(store: Store, email: string | undefined) {
  if (email === undefined || email.trim() === "") throw new ConfigError("give the person's email");
  const user = await store.userByEmail(normalEmail(email));
  if (user === undefined) throw new ConfigError(`no person has the email "${email}" (agentmon users list)`);
  return user;
}

/** A refusal of the services (a taken email, a bad address) as one line, as any other mistake. */
function asConfigError(error: unknown) {
  if (!(error instanceof ApiError)) return error;
  const detail = error.body.details?.map((d) => `${d.path.replace(/^\//, "--")} ${d.message}`).join("; ");
  return new ConfigError(detail ? `${detail}` : error.body.message);
}

/** Who the mails of the command line say made the link. */
const CLI_SENDER = "An administrator of this agentmon";

/** The mailer of AGENTMON_SMTP_URL, or none. */
const mailerOf = (config: Config) =>
  config.smtp === undefined || config.smtpFrom === undefined
    ? noMailer
    : smtpMailer(config.smtp, config.smtpFrom, () => baseOf(config));

/** One line on stderr about the mail, when a mail server is set: the link above works either way. */
function tellMail(io: Output, to: string, result: MailResult) {
  if (result.mailed) io.err(`Mailed the link to ${to}.`);
  else if (result.reason !== null) io.err(`The link was not mailed to ${to} (${result.reason}); pass it on yourself.`);
}

export async function users(sub: string | undefined, args: string[], flags: UserFlags, config: Config, io: Output) {
  const subs = ["create", "list", "invite", "reset-link", "disable", "enable"];
  if (!subs.includes(sub ?? "")) {
    io.err(USAGE);
    return 2;
  }
  const store = await openCommandStore(config);
  const context = { store, now: Date.now, publicUrl: () => baseOf(config) };
  const mailer = mailerOf(config);
  const mail = async (message: LinkMail) => {
    const result = await mailer.sendLink(message);
    tellMail(io, message.to, result);
    return auditedMail(result);
  };
  try {
    if (sub === "list") {
      const all = await store.listUsers();
      if (all.length === 0) io.out("No people yet: `agentmon users create --email E --name N` makes one.");
      for (const u of all) io.out(describeUser(u));
      return 0;
    }
    if (sub === "create") {
      const email = flags.email ?? "";
      const member = flags.project === undefined ? undefined : await projectNamed(store, flags.project);
      const role = member ? roleFlag(flags.role) : undefined;
      const user = await createUser(context, CLI_ACTOR, {
        email,
        name: flags.name ?? email.split("@")[0] ?? "",
        password: null,
        owner: flags.owner === true,
      });
      if (member && role) {
        await store.setMember(member.id, user.id, role, new Date().toISOString());
        await audit(context, CLI_ACTOR, "member.added", {
          projectId: member.id,
          target: user.email,
          details: { role },
        });
      }
      const { link, expires_at } = await makeLink(context, "reset", CLI_ACTOR, { userId: user.id });
      io.out(link);
      io.err(
        `Created ${user.owner ? "the owner account" : "an account"} for ${user.email}${member ? ` (${role} of "${member.name}")` : ""}. ` +
          `The link above sets its password, once, until ${expires_at}; it is not shown again.`,
      );
      await mail({ kind: "created", to: user.email, link, expiresAt: expires_at, by: CLI_SENDER });
      return 0;
    }
    if (sub === "invite") {
      const project = await projectNamed(store, flags.project);
      const role = roleFlag(flags.role);
      const email = normalEmail(flags.email ?? "");
      if (email === "") throw new ConfigError("--email names the person invited");
      const { link, expires_at } = await makeLink(context, "invite", CLI_ACTOR, { email, projectId: project.id, role });
      io.out(link);
      io.err(`Invited ${email} as ${role} of "${project.name}": the link works once, until ${expires_at}.`);
      const mailed = await mail({
        kind: "invite",
        to: email,
        link,
        expiresAt: expires_at,
        project: project.name,
        role,
        by: CLI_SENDER,
      });
      await audit(context, CLI_ACTOR, "user.invited", {
        projectId: project.id,
        target: email,
        details: { role, ...mailed },
      });
      return 0;
    }
    const user = await userNamed(store, args[0] ?? flags.email);
    if (sub === "reset-link") {
      const { link, expires_at } = await makeLink(context, "reset", CLI_ACTOR, { userId: user.id });
      io.out(link);
      io.err(`The link sets the password of ${user.email}, once, until ${expires_at}.`);
      const mailed = await mail({ kind: "reset", to: user.email, link, expiresAt: expires_at, by: CLI_SENDER });
      await audit(context, CLI_ACTOR, "user.password_reset_link", { target: user.email, details: mailed });
      return 0;
    }
    const disabled = sub === "disable";
    await store.setUserDisabled(user.id, disabled ? new Date().toISOString() : null);
    await audit(context, CLI_ACTOR, disabled ? "user.disabled" : "user.enabled", { target: user.email });
    io.out(
      disabled
        ? `Disabled ${user.email}; their browser sessions are ended.`
        : `Enabled ${user.email}; they may sign in.`,
    );
    return 0;
  } catch (error) {
    throw asConfigError(error);
  } finally {
    await store.close();
  }
}

export async function members(sub: string | undefined, args: string[], flags: UserFlags, config: Config, io: Output) {
  if (sub !== "list" && sub !== "set" && sub !== "remove") {
    io.err(USAGE);
    return 2;
  }
  const store = await openCommandStore(config);
  const context = { store, now: Date.now, publicUrl: () => baseOf(config) };
  try {
    if (sub === "list") {
      const project = flags.project === undefined ? undefined : await projectNamed(store, flags.project);
      const all = await store.listMembers(project?.id);
      if (all.length === 0) io.out("No members yet: `agentmon members set PROJECT EMAIL ROLE` adds one.");
      for (const m of all) io.out(`${m.project_name}  ${m.email}  ${m.role}`);
      return 0;
    }
    const project = await projectNamed(store, args[0]);
    const user = await userNamed(store, args[1]);
    const role = sub === "remove" ? null : roleFlag(args[2]);
    const before = await store.setMember(project.id, user.id, role, new Date().toISOString());
    const action = role === null ? "member.removed" : before === undefined ? "member.added" : "member.role_changed";
    if (role !== null || before !== undefined) {
      await audit(context, CLI_ACTOR, action, { projectId: project.id, target: user.email, details: { role, before } });
    }
    io.out(
      role === null
        ? `${user.email} is no member of "${project.name}" now.`
        : `${user.email} is ${role} of "${project.name}"${before ? ` (was ${before})` : ""}.`,
    );
    return 0;
  } finally {
    await store.close();
  }
}
