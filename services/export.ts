/**
 * Bulk export (issue 16 part 3, docs/decisions/021-export.md): the project's sessions that match
 * the list's filters, newest first, as NDJSON, CSV or OTLP/JSON lines, made one session at a time
 * as the reader asks for them, so that nothing but one page of the list and one session is held.
 * GET /v2/export and `agentmon export` both write what `exportLines` yields.
 */
import type { Store } from "../db/store.ts";
import { type ErrorDetail, invalidParameters } from "../domain/errors.ts";
import type { Position, SessionFilter, SessionSnapshot } from "../domain/types.ts";
import { exportDocument, readEventView } from "../domain/views.ts";
import { toOtlp } from "../ingest/otlp/export.ts";
import { type FilterFields, sessionFilter } from "./reads.ts";
import { sessionScores } from "./scores.ts";

export const EXPORT_FORMATS = ["ndjson", "csv", "otlp"] as const;
export type ExportFormat = (typeof EXPORT_FORMATS)[number];

/** Sessions listed per page of the keyset walk; each one is then read whole, alone. */
export const EXPORT_PAGE = 100;

/** The filters as GET /v2/sessions reads them; a bad one is the same 400, its path under `where`. */
export function exportFilter(fields: FilterFields, where = "query"): SessionFilter {
  const errors: ErrorDetail[] = [];
  const filter = sessionFilter(fields, where, errors);
  if (errors.length > 0) throw invalidParameters(errors);
  return filter;
}

/** The matching sessions, newest first, each read whole in one snapshot; one deleted meanwhile is skipped. */
export async function* sessionSnapshots(
  store: Store,
  projectId: string,
  filter: SessionFilter,
  pageSize = EXPORT_PAGE,
): AsyncGenerator<SessionSnapshot> {
  let after: Position | undefined;
  do {
    const page = await store.listSessions(projectId, filter, after, pageSize);
    for (const { session } of page.items) {
      const found = await store.readSession(projectId, session.id, { agents: true, events: true });
      if (found) yield found;
    }
    after = page.next ?? undefined;
  } while (after !== undefined);
}

/** The CSV columns, in order; `data` holds the rest of the event as the read API shows it, as JSON. */
export const CSV_COLUMNS = [
  "session_id",
  "event_id",
  "type",
  "init_timestamp",
  "end_timestamp",
  "agent_id",
  "model",
  "prompt_tokens",
  "completion_tokens",
  "cost",
  "cost_source",
  "data",
] as const;

/** The event view's keys that have a column of their own (`id` is `event_id`). */
const IN_COLUMNS = new Set<string>([...CSV_COLUMNS, "id"]);

/** One RFC 4180 field: quoted when it holds a comma, a quote, CR or LF; null is empty. */
export function csvField(value: unknown): string {
  if (value === null || value === undefined) return "";
  const text = typeof value === "string" ? value : typeof value === "number" ? String(value) : JSON.stringify(value);
  return /[",\r\n]/.test(text) ? `"${text.replaceAll('"', '""')}"` : text;
}

const csvRow = (values: unknown[]) => `${values.map(csvField).join(",")}\r\n`;

/** The session's events as CSV rows, one per event. */
function csvRows(found: SessionSnapshot): string {
  let rows = "";
  for (const event of found.events) {
    const view = readEventView(event, found.session.id) as Record<string, unknown>;
    const data: Record<string, unknown> = {};
    for (const [key, value] of Object.entries(view)) if (!IN_COLUMNS.has(key)) data[key] = value;
    rows += csvRow([
      found.session.id,
      view.id,
      view.type,
      view.init_timestamp,
      view.end_timestamp,
      view.agent_id,
      view.model,
      view.prompt_tokens,
      view.completion_tokens,
      view.cost,
      view.cost_source,
      data,
    ]);
  }
  return rows;
}

export interface ExportCounts {
  sessions: number;
  events: number;
}

/**
 * The export, as chunks of text to write in order: the CSV header first; one chunk per session
 * (an NDJSON line, an OTLP/JSON line, or the session's CSV rows); then the trailer, which says how
 * many sessions and events were written. It is written only when everything before it was: a
 * reader that finds no trailer has an incomplete export. Nothing is read before it is asked for.
 */
export async function* exportLines(
  store: Store,
  projectId: string,
  filter: SessionFilter,
  format: ExportFormat,
  counts: ExportCounts = { sessions: 0, events: 0 },
): AsyncGenerator<string> {
  // The CSV header goes out with the first session (or the trailer): the first chunk comes only
  // after storage has answered once, so that a caller may await it to turn an early failure into
  // an ordinary error answer (handlers/exportSessions.ts).
  let head = format === "csv" ? csvRow([...CSV_COLUMNS]) : "";
  for await (const found of sessionSnapshots(store, projectId, filter)) {
    const chunk =
      format === "ndjson"
        ? `${JSON.stringify({ ...exportDocument(found), scores: await sessionScores(store, projectId, found.session.id) })}\n`
        : format === "otlp"
          ? `${JSON.stringify(toOtlp(found.events, found.session.id, found.session.extra))}\n`
          : csvRows(found);
    counts.sessions += 1;
    counts.events += found.events.length;
    yield head + chunk;
    head = "";
  }
  const trailer = { sessions: counts.sessions, events: counts.events };
  // CSV: a last row of its own kind, `type` = trailer and the counts as JSON in `data`.
  if (format === "csv") yield head + csvRow(["", "", "trailer", "", "", "", "", "", "", "", "", trailer]);
  else yield `${JSON.stringify({ trailer })}\n`;
}
