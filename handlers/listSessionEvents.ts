import type { Kind } from "../db/store.ts";
import { decodeCursor, encodeCursor } from "../lib/cursor.ts";
import { invalidParameters } from "../lib/parameters.ts";
import { KINDS, readEventView } from "../lib/records.ts";
import { sessionNotFound } from "./errors.ts";
import { CURSOR_PROBLEM } from "./listSessions.ts";
import { apiKeyOf, type Deps, type Handler } from "./types.ts";

/** `llm` or the SDK's `llms` (E2): the kind either names. */
const KIND_OF = new Map<string, Kind>(
  Object.entries(KINDS).flatMap(([kind, plural]) => [
    [kind, kind as Kind],
    [plural, kind as Kind],
  ]),
);

/** A page of a session's events in time order, as they were sent (G5), with their cost source. */
export const listSessionEvents =
  (deps: Deps): Handler<"listSessionEvents"> =>
  async (req) => {
    const id = req.params.session_id;
    const { type, limit = 100, cursor } = req.query;
    const after = cursor === undefined ? undefined : decodeCursor("events", cursor);
    if (cursor !== undefined && !after) throw invalidParameters([CURSOR_PROBLEM]);
    // ajv has limited the names to the enum, so every one is a kind.
    const types = type === undefined ? undefined : [...new Set(type.map((name) => KIND_OF.get(name) as Kind))];
    const page = await deps.store.listEventsPage(apiKeyOf(req).project_id, id, {
      limit,
      ...(types ? { types } : {}),
      ...(after ? { after } : {}),
    });
    if (!page) throw sessionNotFound(id);
    return {
      status: "success" as const,
      events: page.items.map((event) => readEventView(event, id)),
      next_cursor: page.next === null ? null : encodeCursor("events", page.next),
    };
  };
