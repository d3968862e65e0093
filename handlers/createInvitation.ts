import { invalidRequest } from "../domain/errors.ts";
import { isEmailShape, normalEmail } from "../domain/people.ts";
import { auditedMail } from "../services/mail.ts";
import { audit, makeLink, personActor } from "../services/people.ts";
import { type Deps, type Handler, personOfRequest } from "./types.ts";

/**
 * A project admin's invitation: a one-time link that makes the account with its role in the
 * project, answered, and mailed when a mail server is set (a failed mail is logged, not an error).
 */
export const createInvitation =
  (deps: Deps): Handler<"createInvitation"> =>
  async (req) => {
    const person = personOfRequest(req);
    const email = normalEmail(req.body.email);
    if (!isEmailShape(email)) throw invalidRequest([{ path: "/email", message: "must be an email address" }]);
    const project = person.project as { id: string; name: string };
    const by = personActor(person.user, req.ip);
    const role = req.body.role;
    const made = await makeLink(deps, "invite", by, { email, projectId: project.id, role });
    const sent = await deps.people.mailer.sendLink({
      kind: "invite",
      to: email,
      link: made.link,
      expiresAt: made.expires_at,
      project: project.name,
      role,
      by: `${person.user.name} (${person.user.email})`,
    });
    if (!sent.mailed && sent.reason !== null) req.log.warn({ reason: sent.reason }, "the invitation was not mailed");
    await audit(deps, by, "user.invited", {
      projectId: project.id,
      target: email,
      details: { role, ...auditedMail(sent) },
    });
    return { status: "success" as const, link: made.link, expires_at: made.expires_at, mailed: sent.mailed };
  };
