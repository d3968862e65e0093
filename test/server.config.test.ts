/**
 * The `agentmon` command's configuration: loadConfig (defaults, the environment, flags, bad
 * settings), readSize, and main() stopping on a bad setting, in-process.
 */
import { randomUUID } from "node:crypto";
import { join } from "node:path";
import t, { type Test } from "tap";
import { ConfigError, loadConfig, readSize } from "../cli/config.ts";
import { main } from "../server.ts";
import { MIB, tempDir } from "./helper.ts";
import { capture, keysIn } from "./server.helpers.ts";

/** A ConfigError whose message is one line naming `name`. */
function isOneLineConfigError(t: Test, fn: () => unknown, name: string, what: string) {
  let error: unknown;
  try {
    fn();
  } catch (e) {
    error = e;
  }
  t.ok(error instanceof ConfigError, `${what}: a ConfigError`);
  const message = (error as Error | undefined)?.message ?? "";
  t.notMatch(message, /\n/, `${what}: one line`);
  t.ok(message.includes(name), `${what}: names ${name} (${message})`);
}

t.test("loadConfig: defaults", async (t) => {
  const config = loadConfig({}, {});
  t.equal(config.port, 3000, "PORT 3000");
  t.equal(config.host, "127.0.0.1", "HOST 127.0.0.1");
  t.equal(config.db, "./data/agentmon.db", "AGENTMON_DB ./data/agentmon.db");
  t.equal(config.bodyLimit, 5 * MIB, "body limit 5 MiB");
  t.equal(config.apiKey, undefined, "no configured key");
  t.equal(config.publicUrl, undefined, "no public URL");
  t.equal(config.jwtSecret, undefined, "no configured secret");
  t.equal(config.maxEvents, 1000, "1000 events a call");
  t.equal(config.authFailLimit, 20, "20 failures");
  t.equal(config.authFailWindowSeconds, 60, "in 60 s");
  t.equal(config.logLevel, "info", "log level info");
  t.equal(config.trustProxy, false, "no proxy trusted");
});

t.test("loadConfig: AGENTMON_TRUST_PROXY", async (t) => {
  t.equal(loadConfig({ AGENTMON_TRUST_PROXY: "true" }, {}).trustProxy, true);
  t.equal(loadConfig({ AGENTMON_TRUST_PROXY: "FALSE" }, {}).trustProxy, false);
  t.equal(loadConfig({ AGENTMON_TRUST_PROXY: "10.0.0.1, 10.1.0.0/16" }, {}).trustProxy, "10.0.0.1,10.1.0.0/16");
  t.equal(loadConfig({}, { "trust-proxy": "::1" }).trustProxy, "::1");
});

t.test("loadConfig: the environment overrides the defaults, flags override the environment", async (t) => {
  const key = randomUUID();
  const env = {
    PORT: "4000",
    HOST: "0.0.0.0",
    AGENTMON_DB: "/tmp/env.db",
    AGENTMON_API_KEY: key,
    AGENTMON_PUBLIC_URL: "https://mon.example.com/",
    AGENTMON_JWT_SECRET: "s".repeat(40),
    AGENTMON_BODY_LIMIT: "1MiB",
    AGENTMON_MAX_EVENTS: "50",
    AGENTMON_AUTH_FAIL_LIMIT: "5",
    AGENTMON_AUTH_FAIL_WINDOW: "30",
    AGENTMON_LOG_LEVEL: "warn",
  };
  const fromEnv = loadConfig(env, {});
  t.match(fromEnv, {
    port: 4000,
    host: "0.0.0.0",
    db: "/tmp/env.db",
    apiKey: key,
    bodyLimit: MIB,
    maxEvents: 50,
    authFailLimit: 5,
    authFailWindowSeconds: 30,
    logLevel: "warn",
  });
  t.match(fromEnv.publicUrl, /^https:\/\/mon\.example\.com\/?$/, "public URL");

  const flagKey = randomUUID();
  const fromFlags = loadConfig(env, {
    port: "5000",
    host: "::1",
    db: "/tmp/flag.db",
    "api-key": flagKey,
    "body-limit": "2MiB",
    "max-events": "7",
    "auth-fail-limit": "9",
    "auth-fail-window": "90",
    "log-level": "error",
  });
  t.match(fromFlags, {
    port: 5000,
    host: "::1",
    db: "/tmp/flag.db",
    apiKey: flagKey,
    bodyLimit: 2 * MIB,
    maxEvents: 7,
    authFailLimit: 9,
    authFailWindowSeconds: 90,
    logLevel: "error",
  });
});

