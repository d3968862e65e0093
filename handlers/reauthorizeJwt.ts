import { reauthorize } from "../services/sessions.ts";
import { apiKeyOf, type Deps, type Handler } from "./types.ts";

/** 4.5: a fresh JWT for a session of the key's project. */
export const reauthorizeJwt =
  (deps: Deps): Handler<"reauthorizeJwt"> =>
  async (req) => ({ status: "success" as const, jwt: await reauthorize(deps, apiKeyOf(req), req.body.session_id) });
