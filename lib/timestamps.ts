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

export function parseTimestamp(text: string): Timestamp | undefined {
  const m = PATTERN.exec(text);
  if (!m) return undefined;
  const [, y, mo, d, h, mi, s = "00", frac = "", , sign, oh = "00", om = "00"] = m;
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
  const date = new Date(0);
  date.setUTCFullYear(year, month - 1, day);
  date.setUTCHours(hour, minute - offset, second, 0);
  const utcYear = date.getUTCFullYear();
  if (utcYear < 0 || utcYear > 9999) return undefined;

  const digits = frac.slice(0, 6);
  const micros = digits === "" ? 0 : Number(digits.padEnd(6, "0"));
  const iso =
    `${pad(utcYear, 4)}-${pad(date.getUTCMonth() + 1)}-${pad(date.getUTCDate())}` +
    `T${pad(date.getUTCHours())}:${pad(date.getUTCMinutes())}:${pad(date.getUTCSeconds())}` +
    `${digits === "" ? "" : `.${digits}`}Z`;
  return { iso, us: date.getTime() * 1000 + micros };
}

export const isTimestamp = (text: string): boolean => parseTimestamp(text) !== undefined;

/** A clock reading (milliseconds since the epoch) as a stored timestamp. */
export function timestampFromMillis(ms: number): Timestamp {
  return { iso: new Date(ms).toISOString(), us: Math.floor(ms) * 1000 };
}

function daysInMonth(year: number, month: number): number {
  const date = new Date(0);
  date.setUTCFullYear(year, month, 0);
  return date.getUTCDate();
}
