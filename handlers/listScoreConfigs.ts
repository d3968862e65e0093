import { type Deps, type Handler, projectIdOf } from "./types.ts";

/** The project's score configs, by name. */
export const listScoreConfigs =
  (deps: Deps): Handler<"listScoreConfigs"> =>
  async (req) => ({ status: "success" as const, configs: await deps.store.listScoreConfigs(projectIdOf(req)) });
