/**
 * `agentmon serve` and metrics (docs/decisions/012-metrics.md): AGENTMON_METRICS_TOKEN and
 * AGENTMON_METRICS_PORT as settings, and a real process serving /metrics on its own port without
 * a credential, and on the main port with the token only.
 */
import { randomUUID } from "node:crypto";
import { createServer } from "node:net";
import { join } from "node:path";
import t from "tap";
import { ConfigError, loadConfig } from "../cli/config.ts";
import { main } from "../server.ts";
import { tempDir } from "./helper.ts";
import { agentmon, childEnv, LISTENING, WAIT_MS } from "./process.ts";
import { capture } from "./server.helpers.ts";

const TOKEN = "a-long-random-metrics-token-42";

t.test("loadConfig: the metrics settings", async (t) => {
  const defaults = loadConfig({}, {});
  t.equal(defaults.metricsToken, undefined, "no token by default");
  t.equal(defaults.metricsPort, undefined, "no metrics port by default");
  const fromEnv = loadConfig({ AGENTMON_METRICS_TOKEN: TOKEN, AGENTMON_METRICS_PORT: "9464" }, {});
  t.equal(fromEnv.metricsToken, TOKEN);
  t.equal(fromEnv.metricsPort, 9464);
  const fromFlags = loadConfig(
    { AGENTMON_METRICS_TOKEN: TOKEN, AGENTMON_METRICS_PORT: "9464" },
    { "metrics-token": `${TOKEN}-flag`, "metrics-port": "0" },
  );
  t.equal(fromFlags.metricsToken, `${TOKEN}-flag`, "the flag wins");
  t.equal(fromFlags.metricsPort, 0, "0 picks a free port");
  t.equal(loadConfig({ PORT: "0", AGENTMON_METRICS_PORT: "0" }, {}).metricsPort, 0, "both 0 is fine");
  t.equal(loadConfig({ AGENTMON_METRICS_PORT: "" }, {}).metricsPort, undefined, "empty is unset");
});

t.test("loadConfig: bad metrics settings are a ConfigError of one line naming the setting", async (t) => {
  const bad: [Record<string, string>, Record<string, string>, string][] = [
    [{ AGENTMON_METRICS_PORT: "abc" }, {}, "AGENTMON_METRICS_PORT"],
    [{ AGENTMON_METRICS_PORT: "70000" }, {}, "AGENTMON_METRICS_PORT"],
    [{ AGENTMON_METRICS_PORT: "-1" }, {}, "AGENTMON_METRICS_PORT"],
    [{}, { "metrics-port": "9464.5" }, "AGENTMON_METRICS_PORT"],
    [{ PORT: "3000", AGENTMON_METRICS_PORT: "3000" }, {}, "AGENTMON_METRICS_PORT"],
    [{ AGENTMON_METRICS_PORT: "3000" }, {}, "AGENTMON_METRICS_PORT"],
    [{ AGENTMON_METRICS_TOKEN: "short" }, {}, "AGENTMON_METRICS_TOKEN"],
    [{ AGENTMON_METRICS_TOKEN: "fifteen-chars-x" }, {}, "AGENTMON_METRICS_TOKEN"],
    [{ AGENTMON_METRICS_TOKEN: "has a space in the middle" }, {}, "AGENTMON_METRICS_TOKEN"],
    [{ AGENTMON_METRICS_TOKEN: "non-ascii-tökenvalue-long" }, {}, "AGENTMON_METRICS_TOKEN"],
    [{ AGENTMON_METRICS_TOKEN: "x".repeat(1025) }, {}, "AGENTMON_METRICS_TOKEN"],
  ];
  for (const [env, flags, name] of bad) {
    let error: unknown;
    try {
      loadConfig(env, flags);
    } catch (e) {
      error = e;
    }
    const what = JSON.stringify({ ...env, ...flags }).slice(0, 80);
    t.ok(error instanceof ConfigError, `${what}: a ConfigError`);
    t.match((error as Error).message, name, `${what}: names ${name}`);
    t.notMatch((error as Error).message, /\n/, `${what}: one line`);
    t.notOk((error as Error).message.includes("has a space"), `${what}: the token is not echoed`);
  }
  t.ok(loadConfig({ AGENTMON_METRICS_TOKEN: "x".repeat(16) }, {}), "16 characters are enough");
});

