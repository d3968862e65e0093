import { type Deps, type Handler, projectIdOf } from "./types.ts";

/** Who has which role in the project. */
export const listMembers =
  (deps: Deps): Handler<"listMembers"> =>
  async (req) => ({
    status: "success" as const,
    members: (await deps.store.listMembers(projectIdOf(req))).map((m) => ({
      user_id: m.user_id,
      email: m.email,
      name: m.name,
      role: m.role,
      created_at: m.created_at,
    })),
  });
