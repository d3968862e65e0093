-- The counters of 4.6 (failed API-key checks per client address) and O3 (requests per API key),
-- shared by every agentmon node on this database (http/ratelimit-shared.ts, decision 018).
-- UNLOGGED: they cost no WAL, and a crash of PostgreSQL empties them, which only forgets who was
-- being counted. They are created here, under the migrations' lock, and never by
-- rate-limiter-flexible at run time (several nodes start at once; it is given tableCreated: true).
-- Rows an hour past their use are deleted every 5 minutes by each node.

-- 4.6, in fixed windows: rate-limiter-flexible's RateLimiterPostgres layout, exactly. key is
-- '<prefix>:auth-fail:<address>', points the failures counted in the window, expire the window's
-- end (milliseconds since the epoch).
CREATE UNLOGGED TABLE rate_limits (
  key varchar(255) PRIMARY KEY,
  points integer NOT NULL DEFAULT 0,
  expire bigint
);

-- O3, a token bucket per API key: key is '<prefix>:rate:<API key id>', tokens what the bucket held
-- just after the request taken at taken_at (milliseconds since the epoch); it refills from there.
CREATE UNLOGGED TABLE rate_buckets (
  key varchar(255) PRIMARY KEY,
  tokens double precision NOT NULL,
  taken_at bigint NOT NULL
);
