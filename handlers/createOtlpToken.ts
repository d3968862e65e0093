import { otlpToken } from "../services/otlp.ts";
import { apiKeyOf, type Deps, type Handler } from "./types.ts";

/** otlp.md T5: the body's API key (checked by http/auth.ts) for a 30-day token. */
export const createOtlpToken =
  (deps: Deps): Handler<"createOtlpToken"> =>
  async (req) => {
    const key = apiKeyOf(req);
    return otlpToken(deps, { project_id: key.project_id, key_id: key.id });
  };
