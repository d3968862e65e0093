/**
 * Issue 14, decision 018: 4.6 (failed API-key checks per address) and O3 (requests per API key)
 * counted in this process, in PostgreSQL and in Redis. Every backend passes the same table of
 * behaviours, through RequestLimits and through the app; two nodes on one PostgreSQL database, or
 * on one Redis, count together; a store that fails is counted around on each node, never a 500.
 * Real services: PostgreSQL (test/postgres.ts: a database of this file's own, migrated with
 * db/postgres/migrations/002-rate-limits.sql, dropped at the end) and Redis (test/redis.ts)
 * (keys under a prefix of this file's own, deleted at the end).
 */
import { randomBytes, randomUUID } from "node:crypto";
import { readFileSync } from "node:fs";
import { setTimeout as sleep } from "node:timers/promises";
import { Redis } from "ioredis";
import pg from "pg";
import t, { type Test } from "tap";
import { chooseLimits } from "../../cli/limits.ts";
import { type LimitSettings, memoryLimits, type RequestLimits } from "../../http/ratelimit.ts";
import { postgresLimits, redisLimits, withFallback } from "../../http/ratelimit-shared.ts";
import { T0, tempDb } from "../auth.helpers.ts";
import { API_KEY, build, INVALID_API_KEY, isAnswer, isError, type TestApp, UNKNOWN_KEY } from "../helper.ts";
import { ADMIN_URL, urlOf } from "../postgres.ts";
import { REDIS_URL } from "../redis.ts";
import { capture } from "../server.helpers.ts";

const REDIS = REDIS_URL;
const MIGRATION = readFileSync(new URL("../../db/postgres/migrations/002-rate-limits.sql", import.meta.url), "utf8");

// ----------------------------------------------------------------------------- the stores

