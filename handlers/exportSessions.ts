import { Readable } from "node:stream";
import { type ExportFormat, exportFilter, exportLines } from "../services/export.ts";
import { type Deps, type Handler, projectIdOf } from "./types.ts";

const MEDIA_TYPES: Record<ExportFormat, string> = {
  ndjson: "application/x-ndjson; charset=utf-8",
  csv: "text/csv; charset=utf-8; header=present",
  otlp: "application/x-ndjson; charset=utf-8",
};

/** Bytes made ahead of the client; past them the export waits for the socket to drain. */
const AHEAD_BYTES = 64 * 1024;

/**
 * Bulk export, streamed (docs/decisions/021-export.md): the filters are checked and the first
 * chunk made before anything is sent, so that a bad filter is still a 400 and a storage failure
 * at the start a 503 or 500; then Fastify pipes the stream, which pulls the next
 * session only when the socket has taken the last ones, and destroys it (ending the reading) when
 * the client goes away or the reading fails (the answer then ends without its trailer).
 */
export const exportSessions =
  (deps: Deps): Handler<"exportSessions"> =>
  async (req, reply) => {
    const { format = "ndjson", ...fields } = req.query;
    const filter = exportFilter(fields);
    const chosen: ExportFormat = format;
    const lines = exportLines(deps.store, projectIdOf(req), filter, chosen);
    // The first chunk is made before the status is sent: storage failing (or refused, without the
    // scope) at the start is still an ordinary error answer.
    const first = await lines.next();
    const rest = async function* () {
      if (!first.done) yield first.value;
      yield* lines;
    };
    const stream = Readable.from(rest(), { objectMode: false, highWaterMark: AHEAD_BYTES });
    reply.type(MEDIA_TYPES[chosen]).header("cache-control", "no-store");
    return reply.code(200).send(stream);
  };
