/**
 * The ceiling on memory (docs/decisions/019-inflight-memory.md): the bytes of request bodies being
 * read or held in flight, counted against a budget. http/inflight.ts opens a hold per request
 * body and releases it once the request's answer is sent; GET /metrics shows the bytes held
 * (services/metrics.ts).
 */

/**
 * The default budget, for a server in 512 MB of memory: what it holds besides bodies, plus the
 * measured resident bytes per byte of body in flight times this, stays under 512 MB
 * (docs/decisions/019-inflight-memory.md).
 */
export const DEFAULT_INFLIGHT_BYTES = 128 * 1024 * 1024;

/** One request body's share of the budget; released once, however many times release() is called. */
export interface Hold {
  /** Bytes this body holds now. */
  readonly bytes: number;
  /** Adds `n` bytes; false (and nothing added) when they would pass the budget. */
  grow(n: number): boolean;
  /**
   * Makes the hold `n` bytes, whether or not they fit: what a parsed body costs is spent already,
   * and counting it only keeps new bodies out until it is released.
   */
  settle(n: number): void;
  release(): void;
}

export class InflightBytes {
  /** The budget, in bytes. */
  readonly limit: number;
  #used = 0;
  #holds = 0;

  constructor(limit: number) {
    this.limit = limit;
  }

  /** Bytes held by the bodies in flight. */
  get bytes(): number {
    return this.#used;
  }

  /** Bodies in flight. */
  get holds(): number {
    return this.#holds;
  }

  /**
   * Whether `n` more bytes fit beside what the others hold. A body alone in flight always fits:
   * the body limits bound it, and the server keeps taking work one body at a time even with a
   * budget below a body limit.
   */
  #fits(n: number, own: number): boolean {
    return this.#used + n <= this.limit || this.#used === own;
  }

  /** A hold of `initial` bytes (a declared Content-Length, or 0), or undefined when they do not fit. */
  open(initial: number): Hold | undefined {
    if (!this.#fits(initial, 0)) return undefined;
    this.#used += initial;
    this.#holds++;
    let bytes = initial;
    let released = false;
    const ledger = this;
    return {
      get bytes() {
        return bytes;
      },
      grow(n: number): boolean {
        if (released) return true; // the answer is gone: nothing more is kept for it
        if (!ledger.#fits(n, bytes)) return false;
        bytes += n;
        ledger.#used += n;
        return true;
      },
      settle(n: number) {
        if (released) return;
        ledger.#used += n - bytes;
        bytes = n;
      },
      release() {
        if (released) return;
        released = true;
        ledger.#used -= bytes;
        ledger.#holds--;
      },
    };
  }
}