/** This file's database, migrated with 002-rate-limits.sql; dropped (forced) when the file ends. */
async function migratedDatabase(): Promise<string> {
  const name = `agentmon_limits_${randomBytes(6).toString("hex")}`;
  const admin = new pg.Client({ connectionString: ADMIN_URL });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${name}`);
  t.teardown(async () => {
    await admin.query(`DROP DATABASE ${name} WITH (FORCE)`);
    await admin.end();
  });
  const client = new pg.Client({ connectionString: urlOf(name) });
  await client.connect();
  await client.query(MIGRATION);
  await client.end();
  return urlOf(name);
}

const database = await migratedDatabase();
const redisAdmin = new Redis(REDIS);
t.teardown(() => redisAdmin.quit());
/** Every Redis key of this file starts with it; they are deleted when the file ends (before the quit above). */
const prefix = `agentmon-test-${randomBytes(6).toString("hex")}`;
t.teardown(async () => {
  const keys = await redisAdmin.keys(`${prefix}:*`);
  if (keys.length > 0) await redisAdmin.del(...keys);
});

/** A pool on this file's database (another node's, when called again), ended when the test ends. */
function poolFor(t: Test): pg.Pool {
  const pool = new pg.Pool({ connectionString: database, max: 2 });
  pool.on("error", () => {}); // a dropped idle connection must not kill the test process
  t.teardown(() => pool.end());
  return pool;
}

/** A test's warnings: a shared store that falls back to memory here would hide what is under test. */
const noWarning = (t: Test) => (line: string) => t.fail(`unexpected warning: ${line}`);

interface Backend {
  name: "memory" | "postgres" | "redis";
  /** Counts together with every other node of the same test (not so in memory). */
  shared: boolean;
  /** A node's counters over this backend's one store, closed when the test ends. */
  node(t: Test, settings: LimitSettings, now?: () => number): Promise<RequestLimits>;
}

const BACKENDS: Backend[] = [
  { name: "memory", shared: false, node: async (_t, settings, now) => memoryLimits(settings, now) },
  {
    name: "postgres",
    shared: true,
    async node(t, settings, now) {
      const limits = postgresLimits({ ...settings, pool: poolFor(t), prefix, now, warn: noWarning(t) });
      t.teardown(() => limits.close());
      return limits;
    },
  },
  {
    name: "redis",
    shared: true,
    async node(t, settings, now) {
      const limits = await redisLimits({ ...settings, redis: REDIS, prefix, now, warn: noWarning(t) });
      t.teardown(() => limits.close());
      return limits;
    },
  },
];

let counter = 0;
/** A client address no other test uses (the stores outlive each test). */
const address = () => `10.14.${Math.floor(++counter / 250)}.${(counter % 250) + 1}`;
const DEFAULTS: LimitSettings = { failureLimit: 20, failureWindowMs: 60_000, ratePerMinute: 0 };

// ----------------------------------------------------------------------------- one table, every backend

for (const backend of BACKENDS) {
  t.test(`${backend.name}: 4.6 after 20 failures the address waits out the window, and only it`, async (t) => {
    const limits = await backend.node(t, DEFAULTS);
    const from = address();
    const started = Date.now();
    for (let i = 1; i <= 19; i++) await limits.recordFailure(from);
    t.equal(await limits.failureWait(from), 0, "19 failures: it may still try");
    await limits.recordFailure(from);
    const wait = await limits.failureWait(from);
    const elapsed = Date.now() - started;
    t.ok(wait <= 60 && wait >= Math.floor((60_000 - elapsed) / 1000), `20 failures: ${wait} s, the rest of 60 s`);
    t.equal(await limits.failureWait(address()), 0, "another address is not affected");
  });

  t.test(`${backend.name}: 4.6 Retry-After is honest: once it has passed, the address may try again`, async (t) => {
    const limits = await backend.node(t, { ...DEFAULTS, failureLimit: 1, failureWindowMs: 1000 });
    const from = address();
    const started = Date.now();
    await limits.recordFailure(from);
    const wait = await limits.failureWait(from);
    // Only a machine stalled for the whole window would see it end already.
    if (Date.now() - started < 1000) t.equal(wait, 1, "limited for the rest of its 1 s window");
    await sleep(wait * 1000 + 20);
    t.equal(await limits.failureWait(from), 0, `free after Retry-After (${wait} s)`);
  });

  t.test(`${backend.name}: 4.6 failures in different windows do not add up`, async (t) => {
    const limits = await backend.node(t, { ...DEFAULTS, failureLimit: 2, failureWindowMs: 1000 });
    const from = address();
    await limits.recordFailure(from);
    await sleep(1100); // past the first failure's window
    const started = Date.now();
    await limits.recordFailure(from);
    t.equal(await limits.failureWait(from), 0, "one failure in each window never reaches 2");
    await limits.recordFailure(from);
    const wait = await limits.failureWait(from);
    if (Date.now() - started < 1000) t.equal(wait, 1, "two in the same window do");
  });

  t.test(`${backend.name}: O3 a bucket of n requests, refilled evenly over the minute`, async (t) => {
    let clock = T0;
    const limits = await backend.node(t, { ...DEFAULTS, ratePerMinute: 3 }, () => clock);
    const key = randomUUID();
    for (let i = 1; i <= 3; i++) t.equal(await limits.takeRequest(key), 0, `request ${i} of 3: a burst`);
    t.equal(await limits.takeRequest(key), 20, "the 4th waits 20 s: one request comes back every 20 s");
    t.equal(await limits.takeRequest(randomUUID()), 0, "another key has its own bucket");
    clock += 19_000;
    t.equal(await limits.takeRequest(key), 1, "19 s later, 1 s to wait");
    clock += 1_000;
    t.equal(await limits.takeRequest(key), 0, "20 s later, one request");
    t.equal(await limits.takeRequest(key), 20, "and one only");
    clock += 60_000;
    for (let i = 1; i <= 3; i++) t.equal(await limits.takeRequest(key), 0, `a minute later, request ${i} of 3`);
    t.equal(await limits.takeRequest(key), 20, "then the bucket is empty again");
  });

  t.test(`${backend.name}: O3 a steady client at the limit is never refused`, async (t) => {
    let clock = T0;
    const limits = await backend.node(t, { ...DEFAULTS, ratePerMinute: 6 }, () => clock);
    const key = randomUUID();
    for (let i = 0; i < 30; i++) {
      if ((await limits.takeRequest(key)) !== 0) t.fail(`request ${i} at 6 a minute was refused`);
      clock += 10_000;
    }
    t.pass("30 requests, one every 10 s, at 6 a minute");
  });

  t.test(`${backend.name}: O3 off (0) takes nothing`, async (t) => {
    const limits = await backend.node(t, DEFAULTS);
    const key = randomUUID();
    for (let i = 0; i < 100; i++) if ((await limits.takeRequest(key)) !== 0) t.fail(`request ${i} refused`);
    t.pass("100 requests of one key");
  });

  t.test(
    `${backend.name}: through the app, 20 failed keys then 429 with Retry-After, even for the right key`,
    async (t) => {
      const app = await build(t, { limits: await backend.node(t, DEFAULTS) });
      const from = address();
      for (let i = 1; i <= 20; i++) {
        const res = await app.post(
          "/v2/create_session",
          { session: { id: "x" } },
          { "x-agentmon-api-key": UNKNOWN_KEY },
          from,
        );
        if (res.statusCode !== 401) t.fail(`failure ${i} answered ${res.statusCode}`);
      }
      const res = await app.post(
        "/v2/create_session",
        { session: { id: "s" } },
        { "x-agentmon-api-key": API_KEY },
        from,
      );
      is429(t, res, 60, "the right key, 21st call");
      isAnswer(t, await app.post("/v2/create_session", { session: { id: "x" } }, {}, address()), 401, INVALID_API_KEY);
    },
  );

  t.test(`${backend.name}: through the app, O3 answers 429 with the bucket's Retry-After`, async (t) => {
    let clock = T0;
    const now = () => clock;
    const app = await build(t, { now, limits: await backend.node(t, { ...DEFAULTS, ratePerMinute: 3 }, now) });
    const jwt = await app.session("rl-1");
    t.equal((await app.withJwt("/v2/create_agent", { id: "a1" }, jwt)).statusCode, 200);
    t.equal((await app.withKey("/v2/reauthorize_jwt", { session_id: "rl-1" })).statusCode, 200);
    const refused = await app.withJwt("/v2/create_agent", { id: "a2" }, jwt);
    isAnswer(t, refused, 429, {
      error: "Too many requests",
      message: "This API key is over its request rate limit; retry after 20 seconds",
    });
    t.equal(refused.headers["retry-after"], "20");
    clock += 20_000;
    t.equal((await app.withJwt("/v2/create_agent", { id: "a2" }, jwt)).statusCode, 200, "one request later");
  });
}

