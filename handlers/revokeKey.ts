import { keyView, revokeKey as revoke } from "../services/projects.ts";
import { actorOf, type Deps, type Handler, projectIdOf } from "./types.ts";

/** Revokes a key of the project (its JWTs fail with it, 4.3). */
export const revokeKey =
  (deps: Deps): Handler<"revokeKey"> =>
  async (req) => ({
    status: "success" as const,
    api_key: keyView(await revoke(deps, actorOf(req), projectIdOf(req), req.params.key_id)),
  });
