/**
 * The JSON body parser. One pass over the text, before JSON.parse, refuses what no later step
 * could handle: arrays and objects nested deeper than MAX_DEPTH (validation, storage and
 * serialization all recurse), and `\ud800`-style escapes of lone UTF-16 surrogates (such a
 * string has no UTF-8 form, so it could be neither stored as sent nor put into a URL), and numbers
 * beyond a double's range (JSON.parse would make them Infinity, which JSON cannot say back).
 * Keys such as `__proto__` stay plain data: JSON.parse defines them as own properties (G5).
 * refuseNul refuses U+0000 in any string or key (decision 017), with the paths where it is.
 */
import { ApiError, type ErrorDetail, invalidRequest } from "../domain/errors.ts";
import { hasNul, jsonTextHasNul, NUL_IN_KEY, NUL_IN_VALUE } from "../domain/nul.ts";
import { childPath } from "./validation.ts";

/** Deeper than any real agent payload; shallower than any recursion limit on the way. */
export const MAX_DEPTH = 100;

const badRequest = (message: string) => new ApiError(400, { error: "Bad request", message });
const malformed = (message: string) => new ApiError(400, { error: "Malformed JSON", message });

const NUMBER_CHAR = /[0-9eE.+-]/;
const hex = (text: string, at: number) =>
  /^[0-9a-fA-F]{4}$/.test(text.slice(at, at + 4)) ? Number.parseInt(text.slice(at, at + 4), 16) : -1;
const isHigh = (code: number) => code >= 0xd800 && code <= 0xdbff;
const isLow = (code: number) => code >= 0xdc00 && code <= 0xdfff;

/** What makes the text unacceptable before parsing, or undefined. */
export function scanJson(text: string, maxDepth = MAX_DEPTH): string | undefined {
  let depth = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 0x22) inString = false;
      else if (c === 0x5c) {
        // a backslash escapes the next character; \uXXXX must not leave a surrogate alone
        if (text.charCodeAt(i + 1) === 0x75) {
          const code = hex(text, i + 2);
          if (
            isHigh(code) &&
            text.charCodeAt(i + 6) === 0x5c &&
            text.charCodeAt(i + 7) === 0x75 &&
            isLow(hex(text, i + 8))
          ) {
            i += 11;
            continue;
          }
          if (isHigh(code) || isLow(code)) {
            return `The request body has a lone UTF-16 surrogate (${text.slice(i, i + 6)}) at position ${i}; strings must be valid Unicode`;
          }
          i += 5;
        } else i++;
      }
    } else if (c === 0x22) inString = true;
    else if (c === 0x2d || (c >= 0x30 && c <= 0x39)) {
      // A number: one too big for a double would parse as Infinity and be stored as null.
      let end = i + 1;
      while (end < text.length && NUMBER_CHAR.test(text.charAt(end))) end++;
      const token = text.slice(i, end);
      if ((token.length > 300 || /[eE]/.test(token)) && !Number.isFinite(Number(token))) {
        return `The request body has a number too large for a double (${token.slice(0, 40)}) at position ${i}`;
      }
      i = end - 1;
    } else if (c === 0x7b || c === 0x5b) {
      if (++depth > maxDepth) return `The request body nests arrays and objects more than ${maxDepth} levels deep`;
    } else if (c === 0x7d || c === 0x5d) depth--;
  }
  return undefined;
}

/**
 * Whether a parsed value is within what scanJson allows: checked on the parsed value, which is
 * several times faster than scanning the text character by character in JavaScript (strings are
 * checked natively by isWellFormed). The recursion stops at MAX_DEPTH.
 */
function acceptable(value: unknown, depth: number): boolean {
  if (typeof value === "string") return (value as WellFormed).isWellFormed();
  if (typeof value === "number") return Number.isFinite(value);
  if (typeof value !== "object" || value === null) return true;
  if (depth >= MAX_DEPTH) return false;
  if (Array.isArray(value)) return value.every((item) => acceptable(item, depth + 1));
  for (const key in value) {
    if (!(key as WellFormed).isWellFormed() || !acceptable((value as Record<string, unknown>)[key], depth + 1)) {
      return false;
    }
  }
  return true;
}

/** String.prototype.isWellFormed is in Node 20 but not yet in TypeScript's ES2023 library. */
type WellFormed = string & { isWellFormed(): boolean };

export function parseJsonBody(raw: string): unknown {
  const text = raw.charCodeAt(0) === 0xfeff ? raw.slice(1) : raw; // a byte order mark is not JSON
  if (text.trim() === "") throw malformed("The request body is empty; send a JSON object");
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    // Nesting deep enough can exhaust the parser itself: say that rather than "not JSON".
    const problem = scanJson(text);
    if (problem !== undefined) throw badRequest(problem);
    throw malformed(`The request body is not valid JSON: ${(error as Error).message}`);
  }
  // The common case ends here; a refused body is scanned again for the message that says where.
  if (acceptable(value, 0)) return value;
  throw badRequest(scanJson(text) ?? "The request body has a value that cannot be stored as sent");
}

/** The most places a refusal of U+0000 lists; its message counts them all. */
export const MAX_NUL_DETAILS = 20;

/**
 * Decision 017: a body with U+0000 in any string value or object key, however deep and whatever
 * the schema says of that place, is a 400 whose details give each place (a key's own path for a
 * key), the first MAX_NUL_DETAILS of them. The text is searched first, natively
 * (domain/nul.ts): only a body that holds the escape is walked, for the paths.
 */
export function refuseNul(text: string, value: unknown): void {
  if (!jsonTextHasNul(text)) return;
  const details: ErrorDetail[] = [];
  let total = 0;
  const found = (path: string, message: string) => {
    if (total++ < MAX_NUL_DETAILS) details.push({ path, message });
  };
  // The parser allowed at most MAX_DEPTH levels, so the recursion is bounded.
  const walk = (node: unknown, path: string) => {
    if (typeof node === "string") {
      if (hasNul(node)) found(path, NUL_IN_VALUE);
    } else if (Array.isArray(node)) {
      for (let i = 0; i < node.length; i++) walk(node[i], childPath(path, i));
    } else if (typeof node === "object" && node !== null) {
      for (const [key, item] of Object.entries(node)) {
        const at = childPath(path, key);
        if (hasNul(key)) found(at, NUL_IN_KEY);
        walk(item, at);
      }
    }
  };
  walk(value, "");
  if (total > 0) throw invalidRequest(details, total);
}