/** The 429 of 4.6: its body, and a Retry-After of whole seconds within the window. */
function is429(t: Test, res: Awaited<ReturnType<TestApp["post"]>>, windowSeconds: number, what: string) {
  isError(t, res, 429, "Too many requests");
  const retryAfter = Number(res.headers["retry-after"]);
  t.ok(
    Number.isInteger(retryAfter) && retryAfter >= 1 && retryAfter <= windowSeconds,
    `${what}: Retry-After ${res.headers["retry-after"]} within the window`,
  );
}

// ----------------------------------------------------------------------------- several nodes

/** Two nodes: apps on one database file, each with its own counters over the backend's one store. */
async function twoNodes(t: Test, backend: Backend, settings: LimitSettings, now?: () => number) {
  const dbPath = tempDb(t);
  const options = now ? { dbPath, now } : { dbPath };
  const a = await build(t, { ...options, limits: await backend.node(t, settings, now) });
  const b = await build(t, { ...options, limits: await backend.node(t, settings, now) });
  return [a, b] as const;
}

for (const backend of BACKENDS) {
  const together = backend.shared ? "together" : "each on its own (one process's memory)";
  t.test(`${backend.name}: two nodes count failed key checks ${together}`, async (t) => {
    const [a, b] = await twoNodes(t, backend, DEFAULTS);
    const from = address();
    const bad = { "x-agentmon-api-key": UNKNOWN_KEY };
    for (let i = 0; i < 10; i++) {
      is401(t, await a.post("/v2/create_session", { session: { id: "x" } }, bad, from), `node A, failure ${i + 1}`);
      is401(t, await b.post("/v2/create_session", { session: { id: "x" } }, bad, from), `node B, failure ${i + 1}`);
    }
    const right = { "x-agentmon-api-key": API_KEY };
    for (const [name, node] of [
      ["A", a],
      ["B", b],
    ] as const) {
      const res = await node.post("/v2/create_session", { session: { id: `on-${name}` } }, right, from);
      if (backend.shared) is429(t, res, 60, `10 + 10 failures: the right key on node ${name}`);
      else t.equal(res.statusCode, 200, `node ${name} saw 10 failures only`);
      const elsewhere = await node.post("/v2/create_session", { session: { id: `else-${name}` } }, right, address());
      t.equal(elsewhere.statusCode, 200, `node ${name}: another address is not affected`);
    }
  });

  t.test(`${backend.name}: two nodes take from one key's bucket ${together}`, async (t) => {
    const clock = T0;
    const [a, b] = await twoNodes(t, backend, { ...DEFAULTS, ratePerMinute: 3 }, () => clock);
    const jwt = await a.session("rl-shared"); // 1, on node A
    t.equal((await b.withJwt("/v2/create_agent", { id: "b1" }, jwt)).statusCode, 200, "2, on node B");
    t.equal((await a.withJwt("/v2/create_agent", { id: "a1" }, jwt)).statusCode, 200, "3, on node A");
    const fourth = await b.withJwt("/v2/create_agent", { id: "b2" }, jwt);
    if (backend.shared) {
      t.equal(fourth.statusCode, 429, "the 4th, on node B, is over the key's 3 a minute");
      t.equal(fourth.headers["retry-after"], "20");
      t.equal((await a.withJwt("/v2/create_agent", { id: "a2" }, jwt)).statusCode, 429, "and on node A");
    } else {
      t.equal(fourth.statusCode, 200, "node B took 1 of its own 3 only");
    }
  });
}

