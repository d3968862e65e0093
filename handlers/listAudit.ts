import { listAudit as page } from "../services/people.ts";
import { type Deps, type Handler, projectIdOf } from "./types.ts";

/** The project's audit trail, newest first, paged (the owner also sees the instance's acts). */
export const listAudit =
  (deps: Deps): Handler<"listAudit"> =>
  async (req) => {
    const owner = req.person?.user.owner === true;
    const found = await page(deps.store, projectIdOf(req), owner, req.query);
    return { status: "success" as const, ...found };
  };
