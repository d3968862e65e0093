/** Records as services hand them to a Store, for the storage tests: defaults, and what each test overrides. */
import { readEvent } from "../../domain/records.ts";
import type { EventPatch, EventRecord, NewSession } from "../../domain/types.ts";

/** 2026-11-22T05:00:00Z in microseconds. */
export const US0 = 1_795_323_600_000_000;

/** The UTC ISO timestamp of an instant in microseconds, to the microsecond. */
export const iso = (us: number) =>
  `${new Date(Math.floor(us / 1000)).toISOString().slice(0, 19)}.${String(us % 1_000_000).padStart(6, "0")}Z`;

/** A session starting at 2026-11-22T05:00:00Z with nothing else set. */
export const newSession = (id: string, fields: Partial<NewSession> = {}): NewSession => ({
  id,
  init_timestamp: "2026-11-22T05:00:00Z",
  init_us: US0,
  end_timestamp: null,
  end_state: null,
  end_state_reason: null,
  tags: null,
  host_env: null,
  extra: {},
  ...fields,
});

/** An llm event one second after US0, as services store it (cost_source set). */
export const newEvent = (id: string, fields: Partial<EventRecord> = {}): EventRecord => ({
  id,
  type: "llm",
  init_timestamp: "2026-11-22T05:00:01Z",
  init_us: US0 + 1_000_000,
  end_timestamp: null,
  agent_id: null,
  model: "m",
  prompt_tokens: 1,
  completion_tokens: 2,
  cost: null,
  cost_source: "unknown",
  fields: { prompt: "hi" },
  aliases: [],
  extra: {},
  ...fields,
});

/** An update_events entry, read as the handler reads it. */
export const patch = (raw: Record<string, unknown>): EventPatch => ({
  ...readEvent(raw, "events[0]", [], "event_id"),
  id: String(raw.event_id),
});