/** The 401 of a bad API key. */
function is401(t: Test, res: Awaited<ReturnType<TestApp["post"]>>, what: string) {
  t.equal(res.statusCode, 401, what);
  t.strictSame(res.json(), INVALID_API_KEY, what);
}

// ----------------------------------------------------------------------------- faults

t.test("a PostgreSQL that cannot be reached: each node counts on its own, one warning, no 500", async (t) => {
  const warnings: string[] = [];
  const pool = new pg.Pool({ connectionString: "postgres://postgres@127.0.0.1:1/none", connectionTimeoutMillis: 500 });
  pool.on("error", () => {});
  t.teardown(() => pool.end());
  const limits = postgresLimits({
    ...DEFAULTS,
    failureLimit: 3,
    ratePerMinute: 2,
    pool,
    warn: (l) => warnings.push(l),
  });
  await failsOver(t, await build(t, { limits }));
  t.equal(warnings.length, 1, "one warning for the whole outage");
  t.match(warnings[0], /^rate limits: PostgreSQL failed \(.+\); this node counts .* on its own/);
});

t.test("a Redis connection that drops: each node counts on its own, one warning, no 500", async (t) => {
  const warnings: string[] = [];
  const client = new Redis(REDIS, { lazyConnect: true, enableOfflineQueue: false });
  client.on("error", () => {});
  await client.connect();
  const limits = await redisLimits({
    ...DEFAULTS,
    failureLimit: 3,
    ratePerMinute: 2,
    redis: client,
    prefix,
    warn: (l) => warnings.push(l),
  });
  client.disconnect();
  await failsOver(t, await build(t, { limits }));
  t.equal(warnings.length, 1, "one warning for the whole outage");
  t.match(warnings[0], /^rate limits: Redis failed \(.+\); this node counts .* on its own/);
});

/** Against a store that fails: 4.6 (limit 3) and O3 (2 a minute) still hold, counted on this node. */
async function failsOver(t: Test, app: TestApp) {
  const from = address();
  for (let i = 1; i <= 3; i++) {
    is401(
      t,
      await app.post("/v2/create_session", { session: { id: "x" } }, { "x-agentmon-api-key": UNKNOWN_KEY }, from),
      `failure ${i}`,
    );
  }
  is429(
    t,
    await app.post("/v2/create_session", { session: { id: "s" } }, { "x-agentmon-api-key": API_KEY }, from),
    60,
    "4.6",
  );
  const jwt = await app.session("s1"); // 1 of 2
  t.equal((await app.withJwt("/v2/create_agent", { id: "a1" }, jwt)).statusCode, 200, "2 of 2");
  t.equal((await app.withJwt("/v2/create_agent", { id: "a2" }, jwt)).statusCode, 429, "O3");
}

