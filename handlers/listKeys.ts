import { keyView, listKeys as list } from "../services/projects.ts";
import { type Deps, type Handler, projectIdOf } from "./types.ts";

/** The project's API keys (never a key itself). */
export const listKeys =
  (deps: Deps): Handler<"listKeys"> =>
  async (req) => ({ status: "success" as const, keys: (await list(deps.store, projectIdOf(req))).map(keyView) });
