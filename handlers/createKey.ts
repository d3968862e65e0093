import { SCOPES } from "../domain/keys.ts";
import { keyView, createKey as make } from "../services/projects.ts";
import { actorOf, type Deps, type Handler, projectIdOf } from "./types.ts";

/** A new API key of the project, shown once. */
export const createKey =
  (deps: Deps): Handler<"createKey"> =>
  async (req) => {
    const scopes = SCOPES.filter((s) => req.body.scopes.includes(s));
    const { key, record } = await make(deps, actorOf(req), projectIdOf(req), scopes);
    return { status: "success" as const, api_key: keyView(record), key };
  };
