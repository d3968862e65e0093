/**
 * Projects, keys, members and retention through the API (issue 26, decision 035), for a
 * project admin (or an API key with the admin scope) and the instance owner. Every change is
 * audited with its actor.
 */
import { Conflict } from "../db/errors.ts";
import type { Store } from "../db/store.ts";
import { ApiError, notFound } from "../domain/errors.ts";
import { hashApiKey, keyPrefix } from "../domain/keys.ts";
import { normalEmail, type Role } from "../domain/people.ts";
import type { ApiKeyRecord, ProjectRecord, Scope } from "../domain/types.ts";
import { type Actor, audit, type PeopleContext, userNotFound } from "./people.ts";

export const keyView = (k: ApiKeyRecord) => ({
  id: k.id,
  prefix: k.prefix,
  scopes: k.scopes,
  created_at: k.created_at,
  revoked_at: k.revoked_at,
});

export const projectView = (p: ProjectRecord, role: Role | null) => ({
  name: p.name,
  created_at: p.created_at,
  retention_days: p.retention_days,
  role,
});

const iso = (ms: number) => new Date(ms).toISOString();

export async function projectById(store: Store, id: string) {
  const project = (await store.listProjects()).find((p) => p.id === id);
  if (!project) throw notFound("No such project");
  return project;
}

export async function createProject(context: PeopleContext, by: Actor, name: string) {
  try {
    const project = await context.store.createProject(name.trim(), iso(context.now()));
    await audit(context, by, "project.created", { projectId: project.id, target: project.name });
    return project;
  } catch (error) {
    if (error instanceof Conflict) {
      throw new ApiError(409, { error: "Conflict", message: `A project is named ${name} already` });
    }
    throw error;
  }
}

export async function listKeys(store: Store, projectId: string) {
  return (await store.listApiKeys()).filter((k) => k.project_id === projectId);
}

/** A new key of the project; answers the key itself, which is never stored. */
export async function createKey(context: PeopleContext, by: Actor, projectId: string, scopes: Scope[]) {
  const project = await projectById(context.store, projectId);
  const key = crypto.randomUUID();
  const record = await context.store.createApiKey(
    hashApiKey(key),
    keyPrefix(key),
    project.name,
    iso(context.now()),
    scopes,
  );
  await audit(context, by, "key.created", {
    projectId,
    target: `${record.prefix}…`,
    details: { scopes: record.scopes },
  });
  return { key, record };
}

/** Revokes a key of the project; another project's key is not found, as any of its data. */
export async function revokeKey(context: PeopleContext, by: Actor, projectId: string, keyId: string) {
  const key = await context.store.apiKeyById(keyId);
  if (!key || key.project_id !== projectId) throw notFound(`No API key ${keyId} in this project`);
  if (key.revoked_at === null) {
    await context.store.revokeApiKey(key.id, iso(context.now()));
    await audit(context, by, "key.revoked", { projectId, target: `${key.prefix}…` });
  }
  return (await context.store.apiKeyById(keyId)) as ApiKeyRecord;
}

export async function setMember(
  context: PeopleContext,
  by: Actor,
  projectId: string,
  userId: string,
  role: Role | null,
) {
  // An email names the account that has it (decision 035): an admin adds a person they know by
  // address, without looking their id up first.
  const user = userId.includes("@")
    ? await context.store.userByEmail(normalEmail(userId))
    : await context.store.userById(userId);
  if (!user) throw userNotFound(userId);
  const before = await context.store.setMember(projectId, user.id, role, iso(context.now()));
  if (role === null && before === undefined) throw notFound(`${user.email} is no member of this project`);
  if (before === role) return;
  const action = role === null ? "member.removed" : before === undefined ? "member.added" : "member.role_changed";
  await audit(context, by, action, { projectId, target: user.email, details: { role, before: before ?? null } });
}

export async function setRetention(context: PeopleContext, by: Actor, projectId: string, days: number | null) {
  const project = await projectById(context.store, projectId);
  const changed = (await context.store.setRetention(project.name, days)) as ProjectRecord;
  await audit(context, by, "retention.changed", {
    projectId,
    details: { retention_days: days, before: project.retention_days },
  });
  return changed;
}
