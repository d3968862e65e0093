import { userView } from "../domain/people.ts";
import { audit, personActor, userNotFound } from "../services/people.ts";
import { type Deps, type Handler, personOfRequest } from "./types.ts";

/** The owner disables a person (their sessions end at once, on every node) or enables them. */
export const setUserDisabled =
  (deps: Deps): Handler<"setUserDisabled"> =>
  async (req) => {
    const at = req.body.disabled ? new Date(deps.now()).toISOString() : null;
    const user = await deps.store.setUserDisabled(req.params.user_id, at);
    if (!user) throw userNotFound(req.params.user_id);
    const by = personActor(personOfRequest(req).user, req.ip);
    await audit(deps, by, at === null ? "user.enabled" : "user.disabled", { target: user.email });
    return { status: "success" as const, user: userView(user) };
  };
