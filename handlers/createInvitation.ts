import { invalidRequest } from "../domain/errors.ts";
import { isEmailShape, normalEmail } from "../domain/people.ts";
import { audit, makeLink, personActor } from "../services/people.ts";
import { type Deps, type Handler, personOfRequest } from "./types.ts";

/** A project admin's invitation: a one-time link that makes the account with its role in the project. */
export const createInvitation =
  (deps: Deps): Handler<"createInvitation"> =>
  async (req) => {
    const person = personOfRequest(req);
    const email = normalEmail(req.body.email);
    if (!isEmailShape(email)) throw invalidRequest([{ path: "/email", message: "must be an email address" }]);
    const project = person.project as { id: string; name: string };
    const by = personActor(person.user, req.ip);
    const made = await makeLink(deps, "invite", by, { email, projectId: project.id, role: req.body.role });
    await audit(deps, by, "user.invited", { projectId: project.id, target: email, details: { role: req.body.role } });
    return { status: "success" as const, link: made.link, expires_at: made.expires_at };
  };
