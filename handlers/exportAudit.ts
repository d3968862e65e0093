import { Readable } from "node:stream";
import { auditLines } from "../services/people.ts";
import { type Deps, type Handler, projectIdOf } from "./types.ts";

/** Bytes made ahead of the client; past them the export waits for the socket to drain. */
const AHEAD_BYTES = 64 * 1024;

/**
 * The project's whole audit trail as NDJSON, oldest first, streamed as exportSessions streams
 * (decision 035): the first page is read before the status is sent, so storage failing at the
 * start is still an ordinary error answer; then each page is read only when the socket has taken
 * the last, and the reading stops when the client goes away. The owner also gets the instance's acts.
 */
export const exportAudit =
  (deps: Deps): Handler<"exportAudit"> =>
  async (req, reply) => {
    const owner = req.person?.user.owner === true;
    const lines = auditLines(deps.store, projectIdOf(req), owner);
    const first = await lines.next();
    const rest = async function* () {
      if (!first.done) yield first.value;
      yield* lines;
    };
    const stream = Readable.from(rest(), { objectMode: false, highWaterMark: AHEAD_BYTES });
    reply.type("application/x-ndjson; charset=utf-8").header("cache-control", "no-store");
    return reply.code(200).send(stream);
  };
