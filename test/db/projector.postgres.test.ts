/**
 * The PostgreSQL projector (db/postgres/projector.ts, docs/decisions/033-projections-postgres.md)
 * under the interleaving that a watermark over a sequence gets wrong: writer A begins, stores
 * events and their queue entry and does not commit; writer B stores events of the same session
 * and commits; the projector runs (A's rows and entry are invisible to it); A commits; the
 * projector runs again. Nothing may be skipped or counted twice: every projection must equal a
 * rebuild from the raw rows, table by table. Errors name triggers across the two writers, so the
 * shares' waiting errors are at work too.
 */
import pg from "pg";
import t, { type Test } from "tap";
import { eventColumns, INSERT_QUEUED_EVENTS } from "../../db/postgres/group-commit.ts";
import { PROJECTOR_LOCK } from "../../db/postgres/projector.ts";
import { openPostgresStore, type PostgresStore } from "../../db/postgres/store.ts";
import { eventRow } from "../../db/rows.ts";
import { histogramBucket } from "../../domain/analytics.ts";
import type { EventRecord } from "../../domain/types.ts";
import { postgresRequired, postgresUnavailable, testDatabase } from "../postgres.ts";
import { eventAt, newSession } from "./contract/values.ts";
import { US0 } from "./records.ts";

const SECOND = 1_000_000;

/** Every projection's rows, in key order (the sessions' totals included). */
const TABLES: Record<string, string> = {
  totals: `SELECT pk, event_count, llm_count, tool_count, action_count, error_count, prompt_tokens, completion_tokens,
      cache_read_tokens, cache_creation_tokens, reasoning_tokens, cost, first_us, last_us, duration_us
    FROM sessions ORDER BY pk`,
  session_models: "SELECT * FROM session_models ORDER BY session_pk, model",
  session_rollups: "SELECT * FROM session_rollups ORDER BY project_id, slot_us",
  session_rollup_durations: "SELECT * FROM session_rollup_durations ORDER BY project_id, slot_us, bucket",
  event_rollups: 'SELECT * FROM event_rollups ORDER BY project_id, dim, level, slot_us, key COLLATE "C"',
  event_rollup_durations:
    'SELECT * FROM event_rollup_durations ORDER BY project_id, dim, level, slot_us, key COLLATE "C", bucket',
};

async function tables(db: pg.Pool) {
  const found: Record<string, Record<string, unknown>[]> = {};
  for (const [name, sql] of Object.entries(TABLES)) found[name] = (await db.query(sql)).rows;
  return found;
}

/** Projected against rebuilt: sums exact, cost within 1e-9 relative, max_us at least the rebuilt one, in its bucket. */
function same(t: Test, projected: Record<string, Record<string, unknown>[]>, rebuilt: typeof projected) {
  for (const [name, rows] of Object.entries(rebuilt)) {
    const got = projected[name] ?? [];
    t.equal(got.length, rows.length, `${name}: as many rows (${rows.length})`);
    rows.forEach((want, i) => {
      const have = got[i] ?? {};
      const { cost, max_us, ...sums } = have;
      const { cost: wantCost, max_us: wantMax, ...wantSums } = want;
      t.strictSame(sums, wantSums, `${name}, row ${i}: keys and sums`);
      if (wantCost !== undefined) {
        const [a, b] = [Number(cost), Number(wantCost)];
        t.ok(Math.abs(a - b) <= 1e-9 * Math.max(1, Math.abs(b)), `${name}, row ${i}: cost ${a} for ${b}`);
      }
      if (wantMax !== undefined) {
        const [a, b] = [Number(max_us), Number(wantMax)];
        t.ok(a >= b && histogramBucket(a) === histogramBucket(b), `${name}, row ${i}: max_us ${a} for ${b}`);
      }
    });
  }
}

const settle = async (store: PostgresStore) => {
  while ((await store.projectBatch()) > 0) {}
};

