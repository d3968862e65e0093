/**
 * The Dockerfile, checked every way but `docker build` (no image can be pulled here; decision
 * 014): its stages and base image, that every COPY source exists and is let into the build
 * context by .dockerignore, the runtime stage's user, volume, settings, CMD and HEALTHCHECK; then
 * its build stage carried out in a temporary folder (the files its COPYs bring, its RUN
 * commands), and its CMD started there as the container would start it, with /data a temporary
 * folder: it serves, writes its database there and nowhere else, its HEALTHCHECK passes (and
 * fails once the server is gone), the `agentmon` command works, and SIGTERM stops it with 0.
 * compose.yaml likewise: the SQLite service, and the profile `postgres` (three nodes on the
 * postgres service behind nginx, deploy/nginx.conf) read as Compose reads them, and the nodes'
 * healthcheck run against a real node on PostgreSQL.
 *
 * One step is replaced by default: `npm rebuild better-sqlite3` (compiling the addon, 1.5 to 4
 * minutes on this machine) becomes a copy of the addon the repository's own install compiled,
 * for the same better-sqlite3 version and the same Node. AGENTMON_CONTAINER_COMPILE=1 runs the
 * compile as written.
 */
import { spawn, spawnSync } from "node:child_process";
import { chmodSync, cpSync, existsSync, mkdirSync, readdirSync, readFileSync, statSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join, relative } from "node:path";
import { fileURLToPath } from "node:url";
import t, { type Test } from "tap";
import { parse } from "yaml";
import {
  copyArgs,
  dockerignore,
  envPairs,
  execForm,
  type Instruction,
  parseDockerfile,
  runCommands,
  type Stage,
} from "./container.helpers.ts";
import { tempDir } from "./helper.ts";
import { postgresRequired, postgresUnavailable, testDatabase } from "./postgres.ts";
import { agentmon, childEnv, LISTENING } from "./process.ts";

// The npm ci step alone takes 25-60 s here, more on a loaded machine.
t.setTimeout(600_000);

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const dockerfile = readFileSync(join(root, "Dockerfile"), "utf8");
const stages = parseDockerfile(dockerfile);
const inContext = dockerignore(readFileSync(join(root, ".dockerignore"), "utf8"));
const COMPILE = process.env.AGENTMON_CONTAINER_COMPILE === "1";

const build = stages[0] as Stage;
const runtime = stages.at(-1) as Stage;
const all = (stage: Stage, keyword: string) => stage.instructions.filter((i) => i.keyword === keyword);
const last = (stage: Stage, keyword: string) => all(stage, keyword).at(-1);

/** The files git tracks under a path of the repository. */
function tracked(path: string): string[] {
  const out = spawnSync("git", ["ls-files", "--", path], { cwd: root, encoding: "utf8" });
  return out.stdout.split("\n").filter((line) => line !== "");
}

/** The names of the settings agentmon reads from the environment (cli/config.ts). */
function settingNames(): Set<string> {
  const config = readFileSync(join(root, "cli/config.ts"), "utf8");
  return new Set([...config.matchAll(/env: "([A-Z_]+)"/g)].map((m) => m[1] as string));
}

t.test("two stages on node:22-bookworm-slim; the build stage has what compiles better-sqlite3", async (t) => {
  t.equal(stages.length, 2, "a build stage and a runtime stage");
  for (const stage of stages) t.equal(stage.image, "node:22-bookworm-slim", `stage ${stage.name}`);
  t.equal(build.name, "build");
  const apt = all(build, "RUN").find((run) => run.args.includes("apt-get install"));
  t.match(apt?.args, /python3 make g\+\+/, "python3, make and g++ for node-gyp");
  t.match(apt?.args, /rm -rf \/var\/lib\/apt\/lists/, "and apt's lists are not kept in the layer");
});

