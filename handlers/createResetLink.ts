import { audit, makeLink, personActor, userNotFound } from "../services/people.ts";
import { type Deps, type Handler, personOfRequest } from "./types.ts";

/** The owner's password-reset link for a person. */
export const createResetLink =
  (deps: Deps): Handler<"createResetLink"> =>
  async (req) => {
    const target = await deps.store.userById(req.params.user_id);
    if (!target) throw userNotFound(req.params.user_id);
    const by = personActor(personOfRequest(req).user, req.ip);
    const made = await makeLink(deps, "reset", by, { userId: target.id });
    await audit(deps, by, "user.password_reset_link", { target: target.email });
    return { status: "success" as const, link: made.link, expires_at: made.expires_at };
  };
