import { openSession } from "../services/sessions.ts";
import { apiKeyOf, type Deps, type Handler } from "./types.ts";

/** S1-S3: a session of the key's project, and the JWT that writes to it. */
export const createSession =
  (deps: Deps): Handler<"createSession"> =>
  async (req) => ({
    status: "success" as const,
    ...(await openSession(deps, apiKeyOf(req), req.body.session, "session")),
  });
