/**
 * The two request counters of the credentials plugin (http/auth.ts): O3, the per-key rate limit
 * (RateLimiter), and 4.6, failed API-key checks per client address (FailureLimiter).
 *
 * O3: a per-API-key request rate limit, as token buckets. Each key may burst `perMinute`
 * requests, and its bucket refills evenly over the minute, so a steady client at the limit is
 * never refused and a burst waits only as long as its excess needs.
 */
export class RateLimiter {
  readonly #buckets = new Map<string, { tokens: number; at: number }>();
  readonly #capacity: number;
  readonly #perMs: number;

  constructor(perMinute: number) {
    this.#capacity = perMinute;
    this.#perMs = perMinute / 60_000;
  }

  /** Takes one request from the key's bucket: 0 when allowed, else the seconds to wait. */
  take(key: string, now: number): number {
    const bucket = this.#buckets.get(key);
    const tokens = bucket ? Math.min(this.#capacity, bucket.tokens + (now - bucket.at) * this.#perMs) : this.#capacity;
    if (tokens >= 1) {
      if (!bucket && this.#buckets.size >= 100_000) this.#prune(now);
      this.#buckets.set(key, { tokens: tokens - 1, at: now });
      return 0;
    }
    return Math.max(1, Math.ceil((1 - tokens) / this.#perMs / 1000));
  }

  /** Forgets the buckets that are full again (they behave exactly like a new one). */
  #prune(now: number) {
    for (const [key, bucket] of this.#buckets) {
      if (bucket.tokens + (now - bucket.at) * this.#perMs >= this.#capacity) this.#buckets.delete(key);
    }
  }
}

/**
 * Counts failed API-key checks per client address in fixed windows: once `limit` failures fall
 * in one window, the address is refused until that window ends.
 */
export class FailureLimiter {
  readonly #windows = new Map<string, { start: number; count: number }>();
  readonly #limit: number;
  readonly #windowMs: number;

  constructor(limit: number, windowMs: number) {
    this.#limit = limit;
    this.#windowMs = windowMs;
  }

  /** Seconds the address must wait, or 0 when it may try. */
  retryAfter(address: string, now: number): number {
    const window = this.#current(address, now);
    if (!window || window.count < this.#limit) return 0;
    return Math.max(1, Math.ceil((window.start + this.#windowMs - now) / 1000));
  }

  fail(address: string, now: number): void {
    const window = this.#current(address, now);
    if (window) window.count += 1;
    else {
      if (this.#windows.size >= 100_000) this.#prune(now);
      this.#windows.set(address, { start: now, count: 1 });
    }
  }

  #current(address: string, now: number) {
    const window = this.#windows.get(address);
    if (window && now - window.start >= this.#windowMs) {
      this.#windows.delete(address);
      return undefined;
    }
    return window;
  }

  #prune(now: number) {
    for (const [address, window] of this.#windows) {
      if (now - window.start >= this.#windowMs) this.#windows.delete(address);
    }
  }
}
