import type { JsonObject } from "../domain/types.ts";
import { openSession } from "../services/sessions.ts";
import { apiKeyOf, type Deps, type Handler } from "./types.ts";

const isObject = (value: unknown): value is JsonObject =>
  typeof value === "object" && value !== null && !Array.isArray(value);

/** L2: like createSession, with the session fields flat, or wrapped when `session` is an object and no id is at the top. */
export const createSessionUnversioned =
  (deps: Deps): Handler<"createSessionUnversioned"> =>
  async (req) => {
    const body = req.body;
    // null means "not given" (G5), so `"id": null` beside a session object still means wrapped.
    const wrapped = isObject(body.session) && body.id == null && body.session_id == null;
    const opened = wrapped
      ? await openSession(deps, apiKeyOf(req), body.session as JsonObject, "session")
      : await openSession(deps, apiKeyOf(req), body, "");
    return { status: "success" as const, ...opened };
  };
