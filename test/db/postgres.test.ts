/**
 * The PostgreSQL adapter without HTTP (issue 14): what only a database shared by several nodes
 * can get wrong. Several stores on one database stand for several nodes: migrations started
 * together, read-merge-write calls racing through different stores, a revoke through one seen by
 * the others' writes at once, a lost connection answered as a typed error. What every Store must
 * do is test/db/store.contract.ts, run on this adapter by store.postgres.test.ts.
 */
import pg from "pg";
import t, { type Test } from "tap";
import { KeyRevoked, SchemaMismatch, StorageFault } from "../../db/errors.ts";
import { schemaVersion } from "../../db/postgres/migrate.ts";
import { openPostgresStore, type PostgresStore } from "../../db/postgres/store.ts";
import { postgresRequired, postgresUnavailable, testDatabase } from "../postgres.ts";
import { newEvent, newSession, US0 } from "./records.ts";

const unavailable = await postgresUnavailable();
if (unavailable !== undefined && !postgresRequired()) {
  t.comment(`the PostgreSQL adapter tests are skipped: ${unavailable}`);
} else {
  /** `n` stores on one new database, as `n` nodes would open it; closed when the test ends. */
  const nodes = async (t: Test, n: number, url?: string) => {
    const database = url ?? (await testDatabase(t));
    const stores = await Promise.all(Array.from({ length: n }, () => openPostgresStore({ url: database })));
    t.teardown(() => Promise.all(stores.map((store) => store.close())));
    return { url: database, stores };
  };
  const raw = async (url: string, sql: string, values: unknown[] = []) => {
    const client = new pg.Client({ connectionString: url });
    await client.connect();
    try {
      return (await client.query(sql, values)).rows;
    } finally {
      await client.end();
    }
  };

  t.test(
    "migrations: five nodes starting at once on an empty database all come up, at the latest version",
    async (t) => {
      const url = await testDatabase(t);
      // The template is migrated already: start from an empty schema, as a new database is.
      await raw(url, "DROP SCHEMA public CASCADE; CREATE SCHEMA public");
      const { stores } = await nodes(t, 5, url);
      for (const store of stores) t.equal(await store.ping(new Date().toISOString()), schemaVersion());
      t.same(await raw(url, "SELECT version FROM agentmon_schema"), [{ version: schemaVersion() }], "one version row");
    },
  );

  t.test("migrations: a database from a newer agentmon is refused, and left as it was", async (t) => {
    const url = await testDatabase(t);
    await raw(url, "UPDATE agentmon_schema SET version = 99");
    await t.rejects(openPostgresStore({ url }), SchemaMismatch);
    t.same(await raw(url, "SELECT version FROM agentmon_schema"), [{ version: 99 }]);
  });

  t.test("update_session through three nodes at once: no field is lost (row lock)", async (t) => {
    const { stores } = await nodes(t, 3);
    const [a] = stores as [PostgresStore];
    const key = await a.createApiKey("h", "p", "default", new Date().toISOString());
    await a.createSession(key.project_id, newSession("s"));
    await Promise.all(
      Array.from({ length: 60 }, (_, i) =>
        (stores[i % 3] as PostgresStore).updateSession(key.project_id, "s", { extra: { [`f${i}`]: i } }, key.id),
      ),
    );
    for (const store of stores) {
      const session = await store.getSession(key.project_id, "s");
      t.equal(Object.keys(session?.extra ?? {}).length, 60, "every node reads all 60 fields");
    }
  });

  t.test("create_agent and update_events through several nodes at once merge, none lost", async (t) => {
    const { stores } = await nodes(t, 3);
    const [a] = stores as [PostgresStore];
    const key = await a.createApiKey("h", "p", "default", new Date().toISOString());
    await a.createSession(key.project_id, newSession("s"));
    await a.insertEvents(key.project_id, "s", [newEvent("e", { fields: { prompt: "hi" } })]);
    await Promise.all(
      Array.from({ length: 30 }, (_, i) =>
        (stores[i % 3] as PostgresStore).upsertAgent(key.project_id, "s", {
          id: "a",
          name: null,
          extra: { [`k${i}`]: i },
        }),
      ),
    );
    const snapshot = await a.readSession(key.project_id, "s", { agents: true, events: true });
    t.equal(Object.keys(snapshot?.agents[0]?.extra ?? {}).length, 30, "the agent has every node's extras");
    await Promise.all(
      Array.from({ length: 30 }, (_, i) =>
        (stores[i % 3] as PostgresStore).updateEvents(key.project_id, "s", [
          {
            id: "e",
            type: undefined,
            session_id: undefined,
            init: undefined,
            fields: {},
            aliases: [],
            extra: { [`u${i}`]: i },
          },
        ]),
      ),
    );
    const after = await a.readSession(key.project_id, "s", { agents: false, events: true });
    t.equal(Object.keys(after?.events[0]?.extra ?? {}).filter((k) => k.startsWith("u")).length, 30);
  });

  t.test("a key revoked through one node fails the next write of its JWTs on every node (4.3)", async (t) => {
    const { stores } = await nodes(t, 3);
    const [a, b, c] = stores as [PostgresStore, PostgresStore, PostgresStore];
    const key = await a.createApiKey("h", "p", "default", new Date().toISOString());
    await a.createSession(key.project_id, newSession("s"));
    t.equal(await b.insertEvents(key.project_id, "s", [newEvent("before")], key.id), 1);
    await c.revokeApiKey(key.id, new Date().toISOString());
    for (const store of stores) {
      await t.rejects(store.insertEvents(key.project_id, "s", [newEvent("after")], key.id), KeyRevoked);
      await t.rejects(store.updateSession(key.project_id, "s", { extra: { x: 1 } }, key.id), KeyRevoked);
      t.equal((await store.apiKeyById(key.id))?.revoked_at !== null, true, "every node reads the revoke");
    }
    const events = (await a.readSession(key.project_id, "s", { agents: false, events: true }))?.events ?? [];
    t.same(
      events.map((e) => e.id),
      ["before"],
      "nothing after the revoke was stored",
    );
  });

  t.test("the JWT secret: nodes starting together all get the first one's", async (t) => {
    const { stores } = await nodes(t, 4);
    const secrets = await Promise.all(stores.map((store, i) => store.metaValue("jwt_secret", `secret-${i}`)));
    t.equal(new Set(secrets).size, 1, `one secret: ${secrets.join(", ")}`);
  });

  t.test(
    "events of one session through three nodes at once, with retries through the others: each stored once",
    async (t) => {
      const { stores } = await nodes(t, 3);
      const [a] = stores as [PostgresStore];
      const key = await a.createApiKey("h", "p", "default", new Date().toISOString());
      await a.createSession(key.project_id, newSession("s"));
      const batches = Array.from({ length: 30 }, (_, i) =>
        Array.from({ length: 20 }, (_, j) => newEvent(`e${i}-${j}`, { init_us: US0 + i * 1000 + j })),
      );
      await Promise.all(
        batches.flatMap((batch, i) => [
          (stores[i % 3] as PostgresStore).insertEvents(key.project_id, "s", batch, key.id),
          (stores[(i + 1) % 3] as PostgresStore).insertEvents(key.project_id, "s", batch, key.id),
        ]),
      );
      const events = (await a.readSession(key.project_id, "s", { agents: false, events: true }))?.events ?? [];
      t.equal(events.length, 600, "600 events");
      t.equal(new Set(events.map((e) => e.id)).size, 600, "no duplicate");
    },
  );

  t.test("a write that deadlocks with another transaction is run again, not answered busy", async (t) => {
    const { url, stores } = await nodes(t, 1);
    const [store] = stores as [PostgresStore];
    const key = await store.createApiKey("h", "p", "default", new Date().toISOString());
    await store.createSession(key.project_id, newSession("s"));
    // Another node's transaction holds event b; the write inserts a (ids in order), then waits
    // for b; the other then inserts a: a deadlock, which PostgreSQL breaks by failing the write
    // (the first to wait). The other rolls back; the write, run again, stores both.
    const other = new pg.Client({ connectionString: url });
    await other.connect();
    t.teardown(() => other.end());
    const insert = (id: string) =>
      other.query(
        `INSERT INTO events (session_pk, id, type, init_timestamp, init_us, body, extra)
         SELECT pk, $1, 'action', '2024-01-01T00:00:00.000Z', 0, '{}', '{}' FROM sessions WHERE id = 's'`,
        [id],
      );
    await other.query("BEGIN");
    await insert("b");
    const write = store.insertEvents(key.project_id, "s", [newEvent("a"), newEvent("b")], key.id);
    const waiting = async () => {
      for (let i = 0; i < 200; i++) {
        const rows = await raw(
          url,
          "SELECT 1 FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND datname = current_database()",
        );
        if (rows.length > 0) return true;
        await new Promise((resolve) => setTimeout(resolve, 25));
      }
      return false;
    };
    t.ok(await waiting(), "the write waits for the other's event b");
    const deadlock = await insert("a").then(
      () => "",
      (error: { code?: string }) => error.code ?? "",
    );
    t.equal(deadlock, "", "the other's insert of a goes through: the write was the one failed");
    await other.query("ROLLBACK");
    t.equal(await write, 2, "the write succeeds, run again: both its events stored");
    const events = (await store.readSession(key.project_id, "s", { agents: false, events: true }))?.events ?? [];
    t.same(events.map((e) => e.id).sort(), ["a", "b"], "both events, once each");
  });

  t.test("timestamps keep their microseconds, and JSON its key order as sent (text, not jsonb)", async (t) => {
    const { stores } = await nodes(t, 1);
    const [store] = stores as [PostgresStore];
    const key = await store.createApiKey("h", "p", "default", new Date().toISOString());
    await store.createSession(
      key.project_id,
      newSession("s", {
        init_timestamp: "2026-11-22T05:00:00.123456Z",
        init_us: US0 + 123_456,
        extra: { z: 1, a: 2, m: { y: 1, b: 2 } },
      }),
    );
    const session = await store.getSession(key.project_id, "s");
    t.equal(session?.init_timestamp, "2026-11-22T05:00:00.123456Z");
    t.equal(session?.init_us, US0 + 123_456);
    t.same(JSON.stringify(session?.extra), '{"z":1,"a":2,"m":{"y":1,"b":2}}', "key order as sent");
  });

  t.test("a connection the server drops is a typed error for the call, and the store goes on", async (t) => {
    const { url, stores } = await nodes(t, 1);
    const [store] = stores as [PostgresStore];
    const key = await store.createApiKey("h", "p", "default", new Date().toISOString());
    await store.createSession(key.project_id, newSession("s"));
    const database = new URL(url).pathname.slice(1);
    // Every connection of the store ends, as when PostgreSQL restarts or a proxy drops them.
    await raw(
      url,
      "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()",
      [database],
    );
    const outcomes = await Promise.allSettled([
      store.insertEvents(key.project_id, "s", [newEvent("x")]),
      store.getSession(key.project_id, "s"),
    ]);
    for (const outcome of outcomes) {
      if (outcome.status === "rejected") t.type(outcome.reason, StorageFault, "a failure is a StorageFault (503)");
      else t.pass("or it went through on a new connection");
    }
    // The pool makes new connections: the store works again.
    t.equal(await store.insertEvents(key.project_id, "s", [newEvent("y")]), 1);
    t.ok(await store.getSession(key.project_id, "s"));
  });

  t.test("a server that does not answer: opening fails with a typed error, not a crash", async (t) => {
    await t.rejects(openPostgresStore({ url: "postgres://postgres@127.0.0.1:1/none" }), StorageFault);
  });
}
