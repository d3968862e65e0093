/** Sessions: opening one (S1-S3), updating it (S4-S7), a fresh JWT for it (4.5). */
import { conflict, type ErrorDetail, forbidden, invalidRequest, sessionNotFound } from "../domain/errors.ts";
import { newSession, readSession } from "../domain/records.ts";
import { timestampFromMillis } from "../domain/timestamps.ts";
import type { ApiKeyRecord, Claims, JsonObject, SessionWithTotals } from "../domain/types.ts";
import { type Context, sessionUrl } from "./context.ts";

/** Creates the session (or finds it, S3); `path` is where the session fields sit in the body. */
export async function openSession(context: Context, key: ApiKeyRecord, raw: JsonObject, path: string) {
  const errors: ErrorDetail[] = [];
  const { id, changes } = readSession(raw, path, errors);
  if (id === undefined) {
    errors.push({ path: path === "" ? "id" : `${path}.id`, message: "is required: give id or session_id" });
  }
  if (id === undefined || errors.length > 0) throw invalidRequest(errors);
  const session = newSession(id, changes, timestampFromMillis(context.now()));
  const { created, projectId } = await context.store.createSession(key.project_id, session);
  if (projectId !== key.project_id) throw conflict(id);
  if (created) context.counts.ingested("sessions", 1);
  return {
    jwt: context.issueJwt({ session_id: id, project_id: key.project_id, key_id: key.id }),
    session_id: id,
    session_url: sessionUrl(context, id),
  };
}

/** Only the fields given change (S4-S7); answers the stored session with its totals. */
export async function updateSession(context: Context, claims: Claims, raw: JsonObject): Promise<SessionWithTotals> {
  const errors: ErrorDetail[] = [];
  const { id, changes } = readSession(raw, "session", errors);
  if (errors.length > 0) throw invalidRequest(errors);
  if (id !== undefined && id !== claims.session_id) throw forbidden(claims.session_id, id);
  const updated = await context.store.updateSession(claims.project_id, claims.session_id, changes, claims.key_id);
  if (!updated) throw sessionNotFound(claims.session_id);
  return updated;
}

/** 4.5: a fresh JWT for a session of the key's project. */
export async function reauthorize(context: Context, key: ApiKeyRecord, sessionId: string) {
  const session = await context.store.getSession(key.project_id, sessionId);
  if (!session) throw sessionNotFound(sessionId);
  return context.issueJwt({ session_id: session.id, project_id: key.project_id, key_id: key.id });
}
