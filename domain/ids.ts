import { randomBytes } from "node:crypto";

/** The last id made in this process: the next one in the same millisecond (or earlier) follows it. */
let last: Buffer | undefined;
let lastMs = -1;

/**
 * A time-ordered UUID (RFC 9562 version 7): 48 bits of Unix milliseconds, then random bits.
 * Monotonic within a millisecond (RFC 9562 §6.2, method 2): an id made in the same millisecond
 * as the last one is the last one plus 1 in its lowest 56 random bits, so that ids made one after
 * another in one millisecond sort in that order (two rows made in one millisecond list in the
 * order they were made when a list breaks ties by id). The first 48 bits are always `now` (E3:
 * the receive time), so an earlier `now` starts afresh.
 */
export function uuidv7(now = Date.now()): string {
  let bytes: Buffer | undefined;
  if (last !== undefined && now === lastMs) {
    bytes = Buffer.from(last);
    let i = 15;
    while (i >= 9 && bytes[i] === 0xff) bytes[i--] = 0;
    if (i >= 9) bytes[i] = (bytes[i] as number) + 1;
    else bytes = undefined; // 2^56 ids in one millisecond: random bits again
  }
  if (bytes === undefined) {
    bytes = randomBytes(16);
    bytes.writeUIntBE(now, 0, 6);
    bytes[6] = 0x70 | ((bytes[6] ?? 0) & 0x0f);
    bytes[8] = 0x80 | ((bytes[8] ?? 0) & 0x3f);
  }
  last = bytes;
  lastMs = now;
  const hex = bytes.toString("hex");
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}
