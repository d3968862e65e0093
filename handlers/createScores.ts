import { recordScores, type Scorer } from "../services/scores.ts";
import { type Deps, type Handler, projectIdOf } from "./types.ts";

/** SC1-SC7: a batch of scores, with an API key, a person's session or a session's JWT (SC2). */
export const createScores =
  (deps: Deps): Handler<"createScores"> =>
  async (req) => {
    const claims = req.claims;
    const scorer: Scorer = claims
      ? {
          projectId: claims.project_id,
          author: { type: "api_key", id: claims.key_id },
          jwt: { session_id: claims.session_id, key_id: claims.key_id },
        }
      : {
          projectId: projectIdOf(req),
          author: req.person
            ? { type: "person", id: req.person.user.id }
            : { type: "api_key", id: req.apiKey?.id ?? "" },
        };
    return { status: "success" as const, score_ids: await recordScores(deps, scorer, req.body.scores) };
  };
