import { resetPassword as reset } from "../services/people.ts";
import type { Deps, Handler } from "./types.ts";

/** Sets a password through a reset link; the person's sessions end. */
export const resetPassword =
  (deps: Deps): Handler<"resetPassword"> =>
  async (req) => {
    await reset(deps, req.body);
    return { status: "success" as const };
  };
