import { sessionNotFound } from "./errors.ts";
import { apiKeyOf, type Deps, type Handler } from "./types.ts";

/** 4.5: a fresh JWT for a session of the key's project. */
export const reauthorizeJwt =
  (deps: Deps): Handler<"reauthorizeJwt"> =>
  async (req) => {
    const key = apiKeyOf(req);
    const session = await deps.store.getSession(req.body.session_id);
    if (!session || session.project_id !== key.project_id) throw sessionNotFound(req.body.session_id);
    return {
      status: "success" as const,
      jwt: deps.issueJwt({ session_id: session.id, project_id: key.project_id, key_id: key.id }),
    };
  };
