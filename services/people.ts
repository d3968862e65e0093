/**
 * People (issue 26, docs/decisions/035-people.md): accounts with argon2id password hashes,
 * one-time links (the owner's first sign-up, invitations, password resets), sign-in with
 * throttling per account and per address, browser sessions and the audit trail. The HTTP side
 * (cookies, CSRF) is http/people.ts; this module never sees a request.
 */
import { Conflict } from "../db/errors.ts";
import type { Store } from "../db/store.ts";
import { decodeCursor, encodeCursor } from "../domain/cursor.ts";
import { ApiError, invalidParameters, invalidRequest, notFound, tooManyRequests } from "../domain/errors.ts";
import {
  type AuditAction,
  type AuditRecord,
  hashToken,
  isEmailShape,
  newToken,
  normalEmail,
  type Role,
  type TokenKind,
  type UserRecord,
} from "../domain/people.ts";

/** A password's length, in characters: long enough to resist guessing, short enough to hash cheaply. */
export const PASSWORD_MIN = 10;
export const PASSWORD_MAX = 1024;

/**
 * argon2id with the library's defaults (19 MiB, 2 passes, 1 lane: OWASP's first recommended
 * setting), on libuv's threads so that the event loop is not held while it hashes.
 */
export const hashPassword = async (password: string) => (await argon2()).hash(password, { algorithm: 2 });

/** The argon2 addon, loaded by the first password it hashes or checks, not at start (decision 034). */
const argon2 = () => import("@node-rs/argon2");

/** A hash of nothing anyone knows, verified for an unknown account, so that its answer takes as long. */
let decoy: Promise<string> | undefined;

/** How long a one-time link lives: an invitation or an owner link 7 days, a reset 1 day. */
const LINK_LIFETIME_MS: Record<TokenKind, number> = {
  owner: 7 * 86_400_000,
  invite: 7 * 86_400_000,
  reset: 86_400_000,
};

/** Who acts, for the audit trail: a person, an API key or the command line, and from where. */
export interface Actor {
  id: string;
  name: string;
  address: string;
}
export const CLI_ACTOR: Actor = { id: "cli", name: "agentmon CLI", address: "local" };
export const personActor = (user: UserRecord, address: string): Actor => ({ id: user.id, name: user.email, address });

/** The counters of sign-in throttling (http/ratelimit.ts RequestLimits: in memory, PostgreSQL or Redis). */
export interface LoginLimits {
  failureWait(key: string): Promise<number>;
  recordFailure(key: string): Promise<void>;
}

export interface PeopleContext {
  store: Store;
  now(): number;
  /** Base of the links, without a trailing slash. */
  publicUrl(): string;
}

const iso = (ms: number) => new Date(ms).toISOString();

export async function audit(
  context: PeopleContext,
  actor: Actor,
  action: AuditAction,
  what: { projectId?: string | null; target?: string | null; details?: Record<string, unknown> } = {},
) {
  return context.store.appendAudit({
    at: iso(context.now()),
    actor: actor.id,
    actor_name: actor.name,
    address: actor.address,
    action,
    project_id: what.projectId ?? null,
    target: what.target ?? null,
    details: what.details ?? {},
  });
}

/** A link's token says its kind (`invite_…`), so that the page and the API know what it is for. */
const kindOf = (token: string): TokenKind | undefined => {
  const kind = token.slice(0, token.indexOf("_"));
  return kind === "owner" || kind === "invite" || kind === "reset" ? kind : undefined;
};

/** The page a link opens: the token goes in the fragment, which browsers never send to a server or a Referer. */
export const linkOf = (context: PeopleContext, token: string) => `${context.publicUrl()}/ui/signup.html#${token}`;

/**
 * Makes a one-time link of that kind; answers the link (shown once: only its hash is kept) and
 * when it expires.
 */
export async function makeLink(
  context: PeopleContext,
  kind: TokenKind,
  by: Actor,
  fields: { userId?: string; email?: string; projectId?: string; role?: Role } = {},
) {
  const token = `${kind}_${newToken()}`;
  const now = context.now();
  const expires_at = iso(now + LINK_LIFETIME_MS[kind]);
  await context.store.createUserToken({
    token_hash: hashToken(token),
    kind,
    user_id: fields.userId ?? null,
    email: fields.email ?? null,
    project_id: fields.projectId ?? null,
    role: fields.role ?? null,
    created_by: by.id,
    created_at: iso(now),
    expires_at,
    used_at: null,
  });
  return { token, link: linkOf(context, token), expires_at };
}

