/**
 * People (issue 26, docs/decisions/035-people.md): accounts, their roles per project, one-time
 * links, browser sessions and the audit trail, as records, and the one rule of what a role may
 * do. Pure: no storage, no HTTP.
 */
import { createHash, randomBytes } from "node:crypto";

/** A person's role in one project, weakest first: each may do what the ones before it may. */
export const ROLES = ["viewer", "annotator", "editor", "admin"] as const;
export type Role = (typeof ROLES)[number];
/**
 * What an operation needs of a person (openapi.yaml `x-agentmon-role`): a role in the project it
 * acts in, the instance owner, any signed-in person (`person`: their own account), or no person
 * at all (`none`: a person's browser session is not a credential there).
 */
export type RoleNeed = Role | "owner" | "person" | "none";
export const ROLE_NEEDS: readonly RoleNeed[] = [...ROLES, "owner", "person", "none"];
export const isProjectRole = (needs: RoleNeed): needs is Role => isRole(needs);

export const isRole = (value: unknown): value is Role => (ROLES as readonly unknown[]).includes(value);

/**
 * Whether a person with `role` in the project (undefined: not a member), or the owner, may do
 * what `needs` names. The owner may do everything a person may, in every project.
 */
export function mayAct(needs: RoleNeed, role: Role | undefined, owner: boolean): boolean {
  if (needs === "none") return false;
  if (owner || needs === "person") return true;
  if (needs === "owner" || role === undefined) return false;
  return ROLES.indexOf(role) >= ROLES.indexOf(needs);
}

export interface UserRecord {
  id: string;
  email: string;
  name: string;
  owner: boolean;
  created_at: string;
  disabled_at: string | null;
}

/** A user with the hash of their password (null: none set), for sign-in only. */
export interface UserWithPassword extends UserRecord {
  password_hash: string | null;
}

export interface NewUser {
  email: string;
  name: string;
  password_hash: string | null;
  owner: boolean;
  created_at: string;
}

export type TokenKind = "owner" | "invite" | "reset";

/** A one-time link's record (user_tokens); the token itself is never stored, only its hash. */
export interface UserToken {
  token_hash: string;
  kind: TokenKind;
  /** reset: whose password it sets. */
  user_id: string | null;
  /** invite: the address invited. */
  email: string | null;
  /** invite: the project and role it gives. */
  project_id: string | null;
  role: Role | null;
  /** Who made it: a user id, or `cli`. */
  created_by: string | null;
  created_at: string;
  expires_at: string;
  used_at: string | null;
}

export interface MemberRecord {
  project_id: string;
  project_name: string;
  user_id: string;
  email: string;
  name: string;
  role: Role;
  created_at: string;
}

/** A signed-in person, as the browser-session check (http/people.ts) leaves them on the request. */
export interface Person {
  user: UserRecord;
  /** The session id's hash (the row's key; the CSRF token is bound to it). */
  sessionHash: string;
  /** The project the request acts in, and the person's role there (undefined: the owner, no member). */
  project?: { id: string; name: string };
  role?: Role | undefined;
}

export interface BrowserSessionRecord {
  id_hash: string;
  user_id: string;
  created_at: string;
  expires_at: string;
  address: string;
}

/** An administrative act, as the audit trail keeps it (append only). */
export interface AuditRecord {
  seq: number;
  at: string;
  /** A user id, `key:<prefix>` or `cli`. */
  actor: string;
  /** The actor as people read it: an email, `API key 1234abcd…`, `agentmon CLI`. */
  actor_name: string;
  /** The client address the act came from (`local` for the CLI). */
  address: string;
  action: AuditAction;
  project_id: string | null;
  /** What was acted on: a key prefix, a user's email, a session filter… */
  target: string | null;
  details: Record<string, unknown>;
}

export type NewAudit = Omit<AuditRecord, "seq">;

export const AUDIT_ACTIONS = [
  "user.created",
  "user.disabled",
  "user.enabled",
  "user.password_reset_link",
  "user.invited",
  "login.throttled",
  "key.created",
  "key.revoked",
  "member.added",
  "member.removed",
  "member.role_changed",
  "sessions.deleted",
  "retention.changed",
  "project.created",
  "score_config.set",
] as const;
export type AuditAction = (typeof AUDIT_ACTIONS)[number];

/** A random token for a cookie or a link: 32 bytes, base64url (43 characters). */
export const newToken = () => randomBytes(32).toString("base64url");
/** How a token is kept: its SHA-256, so a copy of the database signs nobody in and opens no link. */
export const hashToken = (token: string) => createHash("sha256").update(token).digest("hex");
/** Emails compare case-blind: kept trimmed and lower-cased. */
export const normalEmail = (email: string) => email.trim().toLowerCase();
/** A plausible address: something@something, no spaces, at most 254 characters. */
export const isEmailShape = (email: string) => email.length <= 254 && /^[^\s@]+@[^\s@]+$/.test(email);

/** A person as the API shows them (no password hash). */
export const userView = (user: UserRecord) => ({
  id: user.id,
  email: user.email,
  name: user.name,
  owner: user.owner,
  created_at: user.created_at,
  disabled_at: user.disabled_at,
});

/** A signed-in person as logIn, signUp and getMe answer them. */
export const personView = (user: UserRecord, memberships: MemberRecord[], csrf: string) => ({
  status: "success" as const,
  user: userView(user),
  memberships: memberships.map((m) => ({ project: m.project_name, role: m.role })),
  csrf_token: csrf,
});
