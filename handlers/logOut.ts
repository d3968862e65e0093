import { type Deps, type Handler, personOfRequest } from "./types.ts";

/** Ends this browser session: its row goes, so the cookie fails on every node. */
export const logOut =
  (deps: Deps): Handler<"logOut"> =>
  async (req, reply) => {
    await deps.store.deleteBrowserSession(personOfRequest(req).sessionHash);
    deps.people.endSession(reply);
    return { status: "success" as const };
  };
