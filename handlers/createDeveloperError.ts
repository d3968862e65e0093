import { recordDeveloperError } from "../services/events.ts";
import { apiKeyOf, type Deps, type Handler } from "./types.ts";

/**
 * C2: AgentOps SDK 0.3.x's report of an exception inside the SDK, an error event of the session it
 * names. One naming no session has nowhere to be stored: the server's log keeps a line of it.
 */
export const createDeveloperError =
  (deps: Deps): Handler<"createDeveloperError"> =>
  async (req) => {
    const key = apiKeyOf(req);
    const stored = await recordDeveloperError(deps, key, req.body);
    if (stored.event_id === null) {
      req.log.warn(
        { project: key.project_name, type: req.body.type, sdk_version: req.body.sdk_version ?? null },
        "developer error naming no session, not stored",
      );
    }
    return { status: "success" as const, ...stored };
  };
