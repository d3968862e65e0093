/**
 * The two request counters of the credentials plugin (http/auth.ts): 4.6, failed API-key checks
 * per client address, and O3, the per-key request rate limit. http/auth.ts sees them through
 * RequestLimits; memoryLimits keeps them in this process (one node, the default), and
 * http/ratelimit-shared.ts keeps them in PostgreSQL or Redis, shared by every node
 * (docs/decisions/018-shared-limits.md).
 */

/** The numbers of 4.6 and O3. */
export interface LimitSettings {
  /** 4.6: failed API-key checks allowed per client address within one window. */
  failureLimit: number;
  failureWindowMs: number;
  /** O3: requests per minute per API key (with the JWTs it obtained); 0 turns it off. */
  ratePerMinute: number;
}

/**
 * The counters, wherever they are kept. Every answer is in whole seconds to wait, 0 for none, as
 * `Retry-After` says it. An implementation answers even when its store fails (see
 * http/ratelimit-shared.ts `withFallback`): a counter never turns a request into a 500.
 */
export interface RequestLimits {
  /** 4.6: the seconds this client address must wait before its next API-key check, or 0. */
  failureWait(address: string): Promise<number>;
  /** 4.6: counts one failed API-key check from this client address. */
  recordFailure(address: string): Promise<void>;
  /** O3: takes one request from the API key's allowance: 0 when it may go ahead, else the seconds to wait. */
  takeRequest(keyId: string): Promise<number>;
  /** Stops its timers and closes what it opened itself (never a pool or client it was given). */
  close(): Promise<void>;
}

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

/** The counters of one process, on the app's clock: a restart forgets them, and each node counts alone. */
export function memoryLimits(settings: LimitSettings, now: () => number = Date.now): RequestLimits {
  const failures = new FailureLimiter(settings.failureLimit, settings.failureWindowMs);
  const rate = settings.ratePerMinute > 0 ? new RateLimiter(settings.ratePerMinute) : undefined;
  return {
    failureWait: async (address) => failures.retryAfter(address, now()),
    recordFailure: async (address) => failures.fail(address, now()),
    takeRequest: async (keyId) => rate?.take(keyId, now()) ?? 0,
    close: async () => {},
  };
}
