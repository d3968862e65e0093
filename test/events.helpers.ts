/** What the events tests (test/events.*.test.ts, rules E1..E7) share: a fixed clock and the bodies they expect. */

export const NOW = Date.UTC(2026, 10, 22, 5, 9, 43, 640);
export const NOW_ISO = "2026-11-22T05:09:43.640Z";
export const UUID_V7 = /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

/** A session-less base for the view of an event stored at NOW with no common field set. */
export const base = (id: string, type: string, sessionId: string) => ({
  id,
  type,
  session_id: sessionId,
  init_timestamp: NOW_ISO,
  end_timestamp: null,
  agent_id: null,
});
