/**
 * The `extra.<key>=<value>` filters of the read API (openapi.yaml, listSessions; decision 031),
 * as both stores compare them. A value is text (a query carries nothing else); it matches a field
 * of the session's extra that is
 * - a string holding exactly this text;
 * - a number of the same value, when the text is a JSON number (`3`, `3.0`, `3e0` and `0.3e1`
 *   all match a stored 3): JSON keeps no spelling of a number, and agentmon stores what
 *   JSON.parse read (`3.0` sent is `3` stored and shown), so the spelling cannot be compared;
 * - true or false, when the text is `true` or `false`.
 * A stored null, object or array never matches. The key is a key, matched whole: the stores
 * take it from a JSON object of the filters (never spliced into a path or into SQL), so a dot,
 * a quote or a `$` in it is part of the name.
 */

/** A JSON number, whole (RFC 8259 §6): no sign `+`, no leading zero, no bare `.5` or `5.`. */
const JSON_NUMBER = /^-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?$/;

/**
 * The number a filter's text matches, or null when it matches none: the text is not a JSON
 * number, or it is one too large for a double (`1e400`), which agentmon never stores (http/json.ts).
 */
export function extraNumber(text: string): number | null {
  if (!JSON_NUMBER.test(text)) return null;
  const value = Number(text);
  return Number.isFinite(value) ? value : null;
}

/**
 * The filters as the stores read them: one field per key, `[text, number]` (number null when the
 * text is no JSON number), as a JSON text that the SQL walks with json_each, so that the key is
 * compared with the stored keys as a value, never read as a path. A number is written as
 * JSON.stringify writes it, the shortest text of its double, as the stored one is; so its value
 * is the same whichever way an engine reads it (a double, or PostgreSQL's numeric).
 */
export function extraFilterJson(extra: Record<string, string>): string {
  const fields: Record<string, [string, number | null]> = Object.create(null);
  for (const [key, text] of Object.entries(extra)) fields[key] = [text, extraNumber(text)];
  return JSON.stringify(fields);
}
