/**
 * Storage faults (openapi.yaml O4): a full disk, a read-only database file, a database that cannot
 * grow and one locked by another process. Writes answer 503 with Retry-After and store nothing,
 * no 200 is ever given for data that was not stored, and the server recovers on its own once the
 * fault clears. The disk and the file are real: a small tmpfs that fills up, and a file made
 * immutable (chattr +i), which refuses writes even through the descriptors already open. Both need
 * root; without it those two tests say so and are skipped, and the other two still run.
 */
import { execFileSync } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import t from "tap";
import { openDb } from "../db/sqlite/open.ts";
import { sqliteStore } from "../db/sqlite/store.ts";
import { build, inspect, tempDir } from "./helper.ts";

const run = (command: string, ...args: string[]) => {
  try {
    execFileSync(command, args, { stdio: "pipe" });
    return true;
  } catch {
    return false;
  }
};

/** A batch big enough to need new pages: about 200 KB of prompts. */
const batch = (prefix: string, n = 50) => ({
  events: Array.from({ length: n }, (_, i) => ({
    id: `${prefix}-${i}`,
    type: "llm",
    model: "gpt-4o-mini",
    prompt: [{ role: "user", content: `${prefix} ${i} ${"lorem ipsum ".repeat(340)}` }],
  })),
});

