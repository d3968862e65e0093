import type { ApiKeyRecord, JsonObject } from "../db/store.ts";
import { newSession, readSession } from "../lib/records.ts";
import { timestampFromMillis } from "../lib/timestamps.ts";
import { conflict, type ErrorDetail, invalidRequest } from "./errors.ts";
import { apiKeyOf, type Deps, type Handler, sessionUrl } from "./types.ts";

/** S1-S3: shared by both create_session paths; `path` is where the session fields sit in the body. */
export async function openSession(deps: Deps, key: ApiKeyRecord, raw: JsonObject, path: string) {
  const errors: ErrorDetail[] = [];
  const { id, changes } = readSession(raw, path, errors);
  if (id === undefined) {
    errors.push({ path: path === "" ? "id" : `${path}.id`, message: "is required: give id or session_id" });
  }
  if (id === undefined || errors.length > 0) throw invalidRequest(errors);
  const session = newSession(id, changes, timestampFromMillis(deps.now()));
  const { projectId } = await deps.store.createSession(key.project_id, session);
  if (projectId !== key.project_id) throw conflict(id);
  return {
    status: "success" as const,
    jwt: deps.issueJwt({ session_id: id, project_id: key.project_id, key_id: key.id }),
    session_id: id,
    session_url: sessionUrl(deps, id),
  };
}

export const createSession =
  (deps: Deps): Handler<"createSession"> =>
  async (req) =>
    openSession(deps, apiKeyOf(req), req.body.session, "session");