t.test("loadConfig: bad settings are a ConfigError of one clear line", async (t) => {
  for (const port of ["abc", "70000", "-1", "3000.5", "80x"]) {
    isOneLineConfigError(t, () => loadConfig({ PORT: port }, {}), "PORT", `PORT=${port}`);
  }
  isOneLineConfigError(t, () => loadConfig({}, { port: "nope" }), "PORT", "--port nope");
  for (const key of ["not-a-uuid", "11111111111141118111111111111111", "secret"]) {
    isOneLineConfigError(t, () => loadConfig({ AGENTMON_API_KEY: key }, {}), "AGENTMON_API_KEY", `key ${key}`);
  }
  for (const size of ["lots", "5 parsecs", "-5MiB", "0"]) {
    isOneLineConfigError(t, () => loadConfig({ AGENTMON_BODY_LIMIT: size }, {}), "AGENTMON_BODY_LIMIT", size);
  }
  for (const level of ["loud", "INFO!", "verbose"]) {
    isOneLineConfigError(t, () => loadConfig({ AGENTMON_LOG_LEVEL: level }, {}), "AGENTMON_LOG_LEVEL", level);
  }
  for (const proxy of ["yes", "nginx", "10.0.0.1;rm"]) {
    isOneLineConfigError(t, () => loadConfig({ AGENTMON_TRUST_PROXY: proxy }, {}), "AGENTMON_TRUST_PROXY", proxy);
  }
  for (const url of ["not a url", "ftp://example.com", "example.com"]) {
    isOneLineConfigError(t, () => loadConfig({ AGENTMON_PUBLIC_URL: url }, {}), "AGENTMON_PUBLIC_URL", url);
  }
});

t.test("loadConfig: AGENTMON_REDIS_URL, checked, its password never repeated", async (t) => {
  t.equal(loadConfig({}, {}).redisUrl, undefined, "unset by default: PostgreSQL or memory counts");
  t.equal(loadConfig({ AGENTMON_REDIS_URL: "redis://127.0.0.1:6379" }, {}).redisUrl, "redis://127.0.0.1:6379");
  const tls = "rediss://:s3cret@redis.internal:6380/2";
  t.equal(loadConfig({}, { "redis-url": tls }).redisUrl, tls, "--redis-url, TLS, a password and a database");
  for (const url of ["not a url", "http://127.0.0.1:6379", "redis://", "redis://host/cache", "127.0.0.1:6379"]) {
    isOneLineConfigError(t, () => loadConfig({ AGENTMON_REDIS_URL: url }, {}), "AGENTMON_REDIS_URL", url);
  }
  const withPassword = "redis://:hunter2@host/db";
  try {
    loadConfig({ AGENTMON_REDIS_URL: withPassword }, {});
    t.fail("a bad URL is refused");
  } catch (error) {
    t.match((error as Error).message, /got "…@host\/db"/, "shown without what comes before the @");
    t.notMatch((error as Error).message, /hunter2/, "the password is not repeated");
  }
});

t.test("main: a Redis that cannot be reached stops the start with one line, before any key is made", async (t) => {
  const c = capture();
  const db = join(tempDir(t), "agentmon.db");
  const env = { AGENTMON_DB: db, PORT: "0", AGENTMON_REDIS_URL: "redis://127.0.0.1:1" };
  t.equal(await main(["serve"], env, c.io), 1, "exit 1");
  t.same(c.err.length, 1, "one line");
  t.match(c.err[0], /^agentmon: cannot reach Redis at 127\.0\.0\.1:1 \(AGENTMON_REDIS_URL\): /);
  t.same(c.out, [], "no first key printed");
  t.same(await keysIn(db), [], "and none made, to be lost: the next start makes and shows it");
});

t.test("main: a bad setting exits 1 with one line on stderr", async (t) => {
  for (const [env, name] of [
    [{ PORT: "abc" }, "PORT"],
    [{ AGENTMON_API_KEY: "nope" }, "AGENTMON_API_KEY"],
    [{ AGENTMON_BODY_LIMIT: "huge" }, "AGENTMON_BODY_LIMIT"],
    [{ AGENTMON_LOG_LEVEL: "loud" }, "AGENTMON_LOG_LEVEL"],
    [{ AGENTMON_PUBLIC_URL: "nowhere" }, "AGENTMON_PUBLIC_URL"],
    [{ AGENTMON_REDIS_URL: "nowhere" }, "AGENTMON_REDIS_URL"],
  ] as const) {
    const c = capture();
    t.equal(await main(["serve"], env, c.io), 1, `${name}: exit 1`);
    t.equal(c.err.length, 1, `${name}: one line`);
    t.ok(c.err[0]?.includes(name), `${name}: named (${c.err[0]})`);
    t.notMatch(c.err[0] ?? "", /\n|^\s+at /m, `${name}: no stack trace`);
  }
});

t.test("readSize", async (t) => {
  t.equal(readSize("5MiB"), 5 * MIB);
  t.equal(readSize("5mib"), 5 * MIB);
  t.equal(readSize("512KiB"), 512 * 1024);
  t.equal(readSize("1048576"), MIB);
  t.equal(readSize("1MB"), 1_000_000);
  t.equal(readSize("1.5MiB"), 1.5 * MIB);
  t.equal(readSize(" 2 MiB "), 2 * MIB);
  for (const bad of ["", "abc", "5XB", "-1", "MiB", "1.2.3MiB"]) {
    isOneLineConfigError(t, () => readSize(bad), "AGENTMON_BODY_LIMIT", `${JSON.stringify(bad)} is refused`);
  }
});