/** Whether this machine lets the test mount a tmpfs and make a file immutable (both need root). */
function probe(): { mount: boolean; chattr: boolean } {
  const dir = mkdtempSync(join(tmpdir(), "agentmon-probe-"));
  try {
    const mount = run("mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", dir) && run("umount", dir);
    const file = join(dir, "file");
    writeFileSync(file, "x");
    const chattr = run("chattr", "+i", file) && run("chattr", "-i", file);
    return { mount, chattr };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
const can = probe();
const noMount = "SKIPPED: cannot mount a tmpfs here (needs root); the max_page_count test covers the same path";
const noChattr = "SKIPPED: chattr +i is not available here (needs root on ext4); the other tests cover the 503 path";

const FAULT_MESSAGE = /^Storage is unavailable \((.+)\); nothing was stored\. Retry after 5 seconds$/;

t.test(
  "O4: the disk fills up: writes answer 503 and store nothing, then recover once space is freed",
  { skip: can.mount ? false : noMount },
  async (t) => {
    const dir = tempDir(t);
    const disk = join(dir, "disk");
    mkdirSync(disk);
    t.ok(run("mount", "-t", "tmpfs", "-o", "size=2m", "tmpfs", disk), "a 2 MiB tmpfs is mounted");
    t.teardown(() => {
      run("umount", "-l", disk);
    });
    const { app, store, withJwt, session } = await build(t, { dbPath: join(disk, "agentmon.db") });
    t.teardown(() => app.close()); // before the umount above (teardowns run in reverse order)
    const jwt = await session("full-disk");
    t.equal((await withJwt("/v2/create_events", batch("before", 2), jwt)).statusCode, 200, "writes work at first");

    // Fill what is left of the disk.
    const filler = join(disk, "filler");
    let size = 4 * 1024 * 1024;
    while (size >= 1024) {
      try {
        writeFileSync(filler, Buffer.alloc(size), { flag: "a" });
      } catch {
        size = Math.floor(size / 2);
      }
    }

    const acknowledged: string[] = [];
    const refused: string[] = [];
    for (let round = 0; round < 5; round++) {
      const prefix = `full-${round}`;
      const res = await withJwt("/v2/create_events", batch(prefix), jwt);
      if (res.statusCode === 200) acknowledged.push(prefix);
      else {
        t.equal(res.statusCode, 503, `${prefix}: 503`);
        t.equal(res.headers["retry-after"], "5", `${prefix}: Retry-After`);
        t.same(res.json().error, "Service unavailable");
        t.match(res.json().message, FAULT_MESSAGE);
        refused.push(prefix);
      }
    }
    t.ok(refused.length > 0, `a full disk refused ${refused.length} of 5 batches of 200 KB`);
    t.equal((await app.inject({ method: "GET", url: "/healthz" })).statusCode, 200, "liveness is unaffected");

    rmSync(filler);
    const retried = await withJwt("/v2/create_events", batch(refused[0] ?? "none"), jwt);
    t.equal(retried.statusCode, 200, "the refused batch is taken once space is freed, with no restart");
    t.equal((await app.inject({ method: "GET", url: "/readyz" })).statusCode, 200, "ready again");

    const stored = new Set((await inspect(store).listEvents("full-disk")).map((e) => e.id));
    for (const prefix of [...acknowledged, refused[0]]) {
      t.ok(
        batch(prefix ?? "").events.every((e) => stored.has(e.id)),
        `every event of acknowledged batch ${prefix} is stored`,
      );
    }
    for (const prefix of refused.slice(1)) {
      t.notOk(
        batch(prefix).events.some((e) => stored.has(e.id)),
        `nothing of refused batch ${prefix} is stored`,
      );
    }
  },
);

t.test(
  "O4: the database file turns read-only: writes answer 503, reads and liveness go on, then it recovers",
  { skip: can.chattr ? false : noChattr },
  async (t) => {
    const dir = tempDir(t);
    const path = join(dir, "agentmon.db");
    const { app, store, withJwt, withKey, session } = await build(t, { dbPath: path });
    const jwt = await session("read-only");
    t.equal((await withJwt("/v2/create_events", batch("before", 2), jwt)).statusCode, 200);
    const files = [path, `${path}-wal`]; // not -shm: it is memory-mapped, and SQLite keeps it writable
    t.ok(run("chattr", "+i", ...files), "the database file and its WAL are made immutable");
    t.teardown(() => {
      run("chattr", "-i", ...files);
    });

    const refused = await withJwt("/v2/create_events", batch("ro"), jwt);
    t.equal(refused.statusCode, 503);
    t.equal(refused.headers["retry-after"], "5");
    t.same(refused.json(), {
      error: "Service unavailable",
      message: "Storage is unavailable (the disk reported an I/O error); nothing was stored. Retry after 5 seconds",
    });
    const create = await withKey("/v2/create_session", { session: { id: "while-read-only" } });
    t.equal(create.statusCode, 503, "create_session too");
    const ready = await app.inject({ method: "GET", url: "/readyz" });
    t.equal(ready.statusCode, 503, "/readyz says not ready");
    t.same(ready.json(), { error: "Service unavailable", message: "Not ready: the disk reported an I/O error" });
    t.equal((await app.inject({ method: "GET", url: "/healthz" })).statusCode, 200, "liveness is unaffected");
    t.same(
      (await inspect(store).listEvents("read-only")).map((e) => e.id),
      ["before-0", "before-1"],
      "reads still work and show nothing of the refused batch",
    );

    run("chattr", "-i", ...files);
    t.equal((await withJwt("/v2/create_events", batch("ro"), jwt)).statusCode, 200, "taken once writable again");
    t.equal((await withKey("/v2/create_session", { session: { id: "while-read-only" } })).statusCode, 200);
    t.equal((await app.inject({ method: "GET", url: "/readyz" })).statusCode, 200, "ready again");
    t.equal((await inspect(store).listEvents("read-only")).length, 52, "the retried batch is stored once");
  },
);

t.test("O4: a database that cannot grow (max_page_count) refuses with 503 and recovers when it can", async (t) => {
  const dir = tempDir(t);
  const db = openDb(join(dir, "agentmon.db"));
  const { store, withJwt, session } = await build(t, { store: sqliteStore(db) });
  const jwt = await session("capped");
  const pages = db.pragma("page_count", { simple: true }) as number;
  db.pragma(`max_page_count = ${pages + 2}`);

  const refused = await withJwt("/v2/create_events", batch("capped"), jwt);
  t.equal(refused.statusCode, 503);
  t.same(refused.json(), {
    error: "Service unavailable",
    message: "Storage is unavailable (the disk is full); nothing was stored. Retry after 5 seconds",
  });
  t.same(await inspect(store).listEvents("capped"), [], "no half batch: none of its 50 events is stored");

  db.pragma("max_page_count = 1073741823");
  t.equal((await withJwt("/v2/create_events", batch("capped"), jwt)).statusCode, 200, "taken once it can grow");
  t.equal((await inspect(store).listEvents("capped")).length, 50);
  t.equal(db.pragma("integrity_check", { simple: true }), "ok");
});

t.test("O4: a database locked by another process answers 503 after the busy timeout, then recovers", async (t) => {
  const dir = tempDir(t);
  const path = join(dir, "agentmon.db");
  const db = openDb(path);
  db.pragma("busy_timeout = 50"); // the default is 5 s; the test need not wait that long
  const { store, withJwt, session } = await build(t, { store: sqliteStore(db) });
  const jwt = await session("locked");

  const other = openDb(path); // another process's connection, holding the write lock
  t.teardown(() => other.close());
  other.exec("BEGIN IMMEDIATE");
  const refused = await withJwt("/v2/create_events", batch("locked", 3), jwt);
  t.equal(refused.statusCode, 503);
  t.equal(refused.headers["retry-after"], "5");
  t.equal(
    refused.json().message,
    "Storage is unavailable (the database is locked by another process); nothing was stored. Retry after 5 seconds",
  );
  other.exec("COMMIT");

  t.equal((await withJwt("/v2/create_events", batch("locked", 3), jwt)).statusCode, 200, "taken once unlocked");
  t.equal((await inspect(store).listEvents("locked")).length, 3);
});
