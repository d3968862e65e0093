import { putScoreConfig as put } from "../services/scores.ts";
import { actorOf, type Deps, type Handler, projectIdOf } from "./types.ts";

/** Makes or replaces the rules scores of a name follow (SC5); audited. */
export const putScoreConfig =
  (deps: Deps): Handler<"putScoreConfig"> =>
  async (req) => ({
    status: "success" as const,
    config: await put(deps, actorOf(req), projectIdOf(req), req.params.name, req.body),
  });
