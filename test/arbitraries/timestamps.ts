/** G6 timestamps for the fuzzer: valid ones in every documented form, near misses, and their stored UTC form. */
import fc from "fast-check";
import { textArb } from "./strings.ts";
import { pickFrom } from "./values.ts";

// ---------------------------------------------------------------------------------- timestamps (G6)

const pad = (n: number, width = 2) => String(n).padStart(width, "0");
const isLeap = (y: number) => (y % 4 === 0 && y % 100 !== 0) || y % 400 === 0;
const daysIn = (y: number, m: number) => [31, isLeap(y) ? 29 : 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31][m - 1] ?? 0;

/** Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's days_from_civil). */
function daysFromCivil(y: number, m: number, d: number): number {
  const yy = m <= 2 ? y - 1 : y;
  const era = Math.floor(yy / 400);
  const yoe = yy - era * 400;
  const doy = Math.floor((153 * (m + (m > 2 ? -3 : 9)) + 2) / 5) + d - 1;
  const doe = yoe * 365 + Math.floor(yoe / 4) - Math.floor(yoe / 100) + doy;
  return era * 146097 + doe - 719468;
}

function civilFromDays(z0: number): [number, number, number] {
  const z = z0 + 719468;
  const era = Math.floor(z / 146097);
  const doe = z - era * 146097;
  const yoe = Math.floor((doe - Math.floor(doe / 1460) + Math.floor(doe / 36524) - Math.floor(doe / 146096)) / 365);
  const doy = doe - (365 * yoe + Math.floor(yoe / 4) - Math.floor(yoe / 100));
  const mp = Math.floor((5 * doy + 2) / 153);
  const d = doy - Math.floor((153 * mp + 2) / 5) + 1;
  const m = mp + (mp < 10 ? 3 : -9);
  return [yoe + era * 400 + (m <= 2 ? 1 : 0), m, d];
}

const G6 =
  /^(\d{4})-(\d{2})-(\d{2})[Tt ](\d{2}):(\d{2})(?::(\d{2})(?:[.,](\d+))?)?(?:[Zz]|([+-])(\d{2})(?::?(\d{2}))?)?$/;

/**
 * The stored form of a G6 timestamp (UTC, `Z`, the fraction's first six digits as given), or
 * undefined when the text is not one. Written from the contract, apart from lib/timestamps.ts.
 */
export function utcOf(text: string): string | undefined {
  const m = G6.exec(text);
  if (!m) return undefined;
  const [y, mo, d, h, mi] = m.slice(1, 6).map(Number) as [number, number, number, number, number];
  const s = Number(m[6] ?? 0);
  const offset = (m[8] === "-" ? -1 : 1) * (Number(m[9] ?? 0) * 60 + Number(m[10] ?? 0));
  if (mo < 1 || mo > 12 || d < 1 || d > daysIn(y, mo) || h > 23 || mi > 59 || s > 59) return undefined;
  if (Number(m[9] ?? 0) > 23 || Number(m[10] ?? 0) > 59) return undefined;
  const minutes = daysFromCivil(y, mo, d) * 1440 + h * 60 + mi - offset;
  const [uy, um, ud] = civilFromDays(Math.floor(minutes / 1440));
  if (uy < 0 || uy > 9999) return undefined;
  const dayMinutes = minutes - Math.floor(minutes / 1440) * 1440;
  const fraction = (m[7] ?? "").slice(0, 6);
  return `${pad(uy, 4)}-${pad(um)}-${pad(ud)}T${pad(Math.floor(dayMinutes / 60))}:${pad(dayMinutes % 60)}:${pad(s)}${fraction === "" ? "" : `.${fraction}`}Z`;
}

/** Valid G6 timestamps in every documented form; years 0001-9998 so that UTC stays in 0000-9999. */
export const timestampArb: fc.Arbitrary<string> = fc
  .record({
    y: fc.integer({ min: 1, max: 9998 }),
    m: fc.integer({ min: 1, max: 12 }),
    d: fc.integer({ min: 1, max: 31 }),
    h: fc.integer({ min: 0, max: 23 }),
    mi: fc.integer({ min: 0, max: 59 }),
    s: fc.option(fc.integer({ min: 0, max: 59 }), { nil: undefined }),
    fraction: fc.option(fc.stringMatching(/^\d{1,9}$/), { nil: undefined }),
    sep: pickFrom("T", "t", " "),
    offset: fc.oneof(
      pickFrom("", "Z", "z", "+00:00", "-00:00"),
      fc
        .tuple(pickFrom("+", "-"), fc.integer({ min: 0, max: 23 }), fc.integer({ min: 0, max: 59 }))
        .chain(([sign, oh, om]) =>
          pickFrom(`${sign}${pad(oh)}:${pad(om)}`, `${sign}${pad(oh)}${pad(om)}`, `${sign}${pad(oh)}`),
        ),
    ),
  })
  .map(({ y, m, d, h, mi, s, fraction, sep, offset }) => {
    const day = Math.min(d, daysIn(y, m));
    const seconds = s === undefined ? "" : `:${pad(s)}${fraction === undefined ? "" : `.${fraction}`}`;
    return `${pad(y, 4)}-${pad(m)}-${pad(day)}${sep}${pad(h)}:${pad(mi)}${seconds}${offset}`;
  });

/** Text that is not a G6 timestamp: a date alone, out-of-range parts, NaN-like words, near misses. */
export const badTimestampArb: fc.Arbitrary<string> = fc
  .oneof(
    timestampArb.map((ts) => ts.slice(0, 10)), // a date alone
    timestampArb.map((ts) => `${ts.slice(0, 4)}-13${ts.slice(7)}`),
    timestampArb.map((ts) => `${ts.slice(0, 7)}-32${ts.slice(10)}`),
    timestampArb.map((ts) => `${ts.slice(0, 11)}24${ts.slice(13)}`),
    timestampArb.map((ts) => `${ts.slice(0, 14)}60${ts.slice(16)}`),
    timestampArb.map((ts) => `${ts.slice(0, 10)}X${ts.slice(11)}`),
    timestampArb.map((ts) => `${ts} `),
    timestampArb.map((ts) => ` ${ts}`),
    timestampArb.map((ts) => `${ts}\u0001`), // not U+0000: that is refused before any schema (decision 017)
    timestampArb.map((ts) => `${ts}Q`),
    timestampArb.map((ts) => `+${ts}`),
    timestampArb.map((ts) => ts.replace(/\d/, "\uff11")), // a full-width digit
    pickFrom(
      "",
      " ",
      "NaN",
      "Infinity",
      "-Infinity",
      "null",
      "now",
      "0",
      "1e3",
      "2026-02-29T00:00:00Z",
      "2026-02-30T10:00:00Z",
      "1900-02-29T00:00Z",
      "2026-11-22T05:09:43+24:00",
      "2026-11-22T05:09:43+05:60",
      "2026-11-22T05:09:43.Z",
      "2026-11-22T05:09:4Z",
      "2026-11-22T5:09:43Z",
      "2026-1-22T05:09:43Z",
      "12026-11-22T05:09:43Z",
      "2026-11-22T05Z",
      "9999-12-31T23:59:59-01:00",
      "0000-01-01T00:00:00+00:01",
      "2026-11-22T05:09:43Z[Europe/Paris]",
      "Sun, 22 Nov 2026 05:09:43 GMT",
      "1795325383",
    ),
    textArb(0, 40),
  )
  .filter((text) => utcOf(text) === undefined);
