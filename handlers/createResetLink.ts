import { auditedMail } from "../services/mail.ts";
import { audit, makeLink, personActor, userNotFound } from "../services/people.ts";
import { type Deps, type Handler, personOfRequest } from "./types.ts";

/**
 * The owner's password-reset link for a person: answered, and mailed to them when a mail server
 * is set (a failed mail is logged, not an error).
 */
export const createResetLink =
  (deps: Deps): Handler<"createResetLink"> =>
  async (req) => {
    const target = await deps.store.userById(req.params.user_id);
    if (!target) throw userNotFound(req.params.user_id);
    const owner = personOfRequest(req).user;
    const by = personActor(owner, req.ip);
    const made = await makeLink(deps, "reset", by, { userId: target.id });
    const sent = await deps.people.mailer.sendLink({
      kind: "reset",
      to: target.email,
      link: made.link,
      expiresAt: made.expires_at,
      by: `${owner.name} (${owner.email})`,
    });
    if (!sent.mailed && sent.reason !== null) req.log.warn({ reason: sent.reason }, "the reset link was not mailed");
    await audit(deps, by, "user.password_reset_link", { target: target.email, details: auditedMail(sent) });
    return { status: "success" as const, link: made.link, expires_at: made.expires_at, mailed: sent.mailed };
  };