/** The owner's sign-up link of a first start: only while nobody has an account. */
export async function ownerLinkIfNoOne(context: PeopleContext) {
  if ((await context.store.listUsers()).length > 0) return undefined;
  return makeLink(context, "owner", CLI_ACTOR);
}

/** The fields of a new account, checked: a 400 names each problem. */
export function checkAccount(email: string, name: string, password: string) {
  const details = [];
  const address = normalEmail(email);
  if (!isEmailShape(address)) details.push({ path: "/email", message: "must be an email address" });
  if (name.trim() === "" || name.length > 200) details.push({ path: "/name", message: "must be 1 to 200 characters" });
  details.push(...checkPassword(password));
  if (details.length > 0) throw invalidRequest(details);
  return { email: address, name: name.trim() };
}

function checkPassword(password: string) {
  return password.length < PASSWORD_MIN || password.length > PASSWORD_MAX
    ? [{ path: "/password", message: `must be ${PASSWORD_MIN} to ${PASSWORD_MAX} characters` }]
    : [];
}

const invalidLink = () =>
  new ApiError(400, {
    error: "Invalid link",
    message: "This link is unknown, used or expired; ask an admin for a new one",
  });
export const emailTaken = () =>
  new ApiError(409, { error: "Email taken", message: "A person with this email already has an account" });

/** `agentmon users create` and the API's: an account made by someone entitled to. */
export async function createUser(
  context: PeopleContext,
  by: Actor,
  fields: { email: string; name: string; password: string | null; owner: boolean },
) {
  const checked =
    fields.password === null
      ? { email: normalEmail(fields.email), name: fields.name.trim() }
      : checkAccount(fields.email, fields.name, fields.password);
  if (!isEmailShape(checked.email)) throw invalidRequest([{ path: "/email", message: "must be an email address" }]);
  try {
    const user = await context.store.createUser({
      ...checked,
      password_hash: fields.password === null ? null : await hashPassword(fields.password),
      owner: fields.owner,
      created_at: iso(context.now()),
    });
    await audit(context, by, "user.created", { target: user.email, details: { owner: user.owner } });
    return user;
  } catch (error) {
    if (error instanceof Conflict) throw emailTaken();
    throw error;
  }
}

/** Signs up through an owner or invitation link; the link is used once. */
export async function signUp(
  context: PeopleContext,
  given: { token: string; email: string; name: string; password: string },
  address: string,
) {
  const kind = kindOf(given.token);
  if (kind !== "owner" && kind !== "invite") throw invalidLink();
  const checked = checkAccount(given.email, given.name, given.password);
  const now = iso(context.now());
  let made: UserRecord | "invalid";
  try {
    made = await context.store.signUp(
      hashToken(given.token),
      kind,
      { ...checked, password_hash: await hashPassword(given.password), owner: false, created_at: now },
      now,
    );
  } catch (error) {
    if (error instanceof Conflict) throw emailTaken();
    throw error;
  }
  if (made === "invalid") throw invalidLink();
  await audit(context, personActor(made, address), "user.created", {
    target: made.email,
    details: { owner: made.owner, through: kind },
  });
  return made;
}

/** Sets a password through a reset link; every browser session of the person ends. */
export async function resetPassword(context: PeopleContext, given: { token: string; password: string }) {
  if (kindOf(given.token) !== "reset") throw invalidLink();
  const problems = checkPassword(given.password);
  if (problems.length > 0) throw invalidRequest(problems);
  const user = await context.store.resetPassword(
    hashToken(given.token),
    await hashPassword(given.password),
    iso(context.now()),
  );
  if (!user) throw invalidLink();
  return user;
}

export const badCredentials = () =>
  new ApiError(401, { error: "Invalid credentials", message: "The email or the password is wrong" });

/**
 * Sign-in: refused with 429 while the address or the account is over its failed attempts
 * (`limits`, shared by every node as the API-key limits are); a wrong password counts against
 * both. An unknown email takes as long as a known one (a decoy hash is verified) and is answered
 * the same. The attempt that reaches a limit is audited.
 */