const unavailable = await postgresUnavailable();
if (unavailable !== undefined && !postgresRequired()) {
  t.comment(`skipped: ${unavailable}`);
} else {
  t.test("a write that commits after a later one is projected once: nothing skipped, nothing twice", async (t) => {
    const url = await testDatabase(t);
    const store = await openPostgresStore({ url });
    t.teardown(() => store.close());
    const p = (await store.createApiKey("h", "p", "default", new Date().toISOString())).project_id;
    await store.createSession(p, newSession("s", { end_timestamp: "2026-11-22T06:00:00Z", end_state: "Fail" }));
    await store.createSession(p, newSession("other"));
    await store.insertEvents(p, "s", [
      eventAt("seed", US0 + SECOND, { model: "m1", prompt_tokens: 3, cost: 0.25 }, US0 + 2 * SECOND),
    ]);
    await settle(store);
    const { rows } = await store.pool.query<{ pk: number }>("SELECT pk FROM sessions WHERE id = 's'");
    const pk = rows[0]?.pk as number;

    // Writer A: events of s (an llm event B's error names, an error naming B's tool event, a
    // tool event) and their queue entry, in a transaction left open.
    const a = new pg.Client({ connectionString: url });
    await a.connect();
    t.teardown(() => a.end());
    const rowsOf = (events: EventRecord[]) => eventColumns(events.map((e) => ({ pk, row: eventRow(e) })));
    await a.query("BEGIN");
    await a.query(
      INSERT_QUEUED_EVENTS,
      rowsOf([
        eventAt(
          "a-llm",
          US0 + 3 * SECOND,
          { model: "m2", prompt_tokens: 7, completion_tokens: 1, cost: 0.1 },
          US0 + 9 * SECOND,
        ),
        eventAt("a-error", US0 + 4 * SECOND, { type: "error", model: null, fields: { trigger_event_id: "b-tool" } }),
        eventAt("a-tool", US0 + 5 * SECOND, { type: "tool", model: null, fields: { name: "fetch" } }, US0 + 6 * SECOND),
      ]),
    );

    // Writer B, through the store: committed and acknowledged while A is open.
    const stored = await store.insertEvents(p, "s", [
      eventAt("b-tool", US0 + 6 * SECOND, { type: "tool", model: null, fields: { name: "search" } }, US0 + 8 * SECOND),
      eventAt("b-error", US0 + 7 * SECOND, { type: "error", model: null, fields: { trigger_event_id: "a-llm" } }),
      eventAt("b-llm", US0 + 8 * SECOND, { model: "m1", prompt_tokens: 5, completion_tokens: 2, cost: 0.5 }),
    ]);
    t.equal(stored, 3, "B's events are stored while A's transaction is open");
    const seqOf = async (db: pg.ClientBase | pg.Pool, id: string) =>
      Number((await db.query("SELECT seq FROM projection_queue WHERE $1 = ANY(ids)", [id])).rows[0]?.seq);
    t.ok(
      (await seqOf(a, "a-llm")) < (await seqOf(store.pool, "b-tool")),
      "A's entry has the lower seq, and commits last",
    );
    t.equal(await store.projectBatch(), 0, "the projector takes all it sees (A's entry is invisible to it)");
    const between = await store.readSession(p, "s", { agents: false, events: false });
    t.equal(between?.totals.events, 4, "a read meanwhile counts the seed and B's events, not A's");

    await a.query("COMMIT");
    t.equal((await store.stats()).projection?.backlog, 1, "A's entry is queued once A commits");
    await settle(store);
    const after = await store.readSession(p, "s", { agents: false, events: false });
    t.equal(after?.totals.events, 7, "then A's events are counted too");
    t.equal(after?.totals.event_counts.error, 2, "both errors");

    const projected = await tables(store.pool);
    await store.rebuildProjections();
    await settle(store);
    const rebuilt = await tables(store.pool);
    t.ok((rebuilt.event_rollups?.length ?? 0) > 10, "the rebuild rolled the events up");
    same(t, projected, rebuilt);
    // The errors' groups: b-error in the llm event's (model m2), a-error in the tool event's (search).
    const errors = await store.pool.query<{ dim: string; key: string; error_events: number }>(
      "SELECT dim, key, error_events FROM event_rollups WHERE level = 0 AND error_events > 0 ORDER BY dim, key",
    );
    t.strictSame(
      errors.rows.map((r) => [r.dim, r.key, r.error_events]),
      [
        ["model", "=m2", 1],
        ["tool", "=search", 1],
        ["type", "=llm", 1],
        ["type", "=tool", 1],
      ],
      "each error in its trigger's groups, once",
    );
  });

  t.test("two nodes writing and reading at once: every read exact, the projections a rebuild's", async (t) => {
    const url = await testDatabase(t);
    const nodes: [PostgresStore, PostgresStore] = [await openPostgresStore({ url }), await openPostgresStore({ url })];
    t.teardown(() => Promise.all(nodes.map((n) => n.close())));
    const p = (await nodes[0].createApiKey("h", "p", "default", new Date().toISOString())).project_id;
    const SESSIONS = 6;
    for (let s = 0; s < SESSIONS; s++) {
      await (nodes[s % 2] as PostgresStore).createSession(p, newSession(`s${s}`, { init_us: US0 + s * 3600 * SECOND }));
    }
    // Each node writes to every session and reads its totals after each write: they count at least
    // every write acknowledged (on either node) before the read began, and no more than is stored.
    const acknowledged: number[] = Array(SESSIONS).fill(0);
    const writes = Array.from({ length: 2 }, (_, n) =>
      (async () => {
        const node = nodes[n] as PostgresStore;
        for (let round = 0; round < 10; round++) {
          for (let s = 0; s < SESSIONS; s++) {
            const at = US0 + s * 3600 * SECOND + round * SECOND;
            await node.insertEvents(p, `s${s}`, [
              eventAt(`n${n}-r${round}-llm`, at, { model: `m${round % 3}`, prompt_tokens: round, cost: 0.01 * round }),
              eventAt(
                `n${n}-r${round}-tool`,
                at + 1,
                { type: "tool", model: null, fields: { name: `t${s}` } },
                at + 99,
              ),
            ]);
            acknowledged[s] = (acknowledged[s] as number) + 2;
            const before = acknowledged[s] as number;
            const read = await node.readSession(p, `s${s}`, { agents: false, events: true });
            const counted = read?.totals.events ?? -1;
            if (counted < before || counted > (read?.events.length ?? 0)) {
              t.fail(`node ${n}, round ${round}, s${s}: ${counted} counted, ${before} acknowledged before`);
            }
          }
        }
      })(),
    );
    await Promise.all(writes);
    const listed = await nodes[1].listSessions(p, {}, undefined, 100);
    t.strictSame(
      listed.items.map((i) => i.totals.events),
      Array(SESSIONS).fill(40),
      "every session: 40 events, on the other node",
    );
    await settle(nodes[0]);
    const projected = await tables(nodes[0].pool);
    await nodes[1].rebuildProjections();
    await settle(nodes[1]);
    same(t, projected, await tables(nodes[0].pool));
  });

  t.test("a node that dies holding the projector's lock: reads on another wait for it, then project", async (t) => {
    const url = await testDatabase(t);
    const store = await openPostgresStore({ url });
    t.teardown(() => store.close());
    const p = (await store.createApiKey("h", "p", "default", new Date().toISOString())).project_id;
    await store.createSession(p, newSession("s"));
    await settle(store);
    // The "projecting node": a connection holding the lock, as a node in the middle of a batch.
    const dying = new pg.Client({ connectionString: url });
    dying.on("error", () => undefined);
    await dying.connect();
    await dying.query("SELECT pg_advisory_lock($1)", [PROJECTOR_LOCK]);
    await store.insertEvents(p, "s", [eventAt("e1", US0 + SECOND), eventAt("e2", US0 + 2 * SECOND)]);
    let answered = false;
    const read = store.readSession(p, "s", { agents: false, events: false }).then((found) => {
      answered = true;
      return found;
    });
    const waiting = async () => {
      for (let i = 0; i < 200; i++) {
        const { rows: waits } = await store.pool.query(
          "SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND NOT granted AND objid = $1",
          [PROJECTOR_LOCK],
        );
        if (waits.length > 0) return true;
        await new Promise((resolve) => setTimeout(resolve, 25));
      }
      return false;
    };
    t.ok(await waiting(), "the read waits for the lock");
    t.notOk(answered, "and has not answered");
    // The node dies: its connection goes, and the server frees its lock.
    await dying.query("SELECT pg_terminate_backend(pg_backend_pid())").catch(() => undefined);
    t.equal((await read)?.totals.events, 2, "the read then projects, and counts both events");
    t.equal((await store.stats()).projection?.backlog, 0, "nothing left queued");
  });

  t.test("entries a dead node left queued are projected by an idle node, with no write nor read on it", async (t) => {
    const url = await testDatabase(t);
    const idle = await openPostgresStore({ url });
    t.teardown(() => idle.close());
    const p = (await idle.createApiKey("h", "p", "default", new Date().toISOString())).project_id;
    await idle.createSession(p, newSession("s"));
    await settle(idle);
    // The dying node: its write commits, and it stops before its projector's batch (scheduled
    // 20 ms after the commit) runs.
    const dying = await openPostgresStore({ url });
    await dying.insertEvents(p, "s", [eventAt("e1", US0 + SECOND), eventAt("e2", US0 + 2 * SECOND)]);
    await dying.close();
    const queued = async () =>
      Number((await idle.pool.query<{ n: string }>("SELECT count(*) AS n FROM projection_queue")).rows[0]?.n);
    t.ok((await queued()) > 0, "the dead node's entries are queued");
    const started = Date.now();
    // No call on the idle node's Store: only its own watch can project them (tap's timeout bounds this).
    while ((await queued()) > 0) await new Promise((resolve) => setTimeout(resolve, 50));
    const { rows } = await idle.pool.query<{ event_count: number }>("SELECT event_count FROM sessions WHERE id = 's'");
    t.equal(Number(rows[0]?.event_count), 2, "projected: the session's totals count both events");
    t.comment(`the idle node projected the dead node's entries ${Date.now() - started} ms after it stopped`);
  });
}
