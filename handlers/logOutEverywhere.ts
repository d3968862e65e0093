import { type Deps, type Handler, personOfRequest } from "./types.ts";

/** Ends every browser session of the signed-in person, on every node. */
export const logOutEverywhere =
  (deps: Deps): Handler<"logOutEverywhere"> =>
  async (req, reply) => {
    await deps.store.deleteUserSessions(personOfRequest(req).user.id);
    deps.people.endSession(reply);
    return { status: "success" as const };
  };