export async function logIn(
  context: PeopleContext,
  limits: LoginLimits,
  given: { email: string; password: string },
  address: string,
): Promise<UserRecord> {
  const email = normalEmail(given.email);
  const keys = [`address:${address}`, `account:${email}`];
  const waits = await Promise.all(keys.map((key) => limits.failureWait(key)));
  const wait = Math.max(...waits);
  if (wait > 0) throw tooManyRequests(wait, "Too many failed sign-ins for this account or from this address");
  const found = given.password.length <= PASSWORD_MAX ? await context.store.userByEmail(email) : undefined;
  decoy ??= hashPassword(newToken());
  const ok = await (await argon2()).verify(
    found?.password_hash ?? (await decoy),
    given.password.slice(0, PASSWORD_MAX),
  );
  if (!found?.password_hash || !ok || found.disabled_at !== null) {
    await Promise.all(keys.map((key) => limits.recordFailure(key)));
    const after = await Promise.all(keys.map((key) => limits.failureWait(key)));
    if (after.some((w, i) => w > 0 && waits[i] === 0)) {
      await audit(context, { id: found?.id ?? "unknown", name: email, address }, "login.throttled", {
        target: email,
        details: { address_limited: (after[0] ?? 0) > 0, account_limited: (after[1] ?? 0) > 0 },
      });
    }
    throw badCredentials();
  }
  const { password_hash: _, ...user } = found;
  return user;
}

/** A new browser session of the person; answers the cookie's value (the session id, never stored). */
export async function openBrowserSession(context: PeopleContext, user: UserRecord, address: string, hours: number) {
  const id = newToken();
  const now = context.now();
  await context.store.createBrowserSession({
    id_hash: hashToken(id),
    user_id: user.id,
    created_at: iso(now),
    expires_at: iso(now + hours * 3_600_000),
    address,
  });
  return id;
}

/** The person a browser session id (the cookie's) belongs to, when it is live. */
export async function personOf(context: Pick<PeopleContext, "store" | "now">, sessionId: string) {
  return context.store.browserSession(hashToken(sessionId), iso(context.now()));
}

export const userNotFound = (id: string) => notFound(`No person ${id}`);

const AUDIT_CURSOR_PROBLEM = {
  path: "query.cursor",
  message: "is not a cursor this operation made; pass next_cursor back as it was given",
};

/** A record as the API shows it (AuditEntry): the project's name in place of its id. */
const auditEntry = ({ project_id, ...r }: AuditRecord, names: Map<string, string>) => ({
  ...r,
  project: project_id === null ? null : (names.get(project_id) ?? null),
});

/** A page of the project's audit trail (and the instance's acts, for the owner), newest first. */
export async function listAudit(
  store: Store,
  projectId: string,
  withInstance: boolean,
  query: { limit?: number; cursor?: string },
) {
  const limit = query.limit ?? 50;
  const after = query.cursor === undefined ? undefined : decodeCursor("audit", query.cursor);
  if (query.cursor !== undefined && !after) throw invalidParameters([AUDIT_CURSOR_PROBLEM]);
  const rows = await store.listAudit({ projectId, withInstance, beforeSeq: after?.init_us, limit: limit + 1 });
  const names = new Map((await store.listProjects()).map((p) => [p.id, p.name]));
  const records = rows.slice(0, limit).map((r) => auditEntry(r, names));
  const last = records.at(-1);
  const next_cursor = rows.length > limit && last ? encodeCursor("audit", { init_us: last.seq, id: "" }) : null;
  return { records, next_cursor };
}

/** How many records the export reads at a time. */
export const AUDIT_EXPORT_PAGE = 200;

/**
 * The whole audit trail as NDJSON (docs/decisions/035-people.md, "Exporting the trail"): one
 * AuditEntry per line, oldest first, read a page at a time by seq (never all in memory), each
 * page asked for only once the last has been taken. `projectId` undefined: every record (the
 * command line's export); else the project's, with the instance's acts when `withInstance`.
 * `counts.records` counts the lines made.
 */
export async function* auditLines(
  store: Store,
  projectId: string | undefined,
  withInstance: boolean,
  counts: { records: number } = { records: 0 },
  pageSize = AUDIT_EXPORT_PAGE,
): AsyncGenerator<string> {
  let names = new Map((await store.listProjects()).map((p) => [p.id, p.name]));
  let afterSeq = 0;
  for (;;) {
    const rows = await store.listAudit({ projectId, withInstance, afterSeq, limit: pageSize });
    // A project made while the export runs: its name is read once more.
    if (rows.some((r) => r.project_id !== null && !names.has(r.project_id))) {
      names = new Map((await store.listProjects()).map((p) => [p.id, p.name]));
    }
    if (rows.length > 0) {
      counts.records += rows.length;
      yield rows.map((r) => `${JSON.stringify(auditEntry(r, names))}\n`).join("");
    }
    const last = rows.at(-1);
    if (last === undefined || rows.length < pageSize) return;
    afterSeq = last.seq;
  }
}

/** Who an API key is in the audit trail. */
export const keyActor = (key: { prefix: string }, address: string): Actor => ({
  id: `key:${key.prefix}`,
  name: `API key ${key.prefix}…`,
  address,
});
