/**
 * The JSON body parser. Bodies nested deeper than MAX_DEPTH are refused before they are parsed,
 * so no later recursion (validation, storage, serialization) can run out of stack on them.
 * Keys such as `__proto__` stay plain data: JSON.parse defines them as own properties (G5).
 */
import { ApiError } from "../handlers/errors.ts";

/** Deeper than any real agent payload; shallower than any recursion limit on the way. */
export const MAX_DEPTH = 100;

const malformed = (message: string) => new ApiError(400, { error: "Malformed JSON", message });

/** True when arrays and objects nest deeper than `max` anywhere in the text. */
export function nestsDeeperThan(text: string, max: number): boolean {
  let depth = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 0x5c)
        i++; // a backslash escapes the next character
      else if (c === 0x22) inString = false;
    } else if (c === 0x22) inString = true;
    else if (c === 0x7b || c === 0x5b) {
      if (++depth > max) return true;
    } else if (c === 0x7d || c === 0x5d) depth--;
  }
  return false;
}

export function parseJsonBody(raw: string): unknown {
  const text = raw.charCodeAt(0) === 0xfeff ? raw.slice(1) : raw; // a byte order mark is not JSON
  if (text.trim() === "") throw malformed("The request body is empty; send a JSON object");
  if (nestsDeeperThan(text, MAX_DEPTH)) {
    throw new ApiError(400, {
      error: "Bad request",
      message: `The request body nests arrays and objects more than ${MAX_DEPTH} levels deep`,
    });
  }
  try {
    return JSON.parse(text);
  } catch (error) {
    throw malformed(`The request body is not valid JSON: ${(error as Error).message}`);
  }
}
