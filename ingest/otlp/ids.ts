/** Trace ids and session ids (otlp.md T12): a trace is the session whose id is its trace id as a UUID. */

const UUID = /^([0-9a-f]{8})-([0-9a-f]{4})-([0-9a-f]{4})-([0-9a-f]{4})-([0-9a-f]{12})$/;

/** A trace id (32 hex digits) as its session's id: a UUID, 8-4-4-4-12, lowercase. */
export function traceIdToSessionId(hex: string): string {
  const h = hex.toLowerCase();
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20, 32)}`;
}

/** A session id back to its trace id (32 lowercase hex digits); undefined when it is not a UUID. */
export function sessionIdToTraceId(uuid: string): string | undefined {
  const m = UUID.exec(uuid.toLowerCase());
  return m ? m.slice(1).join("") : undefined;
}
