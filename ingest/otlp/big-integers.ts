/**
 * JSON.parse reads every number as a double, so an `intValue` or a time written as a bare number
 * past 2^53 loses its last digits before any reader sees it. OTLP/JSON says 64-bit integers are
 * strings, but accepts numbers (otlp.md T11), and T11 wants `intValue` to keep its digits. So the
 * HTTP layer passes the body's text through quoteBigIntegers before JSON.parse.
 */

const KEYS =
  "intValue|int_value|startTimeUnixNano|start_time_unix_nano|endTimeUnixNano|end_time_unix_nano|" +
  "timeUnixNano|time_unix_nano|observedTimeUnixNano|observed_time_unix_nano";

/**
 * A cheap first look: no key at all followed by a bare number of 16 digits (2^53 has 16), nothing
 * to do. Naming no key makes it twice as fast as naming them, and clients that follow the
 * specification (times and intValue as strings, or small) never get past it.
 */
const CANDIDATE = /"\s*:\s*-?[0-9]{16}/;

/**
 * Either one of those keys with its big integer, or any other string, whole. Matching every
 * string from its opening quote keeps the scan in step with the JSON: a key-like text inside a
 * string (`"a \"intValue\": 1…"`) is consumed with its string and never seen as a key. The
 * string pattern is the unrolled `"[^"\\]*(?:\\.[^"\\]*)*"`, which does not backtrack per
 * character. The integer must end there: a 20-digit number with a fraction is left to JSON.parse.
 */
const TOKEN = new RegExp(
  `("(?:${KEYS})"\\s*:\\s*)(-?[0-9]{16,})(?![0-9.eE])|"[^"\\\\]*(?:\\\\[\\s\\S][^"\\\\]*)*"`,
  "g",
);

function quote(match: string, key: string | undefined, digits: string | undefined): string {
  return key === undefined ? match : `${key}"${digits}"`;
}

/**
 * The text with every integer of 16 digits or more that is the value of intValue or of a time
 * field put in quotes, so that JSON.parse keeps its digits; everything else, strings included,
 * is left as it was. The text is returned as is when there is no such integer.
 */
export function quoteBigIntegers(text: string): string {
  if (!CANDIDATE.test(text)) return text;
  return text.replace(TOKEN, quote);
}
