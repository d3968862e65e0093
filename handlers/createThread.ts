import { recordThread } from "../services/events.ts";
import { claimsOf, type Deps, type Handler } from "./types.ts";

/** C3: the thread an agent opened, as an action event of the JWT's session. */
export const createThread =
  (deps: Deps): Handler<"createThread"> =>
  async (req) => ({ status: "success" as const, ...(await recordThread(deps, claimsOf(req), req.body)) });
