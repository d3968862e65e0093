/**
 * U+0000 (NUL), which agentmon refuses in any text it is sent (decision 017): PostgreSQL cannot
 * keep it in text (nor jsonb the escape `\u0000`), and both engines must answer every request
 * alike. It is refused where requests come in (http/json.ts, http/parameters.ts, and
 * services/otlp.ts through ingest/otlp/nul.ts); these are the checks the layers share.
 */

/** The detail of a value, or of a query or path parameter, that holds a NUL. */
export const NUL_IN_VALUE = "must not contain the character U+0000 (NUL)";

/** The detail of an object key that holds a NUL (the path is the key's own). */
export const NUL_IN_KEY = "is a key with the character U+0000 (NUL); keys must not contain it either";

/** The detail of a query parameter whose name holds a NUL. */
export const NUL_IN_NAME = "is a parameter name with the character U+0000 (NUL)";

export const hasNul = (text: string): boolean => text.includes("\0");

const ESCAPE = "\\u0000";

/**
 * Whether a JSON text encodes a NUL. Valid JSON can hold one only as the escape `\u0000` (a raw
 * control character is not JSON), and that escape is one only when an odd number of backslashes
 * leads to the `u`: in `\\u0000` the first backslash escapes the second, and `u0000` is text. A
 * native search, so a text without the escape (every real request) costs next to nothing.
 */
export function jsonTextHasNul(text: string): boolean {
  for (let at = text.indexOf(ESCAPE); at !== -1; at = text.indexOf(ESCAPE, at + ESCAPE.length)) {
    let backslashes = 1;
    while (at - backslashes >= 0 && text.charCodeAt(at - backslashes) === 0x5c) backslashes++;
    if (backslashes % 2 === 1) return true;
  }
  return false;
}