t.test("every COPY source exists in the repository and .dockerignore lets it in", async (t) => {
  const copies = stages.flatMap((stage) => all(stage, "COPY")).filter((copy) => copy.flags.from === undefined);
  t.ok(copies.length > 3);
  for (const copy of copies) {
    for (const source of copyArgs(copy.args).sources) {
      const files = tracked(source);
      t.ok(files.length > 0, `line ${copy.line}: ${source} is in the repository`);
      const left = files.filter((file) => !inContext(file));
      t.same(left, [], `line ${copy.line}: .dockerignore lets all of ${source} in`);
    }
  }
  for (const copy of stages.flatMap((stage) => all(stage, "COPY")).filter((c) => c.flags.from !== undefined)) {
    t.ok(
      stages.some((stage) => stage.name === copy.flags.from && stage !== runtime),
      `line ${copy.line}: --from=${copy.flags.from} is an earlier stage`,
    );
  }
  // The allowlist keeps what must never be sent to a builder out of the context.
  for (const path of [
    "node_modules/x",
    "dist/agentmon.mjs",
    "data/agentmon.db",
    "db/x.db-wal",
    "test/x.ts",
    ".git/HEAD",
  ]) {
    t.notOk(inContext(path), `${path} stays out of the build context`);
  }
});

t.test("the runtime stage: a user of its own, /data, the settings, exec-form CMD and HEALTHCHECK", async (t) => {
  const user = last(runtime, "USER")?.args;
  t.ok(user !== undefined && !/^(root|0)(:|$)/.test(user), `USER is not root (${user})`);
  t.ok(
    runtime.instructions.indexOf(last(runtime, "USER") as Instruction) <
      runtime.instructions.indexOf(last(runtime, "CMD") as Instruction),
    "USER comes before CMD",
  );
  t.same(
    all(runtime, "VOLUME").map((v) => v.args),
    ["/data"],
  );
  const env = new Map(all(runtime, "ENV").flatMap((e) => envPairs(e.args)));
  t.equal(env.get("HOST"), "0.0.0.0", "listens on every interface of the container");
  t.match(env.get("AGENTMON_DB"), /^\/data\//, "the database is on the volume");
  const known = settingNames();
  t.ok(known.has("AGENTMON_DB") && known.has("HOST"), "cli/config.ts was read");
  for (const name of env.keys()) t.ok(known.has(name), `ENV ${name} is a setting of agentmon (cli/config.ts)`);
  t.equal(all(runtime, "EXPOSE")[0]?.args, env.get("PORT") ?? "3000", "EXPOSE is the port it listens on");
  t.ok(execForm(last(runtime, "CMD")?.args ?? ""), "CMD is exec form (node is PID 1 and gets SIGTERM)");
  const health = last(runtime, "HEALTHCHECK");
  t.match(health?.args, /^CMD \[/, "HEALTHCHECK runs an exec-form command");
  t.match(health?.args, /\/healthz/, "on /healthz");
  t.notMatch(health?.args, /curl|wget/, "with no tool the slim image lacks");
  t.ok(health?.flags.interval && health.flags.timeout, "with an interval and a timeout");
});

interface Service {
  build?: string;
  image?: string;
  ports?: string[];
  volumes?: string[];
  environment?: Record<string, string>;
  profiles?: string[];
  depends_on?: Record<string, { condition?: string }>;
  healthcheck?: { test?: string[] | string };
}

/** compose.yaml, its anchors merged (`<<:`) as Compose merges them. */
const compose = parse(readFileSync(join(root, "compose.yaml"), "utf8"), { merge: true }) as {
  services: Record<string, Service>;
  volumes: Record<string, unknown>;
};

/** A value as Compose interpolates it when the variable is unset: `${NAME:-default}` is its default. */
const interpolated = (value: string) => value.replace(/\$\{\w+:-([^}]*)\}/g, "$1");

/** The services of the profile `postgres` that run agentmon (this Dockerfile's image). */
const pgNodes = () =>
  Object.entries(compose.services).filter(([name, s]) => name !== "agentmon" && s.build === "." && s.profiles);

t.test(
  "compose.yaml runs this Dockerfile with its volume and port; the rest only behind the profile postgres",
  async (t) => {
    const agentmon = compose.services.agentmon as Service;
    t.equal(agentmon.build, ".", "built from this Dockerfile");
    const volume = agentmon.volumes?.find((v) => v.endsWith(":/data"));
    t.ok(volume, "a volume on /data");
    t.ok(Object.hasOwn(compose.volumes, volume?.split(":")[0] ?? ""), "a named volume, declared");
    const port = all(runtime, "EXPOSE")[0]?.args;
    t.ok(
      agentmon.ports?.some((p) => p.endsWith(`:${port}`)),
      `the container's port ${port} is published`,
    );
    const known = settingNames();
    for (const name of Object.keys(agentmon.environment ?? {}))
      t.ok(known.has(name), `${name} is a setting of agentmon`);
    for (const [name, service] of Object.entries(compose.services)) {
      if (name !== "agentmon") t.same(service.profiles, ["postgres"], `${name} starts only with --profile postgres`);
    }
  },
);

t.test("compose.yaml's profile postgres: three agentmon nodes on the postgres service, behind nginx", async (t) => {
  const known = settingNames();
  const port = all(runtime, "EXPOSE")[0]?.args ?? "";
  const postgres = compose.services.postgres as Service;
  t.match(postgres.image, /^postgres:\d+/, "the official PostgreSQL image");
  const pgEnv = Object.fromEntries(Object.entries(postgres.environment ?? {}).map(([k, v]) => [k, interpolated(v)]));
  t.ok(pgEnv.POSTGRES_USER && pgEnv.POSTGRES_PASSWORD && pgEnv.POSTGRES_DB, "its user, password and database");
  t.match(String(postgres.healthcheck?.test), /pg_isready/, "a healthcheck, pg_isready");
  const pgVolume = postgres.volumes?.find((v) => v.endsWith(":/var/lib/postgresql/data"))?.split(":")[0] ?? "";
  t.ok(Object.hasOwn(compose.volumes, pgVolume), "its data on a named volume, declared");

  t.ok(known.has("AGENTMON_DATABASE_URL"), "cli/config.ts reads AGENTMON_DATABASE_URL");
  const nodes = pgNodes();
  t.equal(nodes.length, 3, `three agentmon nodes (${nodes.map(([name]) => name).join(", ")})`);
  const secrets = new Set<string | undefined>();
  for (const [name, node] of nodes) {
    t.equal(node.image, compose.services.agentmon?.image, `${name}: the same image as agentmon`);
    const env = node.environment ?? {};
    for (const key of Object.keys(env))
      t.ok(known.has(key), `${name}: ${key} is a setting of agentmon (cli/config.ts)`);
    const url = new URL(interpolated(env.AGENTMON_DATABASE_URL ?? "none:"));
    t.equal(url.protocol, "postgres:", `${name}: AGENTMON_DATABASE_URL is a PostgreSQL URL`);
    t.ok(
      url.hostname in compose.services && compose.services[url.hostname] === postgres,
      `${name}: on the postgres service`,
    );
    t.equal(url.port, "5432", `${name}: at the image's port`);
    t.same(
      [decodeURIComponent(url.username), decodeURIComponent(url.password), url.pathname.slice(1)],
      [pgEnv.POSTGRES_USER, pgEnv.POSTGRES_PASSWORD, pgEnv.POSTGRES_DB],
      `${name}: as the postgres service's user, password and database`,
    );
    t.equal(node.depends_on?.postgres?.condition, "service_healthy", `${name}: starts once postgres is healthy`);
    const check = [node.healthcheck?.test ?? []].flat().join(" ");
    t.match(check, /\/readyz/, `${name}: its healthcheck is readiness, /readyz`);
    t.match(check, new RegExp(`PORT \\|\\| ${port}\\b`), `${name}: on its port (${port})`);
    t.notMatch(check, /curl|wget/, `${name}: with no tool the slim image lacks`);
    t.notOk(node.ports, `${name}: publishes no port (only the balancer reaches it)`);
    t.ok(
      env.AGENTMON_TRUST_PROXY && env.AGENTMON_TRUST_PROXY !== "false",
      `${name}: believes the balancer's X-Forwarded-For`,
    );
    secrets.add(env.AGENTMON_JWT_SECRET);
  }
  t.equal(secrets.size, 1, "every node has the same AGENTMON_JWT_SECRET, or none does (the first one's is shared)");

  const balancer = compose.services.balancer as Service;
  t.match(balancer.image, /^nginx:/, "the balancer is nginx");
  for (const [name] of nodes) {
    t.equal(balancer.depends_on?.[name]?.condition, "service_healthy", `it starts once ${name} is ready`);
  }
  const mount = balancer.volumes?.find((v) => v.includes(":/etc/nginx/"))?.split(":") ?? [];
  const confPath = (mount[0] ?? "").replace(/^\.\//, "");
  t.same(tracked(confPath), [confPath], `its configuration ${confPath} is in the repository`);
  const conf = readFileSync(join(root, confPath), "utf8").replace(/#.*$/gm, "");
  const upstream = /upstream\s+(\w+)\s*\{([^}]*)\}/.exec(conf);
  const servers = [...(upstream?.[2] ?? "").matchAll(/^\s*server\s+([^\s;]+)/gm)].map((m) => m[1]);
  t.same(
    servers.sort(),
    nodes.map(([name]) => `${name}:${port}`).sort(),
    "its upstream is the three nodes, at their port",
  );
  t.match(conf, new RegExp(`proxy_pass\\s+http://${upstream?.[1]};`), "every request goes to that upstream");
  t.match(
    conf,
    /proxy_set_header\s+X-Forwarded-For\s+\$remote_addr;/,
    "X-Forwarded-For is replaced, never appended to",
  );
  const maxBody = /client_max_body_size\s+(\d+)m;/.exec(conf)?.[1];
  t.ok(Number(maxBody) >= 16, `client_max_body_size ${maxBody}m lets agentmon's own limits (16MiB OTLP) judge`);
  const [host, published, inside] = balancer.ports?.[0]?.split(":") ?? [];
  t.match(conf, new RegExp(`listen\\s+${inside};`), `nginx listens on the published port ${inside}`);
  for (const [name, node] of nodes) {
    t.equal(
      interpolated(node.environment?.AGENTMON_PUBLIC_URL ?? ""),
      `http://${host === "127.0.0.1" ? "localhost" : host}:${published}`,
      `${name}: AGENTMON_PUBLIC_URL is the balancer's address`,
    );
  }
});

t.test("the nodes' healthcheck passes against a node on PostgreSQL, and fails once it is gone", async (t) => {
  const unavailable = await postgresUnavailable();
  if (unavailable !== undefined && !postgresRequired()) {
    t.comment(`skipped: ${unavailable}`);
    return;
  }
  const [name, node] = pgNodes()[0] as [string, Service];
  const url = await testDatabase(t);
  const env = Object.fromEntries(Object.entries(node.environment ?? {}).map(([k, v]) => [k, interpolated(v)]));
  const server = agentmon(t, ["serve"], childEnv({ ...env, AGENTMON_DATABASE_URL: url, PORT: "0", HOST: "127.0.0.1" }));
  const base = (await server.waitFor(LISTENING))[1] as string;
  const [command = "", ...args] = [node.healthcheck?.test ?? []].flat().slice(1);
  const check = () =>
    spawnSync(command === "node" ? process.execPath : command, args, {
      env: { PATH: process.env.PATH, PORT: new URL(base).port },
      encoding: "utf8",
      timeout: 20_000,
    }).status;
  t.equal(check(), 0, `${name}'s healthcheck passes: /readyz on PostgreSQL`);
  server.child.kill("SIGTERM");
  t.equal((await server.exited()).code, 0, "SIGTERM stops it with 0");
  t.not(check(), 0, "the healthcheck fails once the node is gone");
});

t.test(
  "the package @agentmon/server ships what the image copies, for the Node versions the README states",
  async (t) => {
    const pkg = JSON.parse(readFileSync(join(root, "package.json"), "utf8")) as {
      name: string;
      files: string[];
      engines: { node: string };
      bin: Record<string, string>;
    };
    t.equal(pkg.name, "@agentmon/server", "a scoped name: the unscoped agentmon on npm is another project's");
    t.same(Object.keys(pkg.bin), ["agentmon"], "one command, so `npx @agentmon/server` runs it");
    const trim = (path: string) => path.replace(/\/$/, "");
    // npm always packs package.json and never a lockfile; the workspace is a package of its own.
    const npmHandles = new Set(["package.json", "package-lock.json", "clients/typescript/package.json"]);
    const copied = all(build, "COPY")
      .flatMap((copy) => copyArgs(copy.args).sources)
      .map(trim)
      .filter((path) => !npmHandles.has(path));
    t.same(pkg.files.map(trim).sort(), [...copied, "dist"].sort(), "files: the image's sources, and the bundle");
    const readme = readFileSync(join(root, "README.md"), "utf8");
    t.ok(readme.includes(`\`${pkg.engines.node}\``), `the README states engines ${pkg.engines.node}`);
  },
);

/** Copies a COPY's sources from the repository into `dir`, as Docker does, through .dockerignore. */
function copy(instruction: Instruction, dir: string) {
  const { sources, dest } = copyArgs(instruction.args);
  const target = join(dir, dest);
  for (const source of sources) {
    const from = join(root, source);
    const filter = (path: string) => {
      const rel = relative(root, path);
      return rel === "" || inContext(rel) || statSync(path).isDirectory();
    };
    if (statSync(from).isDirectory()) cpSync(from, target, { recursive: true, filter });
    else {
      const into = dest.endsWith("/") || sources.length > 1 ? join(target, source.split("/").at(-1) as string) : target;
      mkdirSync(dirname(into), { recursive: true });
      cpSync(from, into);
    }
  }
}

/** Runs one command of a RUN in `cwd`, failing the test if it fails. */
function sh(t: Test, command: string, cwd: string) {
  const started = Date.now();
  const env = { ...process.env, npm_config_prefer_offline: "true", npm_config_update_notifier: "false" };
  const run = spawnSync("sh", ["-c", command], { cwd, env, encoding: "utf8", maxBuffer: 64 * 1024 * 1024 });
  const seconds = ((Date.now() - started) / 1000).toFixed(1);
  t.equal(run.status, 0, `\`${command}\` succeeds (${seconds} s)`, { stderr: run.stderr.slice(-3000) });
  if (run.status !== 0) throw new Error(`${command} failed: ${run.stderr.slice(-3000)}`);
}

/** The better-sqlite3 addon of the repository's install, for the same version, instead of compiling it again. */
function reuseCompiledAddon(t: Test, app: string) {
  const repoPackage = createRequire(join(root, "package.json")).resolve("better-sqlite3/package.json");
  const version = (file: string) => (JSON.parse(readFileSync(file, "utf8")) as { version: string }).version;
  const appPackage = join(app, "node_modules/better-sqlite3/package.json");
  t.equal(version(appPackage), version(repoPackage), "the same better-sqlite3 as the repository's install");
  const addon = "build/Release/better_sqlite3.node";
  cpSync(join(dirname(repoPackage), addon), join(dirname(appPackage), addon));
}

/** Every file under `dir` with its size and modification time, to see that nothing was written there. */
function snapshot(dir: string): Map<string, string> {
  const files = new Map<string, string>();
  for (const entry of readdirSync(dir, { recursive: true, withFileTypes: true })) {
    if (!entry.isFile()) continue;
    const path = join(entry.parentPath, entry.name);
    const stat = statSync(path);
    files.set(relative(dir, path), `${stat.size} ${stat.mtimeMs}`);
  }
  return files;
}

t.test("the build stage's steps make a production install whose CMD serves and passes the HEALTHCHECK", async (t) => {
  const top = tempDir(t);
  chmodSync(top, 0o755);
  // The image's absolute paths, inside the temporary folder.
  const at = (path: string) => join(top, path);
  const data = at("data");
  let workdir = at("/");
  const started = Date.now();

  for (const instruction of build.instructions) {
    if (instruction.keyword === "FROM") continue;
    if (instruction.keyword === "WORKDIR") {
      workdir = at(instruction.args);
      mkdirSync(workdir, { recursive: true });
    } else if (instruction.keyword === "COPY") {
      copy(instruction, workdir);
    } else if (instruction.keyword === "RUN") {
      for (const command of runCommands(instruction.args)) {
        // System packages: this machine has python3, make and g++ already.
        if (/^(apt-get|rm -rf \/var\/lib\/apt\/lists)/.test(command)) continue;
        if (command === "npm rebuild better-sqlite3" && !COMPILE) reuseCompiledAddon(t, workdir);
        else if (/^(npm (ci|rebuild) |node bin\/build\.js$)/.test(command)) sh(t, command, workdir);
        else t.fail(`line ${instruction.line}: this test does not know how to carry out \`${command}\`; teach it`);
      }
    } else t.fail(`line ${instruction.line}: this test does not know ${instruction.keyword} in the build stage`);
  }
  const app = workdir;
  t.comment(`build stage carried out in ${((Date.now() - started) / 1000).toFixed(1)} s`);

  // A production install: no devDependency, but what bin/agentmon.js may need (esbuild, tsx).
  const installed = (name: string) => existsSync(join(app, "node_modules", name, "package.json"));
  t.notOk(installed("tap") || installed("typescript") || installed("@biomejs/biome"), "no devDependency installed");
  t.ok(installed("esbuild") && installed("tsx") && installed("yaml"), "the bin's builder and fallback are there");
  t.ok(existsSync(join(app, "dist/agentmon.mjs")) && existsSync(join(app, "dist/store-worker.mjs")), "the bundle");

  // The runtime stage: its copy of the build stage, its settings, its command.
  const copied = all(runtime, "COPY");
  t.same(
    copied.map((c) => [c.flags.from, c.args]),
    [["build", `${build.instructions.find((i) => i.keyword === "WORKDIR")?.args} /app`]],
    "the runtime stage copies the build stage's folder, nothing else",
  );
  t.equal(last(runtime, "WORKDIR")?.args, "/app");
  for (const run of all(runtime, "RUN")) {
    for (const command of runCommands(run.args)) {
      const link = /^ln -s (\S+) \/usr\/local\/bin\/agentmon$/.exec(command);
      if (link) t.ok(statSync(at(link[1] as string)).mode & 0o100, `${link[1]} is there and executable`);
      else if (!/^(mkdir -p \/data|chown node:node \/data)$/.test(command)) t.fail(`unknown runtime step ${command}`);
    }
  }
  mkdirSync(data);
  const env: Record<string, string> = { PATH: process.env.PATH ?? "/usr/bin:/bin", HOME: top };
  for (const e of all(runtime, "ENV")) for (const [k, v] of envPairs(e.args)) env[k] = v.replace(/^\/data\b/, data);
  // Only 127.0.0.1 in this test, and any free port.
  Object.assign(env, { HOST: "127.0.0.1", PORT: "0" });
  const before = snapshot(app);

  const [command = "", ...args] = execForm(last(runtime, "CMD")?.args ?? "") ?? [];
  const server = spawn(command === "node" ? process.execPath : command, args, { cwd: app, env });
  let output = "";
  server.stdout.on("data", (chunk) => {
    output += chunk;
  });
  server.stderr.on("data", (chunk) => {
    output += chunk;
  });
  const exited = new Promise<number | null>((resolve) => server.on("exit", (code) => resolve(code)));
  t.teardown(() => {
    if (server.exitCode === null) server.kill("SIGKILL");
  });
  const base = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no start within 60 s: ${output}`)), 60_000);
    const look = () => {
      const match = /listening on (http:\/\/127\.0\.0\.1:\d+)/.exec(output);
      if (match) {
        clearTimeout(timer);
        resolve(match[1] as string);
      }
    };
    server.stdout.on("data", look);
    server.on("exit", () => reject(new Error(`exited before listening: ${output}`)));
  });
  t.notMatch(output, /cannot bundle/, "it runs the bundle the build stage made");
  const key = /It is shown only now:\n\s+([0-9a-f-]{36})/.exec(output)?.[1] as string;
  // What the server printed goes with the assertion, so that a failure says why.
  t.ok(key, "the first start made an API key and showed it", { output });

  t.equal((await fetch(`${base}/healthz`)).status, 200, "/healthz");
  t.equal((await fetch(`${base}/readyz`)).status, 200, "/readyz: the database on /data commits a write");
  const created = await fetch(`${base}/v2/create_session`, {
    method: "POST",
    headers: { "x-agentmon-api-key": key, "content-type": "application/json" },
    body: JSON.stringify({ session: { id: "in-the-container" } }),
  });
  t.equal(created.status, 200, "a session is recorded");
  t.equal(await (await fetch(`${base}/v2/openapi.yaml`)).text(), readFileSync(join(root, "openapi.yaml"), "utf8"));
  t.equal((await fetch(`${base}/`)).status, 200, "the web UI");
  t.ok(existsSync(env.AGENTMON_DB as string), "the database file is on the volume");

  const health = execForm(last(runtime, "HEALTHCHECK")?.args.replace(/^CMD /, "") ?? "") ?? [];
  const port = new URL(base).port;
  const check = () =>
    spawnSync(health[0] === "node" ? process.execPath : (health[0] as string), health.slice(1), {
      env: { ...env, PORT: port },
      encoding: "utf8",
      timeout: 20_000,
    }).status;
  t.equal(check(), 0, "the HEALTHCHECK passes");

  const keys = spawnSync(process.execPath, ["bin/agentmon.js", "keys", "list"], { cwd: app, env, encoding: "utf8" });
  t.equal(keys.status, 0, "`agentmon keys list` runs in the image");
  t.match(keys.stdout, key.slice(0, 8), "and shows the key's prefix");

  server.kill("SIGTERM");
  t.equal(await exited, 0, "SIGTERM stops it with 0");
  t.not(check(), 0, "the HEALTHCHECK fails once the server is gone");

  const changed = [...snapshot(app)].filter(([file, sig]) => before.get(file) !== sig).map(([file]) => file);
  t.same(changed, [], "nothing was written in /app: the image's files can stay root's");
  t.comment(`the whole check took ${((Date.now() - started) / 1000).toFixed(1)} s`);
});