t.test(
  "withFallback: a store that fails or hangs is answered from memory, and taken back once it answers",
  async (t) => {
    let mode: "ok" | "fail" | "hang" = "hang";
    const answer = (value: number) =>
      mode === "ok"
        ? Promise.resolve(value)
        : mode === "fail"
          ? Promise.reject(new Error("connection refused"))
          : new Promise<number>(() => {});
    const store: RequestLimits = {
      failureWait: async () => answer(7),
      recordFailure: async () => {
        await answer(0);
      },
      takeRequest: async () => answer(9),
      close: async () => {},
    };
    const warnings: string[] = [];
    const local = memoryLimits({ failureLimit: 1, failureWindowMs: 60_000, ratePerMinute: 1 });
    const limits = withFallback(store, local, {
      name: "Store",
      warn: (l) => warnings.push(l),
      timeoutMs: 50,
      retryMs: 0,
    });
    t.equal(await limits.takeRequest("k"), 0, "hanging: this node's bucket, 1 of 1");
    t.match(warnings, [/^rate limits: Store failed \(no answer within 50 ms\)/]);
    await limits.recordFailure("10.0.0.1");
    t.ok((await limits.failureWait("10.0.0.1")) > 0, "the failure was counted on this node");
    t.equal(warnings.length, 1, "one warning while it lasts");
    mode = "ok";
    t.equal(await limits.takeRequest("k"), 9, "answering again: the store's answer");
    t.equal(await limits.failureWait("10.0.0.1"), 7);
    t.match(warnings[1], /^rate limits: Store answers again/);
    mode = "fail";
    t.ok((await limits.takeRequest("k")) > 0, "failing: this node's bucket again (now empty)");
    t.match(warnings[2], /^rate limits: Store failed \(connection refused\)/);
    t.equal(warnings.length, 3);
  },
);

// ----------------------------------------------------------------------------- serve's choice

t.test("chooseLimits: AGENTMON_REDIS_URL counts in Redis, a pool in PostgreSQL, else in memory", async (t) => {
  const config = { authFailLimit: 2, authFailWindowSeconds: 60, rateLimit: 0 };
  const { io, out, err } = capture();
  const from = address();
  const viaRedis = await chooseLimits({ ...config, redisUrl: REDIS } as never, io);
  t.teardown(async () => {
    await viaRedis.close();
    await redisAdmin.del(`agentmon:auth-fail:${from}`); // serve's prefix, under an address of this file's
  });
  await viaRedis.recordFailure(from);
  await viaRedis.recordFailure(from);
  t.ok(await redisAdmin.exists(`agentmon:auth-fail:${from}`), "the failures are a key of Redis");
  t.same(out, [
    "agentmon: failed key checks and request rates are counted in Redis at 127.0.0.1:6379, shared by every node on it",
  ]);
  const redisNode = await redisLimits({ ...DEFAULTS, failureLimit: 2, redis: REDIS, warn: noWarning(t) });
  t.teardown(() => redisNode.close());
  t.ok((await redisNode.failureWait(from)) > 0, "another node over that Redis sees them");

  const pool = poolFor(t);
  const viaPostgres = await chooseLimits({ ...config, redisUrl: undefined } as never, io, pool);
  t.teardown(() => viaPostgres.close());
  await viaPostgres.recordFailure(from);
  await viaPostgres.recordFailure(from);
  const postgresNode = postgresLimits({ ...DEFAULTS, failureLimit: 2, pool: poolFor(t), warn: noWarning(t) });
  t.teardown(() => postgresNode.close());
  t.ok((await postgresNode.failureWait(from)) > 0, "another node on that database sees them");

  const inMemory = await chooseLimits({ ...config, redisUrl: undefined } as never, io);
  await inMemory.recordFailure(from);
  await inMemory.recordFailure(from);
  t.ok((await inMemory.failureWait(from)) > 0, "in memory: counted here");
  t.equal(await memoryLimits(DEFAULTS).failureWait(from), 0, "and nowhere else");
  t.equal(
    out[1],
    "agentmon: failed key checks and request rates are counted in the PostgreSQL database, shared by every node on it",
  );
  t.equal(out.length, 2, "nothing said of memory, the default");
  t.same(err, [], "no warning");
});

t.test("chooseLimits: a Redis that cannot be reached stops the start, without the URL's password", async (t) => {
  const config = { authFailLimit: 20, authFailWindowSeconds: 60, rateLimit: 0 };
  const redisUrl = "redis://:hunter2-secret@127.0.0.1:1";
  const error = await chooseLimits({ ...config, redisUrl } as never, capture().io).then(
    () => undefined,
    (e: Error) => e,
  );
  t.equal(error?.constructor.name, "ConfigError", "a ConfigError: one line, exit 1");
  t.match(error?.message, /^cannot reach Redis at 127\.0\.0\.1:1 \(AGENTMON_REDIS_URL\): .*ECONNREFUSED/);
  t.notMatch(error?.message, /hunter2/, "the password is not repeated");
});