t.test("loadConfig: AGENTMON_RETENTION_DAYS and AGENTMON_RETENTION_INTERVAL", async (t) => {
  const defaults = loadConfig({}, {});
  t.equal(defaults.retentionDays, undefined, "kept forever by default");
  t.equal(defaults.retentionIntervalSeconds, 600, "a sweep every 10 minutes");
  t.equal(loadConfig({ AGENTMON_RETENTION_DAYS: "30" }, {}).retentionDays, 30);
  t.equal(loadConfig({ AGENTMON_RETENTION_DAYS: "30" }, { "retention-days": "7" }).retentionDays, 7, "the flag wins");
  t.equal(loadConfig({ AGENTMON_RETENTION_DAYS: "Forever" }, {}).retentionDays, undefined, "forever");
  t.equal(loadConfig({}, { "retention-interval": "60" }).retentionIntervalSeconds, 60);
  for (const days of ["0", "-1", "1.5", "a week", "36501"]) {
    isOneLineConfigError(
      t,
      () => loadConfig({ AGENTMON_RETENTION_DAYS: days }, {}),
      "AGENTMON_RETENTION_DAYS",
      `days ${days}`,
    );
  }
  for (const seconds of ["0", "-5", "soon"]) {
    isOneLineConfigError(
      t,
      () => loadConfig({}, { "retention-interval": seconds }),
      "AGENTMON_RETENTION_INTERVAL",
      `interval ${seconds}`,
    );
  }
});

t.test("loadConfig: AGENTMON_DATABASE_URL / --database-url, checked", async (t) => {
  t.equal(loadConfig({}, {}).databaseUrl, undefined, "unset by default: the SQLite file");
  const url = "postgres://agentmon:s3cret@db.internal:5432/agentmon?sslmode=require";
  t.equal(loadConfig({ AGENTMON_DATABASE_URL: url }, {}).databaseUrl, url);
  t.equal(loadConfig({}, { "database-url": "postgresql://db/agentmon" }).databaseUrl, "postgresql://db/agentmon");
  for (const bad of ["not a url", "mysql://db/agentmon", "postgres://", "./data/agentmon.db", "sqlite:agentmon.db"]) {
    isOneLineConfigError(t, () => loadConfig({ AGENTMON_DATABASE_URL: bad }, {}), "AGENTMON_DATABASE_URL", bad);
  }
});

t.test("a database URL that cannot be reached: exit 1, one line, the password never shown", async (t) => {
  const c = capture();
  const code = await main(["keys", "list"], { AGENTMON_DATABASE_URL: "postgres://u:hunter2@127.0.0.1:1/none" }, c.io);
  t.equal(code, 1);
  t.equal(c.err.length, 1, `one line: ${c.err.join(" | ")}`);
  t.match(c.err[0], /^agentmon: cannot open the database postgres:\/\/u:\*\*\*@127\.0\.0\.1:1\/none: /);
  t.notMatch(c.err.join("\n"), /hunter2/, "the password is not shown");
  t.same(c.out, [], "nothing on stdout");
});

t.test(
  "loadConfig: AGENTMON_OTLP_GRPC_PORT / --otlp-grpc-port, off by default, another port than the others",
  async (t) => {
    t.equal(loadConfig({}, {}).otlpGrpcPort, undefined, "off by default");
    t.equal(loadConfig({ AGENTMON_OTLP_GRPC_PORT: "4317" }, {}).otlpGrpcPort, 4317, "from the environment");
    t.equal(
      loadConfig({ AGENTMON_OTLP_GRPC_PORT: "4317" }, { "otlp-grpc-port": "0" }).otlpGrpcPort,
      0,
      "the flag wins",
    );
    isOneLineConfigError(
      t,
      () => loadConfig({ AGENTMON_OTLP_GRPC_PORT: "grpc" }, {}),
      "AGENTMON_OTLP_GRPC_PORT",
      "grpc",
    );
    isOneLineConfigError(
      t,
      () => loadConfig({ PORT: "4317", AGENTMON_OTLP_GRPC_PORT: "4317" }, {}),
      "AGENTMON_OTLP_GRPC_PORT",
      "the same port as PORT",
    );
    isOneLineConfigError(
      t,
      () => loadConfig({ AGENTMON_METRICS_PORT: "9464", AGENTMON_OTLP_GRPC_PORT: "9464" }, {}),
      "AGENTMON_OTLP_GRPC_PORT",
      "the same port as the metrics port",
    );
    t.equal(loadConfig({ PORT: "0", AGENTMON_OTLP_GRPC_PORT: "0" }, {}).otlpGrpcPort, 0, "both 0: two free ports");
  },
);
