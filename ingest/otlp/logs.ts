/**
 * The mapping half of otlp.md T3: from a decoded logs request, the GenAI events (log records whose
 * `eventName`, or attribute `event.name`, starts with `gen_ai.`) that name a trace and a span, as
 * messages for that span's event. The store applies them with domain/genai.ts withGenAiMessages,
 * whether the span came before or comes after. Other records are not kept.
 */
import { type GenAiEvent, type GenAiMessages, isGenAiEventName, messagesFromGenAiEvents } from "../../domain/genai.ts";
import { traceIdToSessionId } from "./ids.ts";
import type { LogRecord, LogsRequest } from "./types.ts";
import { plain, plainObject } from "./values.ts";

export interface SpanMessages {
  /** The span's session: its trace id as a UUID. */
  session_id: string;
  /** The span, which is the id of its event. */
  event_id: string;
  /** The GenAI events, in request order, with plain values. */
  events: GenAiEvent[];
  /** What they say, as E4 messages. */
  messages: GenAiMessages;
}

const NO_ID = /^0*$/;

function genAiEventOf(record: LogRecord): GenAiEvent | undefined {
  const attributes = plainObject(record.attributes ?? []);
  const name = record.eventName || attributes["event.name"];
  if (typeof name !== "string" || !isGenAiEventName(name)) return undefined;
  const event: GenAiEvent = { name, attributes };
  if (record.body !== undefined) event.body = plain(record.body);
  return event;
}

export function mapLogs(request: LogsRequest): SpanMessages[] {
  const bySpan = new Map<string, SpanMessages>();
  for (const resourceLogs of request.resourceLogs ?? []) {
    for (const scopeLogs of resourceLogs.scopeLogs ?? []) {
      for (const record of scopeLogs.logRecords ?? []) {
        if (NO_ID.test(record.traceId ?? "") || NO_ID.test(record.spanId ?? "")) continue;
        const event = genAiEventOf(record);
        if (!event) continue;
        const key = `${record.traceId}/${record.spanId}`;
        let entry = bySpan.get(key);
        if (!entry) {
          entry = { session_id: traceIdToSessionId(record.traceId), event_id: record.spanId, events: [], messages: {} };
          bySpan.set(key, entry);
        }
        entry.events.push(event);
      }
    }
  }
  const out = [...bySpan.values()];
  for (const entry of out) entry.messages = messagesFromGenAiEvents(entry.events);
  return out;
}