t.test("main: a metrics port in use stops the start with one line naming the setting, exit 1", async (t) => {
  const blocker = createServer();
  await new Promise<void>((resolve) => blocker.listen(0, "127.0.0.1", resolve));
  t.teardown(() => new Promise((resolve) => blocker.close(resolve)));
  const port = (blocker.address() as { port: number }).port;
  const c = capture();
  const args = ["serve", "--port", "0", "--metrics-port", String(port), "--db", ":memory:", "--log-level", "silent"];
  const code = await main(args, { AGENTMON_API_KEY: randomUUID() }, c.io);
  t.equal(code, 1, "exit code 1");
  t.equal(c.err.length, 1, `one line: ${c.err.join(" | ")}`);
  t.match(c.err[0], /AGENTMON_METRICS_PORT/, "names the setting");
  t.notMatch(c.out.join("\n"), /listening on/, "never said it listens");
});

async function get(url: string, headers: Record<string, string> = {}) {
  const res = await fetch(url, { headers, signal: AbortSignal.timeout(WAIT_MS) });
  return { status: res.status, type: res.headers.get("content-type"), text: await res.text() };
}

t.test("serve: a real process serves /metrics on its own port without a credential", async (t) => {
  const db = join(tempDir(t), "m.db");
  const env = childEnv({ AGENTMON_API_KEY: randomUUID(), AGENTMON_LOG_LEVEL: "warn", AGENTMON_METRICS_PORT: "0" });
  const server = agentmon(t, ["serve", "--port", "0", "--db", db], env);
  const base = (await server.waitFor(LISTENING))[1] ?? "";
  const url = (await server.waitFor(/agentmon: metrics on (http:\/\/\S+)/))[1] ?? "";
  t.match(url, /^http:\/\/127\.0\.0\.1:\d+\/metrics$/, "on the same host, a port of its own");
  t.not(new URL(url).port, new URL(base).port, "not the main port");

  await get(`${base}/healthz`);
  const scraped = await get(url);
  t.equal(scraped.status, 200, "no credential needed there");
  t.equal(scraped.type, "text/plain; version=0.0.4; charset=utf-8");
  t.match(
    scraped.text,
    /^agentmon_http_requests_total\{operation="getHealth",status="200"\} 1$/m,
    "the request counted",
  );
  t.match(scraped.text, /^agentmon_storage_thread_backlog_limit_rows 20000$/m, "the storage thread's figures");
  t.match(scraped.text, /^agentmon_storage_up 1$/m);
  t.match(scraped.text, /^process_cpu_user_seconds_total /m, "the process's");

  const main = await get(`${base}/metrics`);
  t.equal(main.status, 404, "the main port has no token: 404");
  t.notMatch(main.text, /agentmon_/, "nothing leaks there");

  server.child.kill("SIGTERM");
  t.equal((await server.exited()).code, 0, "exits 0, its metrics port closed with it");
  const after = await fetch(url).then(
    () => "answered",
    () => "refused",
  );
  t.equal(after, "refused", "the metrics port is closed");
});

t.test("serve: with AGENTMON_METRICS_TOKEN the main port serves /metrics to that token only", async (t) => {
  const db = join(tempDir(t), "t.db");
  const env = childEnv({ AGENTMON_API_KEY: randomUUID(), AGENTMON_LOG_LEVEL: "warn" });
  const server = agentmon(t, ["serve", "--port", "0", "--db", db, "--metrics-token", TOKEN], env);
  const base = (await server.waitFor(LISTENING))[1] ?? "";
  t.notMatch(server.stdout(), /metrics on/, "no metrics port");
  const refused = await get(`${base}/metrics`);
  t.equal(refused.status, 401, "no token: 401");
  t.same(JSON.parse(refused.text), {
    error: "Invalid metrics token",
    message: "Send the metrics token as Authorization: Bearer <AGENTMON_METRICS_TOKEN>",
  });
  const scraped = await get(`${base}/metrics`, { authorization: `Bearer ${TOKEN}` });
  t.equal(scraped.status, 200, "the token: 200");
  t.match(scraped.text, /^agentmon_requests_rejected_total\{reason="unauthorized"\} 1$/m, "the 401 counted");
  t.notOk(server.stdout().includes(TOKEN) || server.stderr().includes(TOKEN), "the token is never printed");
  server.child.kill("SIGTERM");
  t.equal((await server.exited()).code, 0);
});
