/**
 * Timestamps (contract G6): RFC 3339 / ISO 8601 date-times, `T` or a space between date and
 * time, optional seconds, optional offset (taken as UTC when absent), fractions kept to the
 * microsecond. The result is a UTC string ending in `Z` and the instant in microseconds, which
 * is what storage sorts on.
 */
export interface Timestamp {
  iso: string;
  us: number;
}

const PATTERN =
  /^(\d{4})-(\d{2})-(\d{2})[Tt ](\d{2}):(\d{2})(?::(\d{2})(?:[.,](\d+))?)?(?:([Zz])|([+-])(\d{2})(?::?(\d{2}))?)?$/;

const pad = (n: number, width = 2) => String(n).padStart(width, "0");

const DAYS = [31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];
const isLeap = (year: number) => (year % 4 === 0 && year % 100 !== 0) || year % 400 === 0;
const daysInMonth = (year: number, month: number) => (month === 2 && isLeap(year) ? 29 : (DAYS[month - 1] ?? 0));

/**
 * Every event carries one or two timestamps, checked once by ajv (the `date-time` format) and
 * converted right after by lib/records.ts: the conversion of the check is kept for the
 * conversion, in a small cache emptied whenever it fills.
 */
const recent = new Map<string, Timestamp | undefined>();

export function parseTimestamp(text: string): Timestamp | undefined {
  if (recent.has(text)) return recent.get(text);
  const result = convert(text);
  if (recent.size >= 4096) recent.clear();
  recent.set(text, result);
  return result;
}

function convert(text: string): Timestamp | undefined {
  const m = PATTERN.exec(text);
  if (!m) return undefined;
  const [, y = "", mo = "", d = "", h = "", mi = "", s = "00", frac = "", , sign, oh = "00", om = "00"] = m;
  const year = Number(y);
  const month = Number(mo);
  const day = Number(d);
  const hour = Number(h);
  const minute = Number(mi);
  const second = Number(s);
  if (month < 1 || month > 12 || day < 1 || hour > 23 || minute > 59 || second > 59) return undefined;
  if (day > daysInMonth(year, month)) return undefined;
  const offsetHours = Number(oh);
  const offsetMinutes = Number(om);
  if (offsetHours > 23 || offsetMinutes > 59) return undefined;

  const offset = (sign === "-" ? -1 : 1) * (offsetHours * 60 + offsetMinutes);
  // Date.UTC reads years 0-99 as 1900-1999; a Date set field by field does not.
  let ms: number;
  if (year >= 100) ms = Date.UTC(year, month - 1, day, hour, minute - offset, second);
  else {
    const date = new Date(0);
    date.setUTCFullYear(year, month - 1, day);
    ms = date.setUTCHours(hour, minute - offset, second, 0);
  }
  const digits = frac.slice(0, 6);
  const micros = digits === "" ? 0 : Number(digits.padEnd(6, "0"));
  const fraction = digits === "" ? "" : `.${digits}`;
  // Already UTC (the usual case): the fields as given are the UTC ones.
  if (offset === 0) return { iso: `${y}-${mo}-${d}T${h}:${mi}:${s}${fraction}Z`, us: ms * 1000 + micros };
  const date = new Date(ms);
  const utcYear = date.getUTCFullYear();
  if (utcYear < 0 || utcYear > 9999) return undefined;
  const iso =
    `${pad(utcYear, 4)}-${pad(date.getUTCMonth() + 1)}-${pad(date.getUTCDate())}` +
    `T${pad(date.getUTCHours())}:${pad(date.getUTCMinutes())}:${pad(date.getUTCSeconds())}${fraction}Z`;
  return { iso, us: ms * 1000 + micros };
}

export const isTimestamp = (text: string): boolean => parseTimestamp(text) !== undefined;

/** A clock reading (milliseconds since the epoch) as a stored timestamp. */
export function timestampFromMillis(ms: number): Timestamp {
  return { iso: new Date(ms).toISOString(), us: Math.floor(ms) * 1000 };
}
