/** Strings and object keys for the fuzzer: odd ones on purpose, long ones now and then, some exactly at a limit. */
import fc from "fast-check";
import { pickFrom } from "./values.ts";

// ---------------------------------------------------------------------------------- strings

/**
 * SQL metacharacters, escapes, invisible and right-to-left marks, emoji, NaN-like and prototype
 * words. No U+0000: a body holding it is refused (decision 017), so the generators of valid
 * values leave it out (noNul), and the fuzzer's invalid bodies put it in on purpose
 * (test/fuzz/invalid.ts). `"\\u0000"` below (a backslash, then `u0000`) is text, not a NUL.
 */
export const ODD_STRINGS = [
  "'",
  '"',
  "';--",
  "' OR '1'='1",
  '"; DROP TABLE sessions; --',
  "%",
  "_",
  "%_%",
  "\\",
  "\\\\'",
  "\u0001",
  "a\u0001b",
  "\n",
  "\r\n",
  "\t",
  "\u0085",
  "\u2028\u2029",
  "\u200b",
  "\u200d",
  "\u200e",
  "\u200f",
  "\u202e",
  "\u2066",
  "\ufeff",
  "\ufffd",
  "\uffff",
  "\u{10ffff}",
  "\u{e0001}",
  "😀",
  "👨‍👩‍👧‍👦",
  "🇺🇳",
  "é",
  "e\u0301",
  "ß",
  "İ",
  "ﷺ",
  "עברית",
  "العربية",
  "中文",
  "NaN",
  "-NaN",
  "Infinity",
  "-Infinity",
  "1e309",
  "-0",
  "0x10",
  "null",
  "undefined",
  "true",
  "__proto__",
  "constructor",
  "prototype",
  "toString",
  "hasOwnProperty",
  // biome-ignore lint/suspicious/noTemplateCurlyInString: a template-injection probe, on purpose
  "${7*7}",
  "{{7*7}}",
  "<script>alert(1)</script>",
  "../../etc/passwd",
  "%00",
  "%2e%2e%2f",
  "\\u0000",
  "\\ud800",
];

/** Object keys a client might send that are dangerous in JavaScript or awkward in paths (no U+0000, as above). */
export const ODD_KEYS = [
  "__proto__",
  "constructor",
  "prototype",
  "toString",
  "valueOf",
  "hasOwnProperty",
  "__defineGetter__",
  "",
  " ",
  "a.b",
  "a[0]",
  "0",
  "-1",
  "$ref",
  "'",
  '"',
  "\u0001",
  "😀",
  "\u202e",
  "OS Release",
];

/** `text` cut to at most `max` and padded to at least `min` code points (JSON Schema counts code points). */
export function clampText(text: string, min: number, max: number | undefined): string {
  const points = Array.from(text);
  const cut = max === undefined ? points : points.slice(0, max);
  while (cut.length < min) cut.push("x");
  return cut.join("");
}

const piece = fc.oneof(
  { weight: 4, arbitrary: fc.string({ unit: "binary", maxLength: 6 }) },
  { weight: 3, arbitrary: pickFrom(...ODD_STRINGS) },
  { weight: 1, arbitrary: fc.string({ unit: "grapheme", maxLength: 4 }) },
);

/** The text with each U+0000 made U+0001: what valid values are made of (see ODD_STRINGS). */
export const noNul = (text: string) => text.replaceAll("\0", "\u0001");

/** Well-formed Unicode text (no lone surrogates: a body cannot carry them, see lib/json.ts), without U+0000. */
export function textArb(min = 0, max?: number): fc.Arbitrary<string> {
  const short = fc.array(piece, { maxLength: 6 }).map((parts) => parts.join(""));
  // A long string: one random chunk repeated, so generating it stays cheap.
  const long = fc
    .tuple(fc.string({ unit: "binary", minLength: 1, maxLength: 8 }), fc.integer({ min: 1_000, max: 60_000 }))
    .map(([chunk, n]) => chunk.repeat(Math.ceil(n / chunk.length)));
  // Long strings are rare per string, yet most bodies hold dozens of strings.
  const choices: fc.WeightedArbitrary<string>[] = [
    { weight: 200, arbitrary: short },
    { weight: 1, arbitrary: long },
  ];
  // Strings exactly at the limit, where off-by-one and UTF-16 length bugs live.
  if (max !== undefined && max > 0) {
    choices.push({ weight: 12, arbitrary: fc.string({ unit: "binary", minLength: max, maxLength: max }) });
  }
  return fc.oneof(...choices).map((text) => clampText(noNul(text), min, max));
}

export const keyArb: fc.Arbitrary<string> = fc.oneof(
  { weight: 2, arbitrary: pickFrom("__proto__", "constructor", "prototype") },
  { weight: 2, arbitrary: pickFrom(...ODD_KEYS) },
  { weight: 3, arbitrary: fc.string({ unit: "binary", minLength: 1, maxLength: 12 }).map(noNul) },
  { weight: 1, arbitrary: textArb(0, 40) },
);
