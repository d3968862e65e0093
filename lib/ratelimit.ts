/**
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
