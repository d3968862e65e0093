/**
 * Issue 24, the crash test on PostgreSQL: kill -9 of the node of three that is projecting, in the
 * middle of a batch (docs/decisions/033-projections-postgres.md). Three `agentmon serve` nodes on
 * one database take create_events batches (llm, tool, action and error events with models, tokens
 * and costs: test/crash/batches.ts) and scores from clients that spread their calls over the nodes
 * as a balancer would. The node that holds the projector's advisory lock (PROJECTOR_LOCK) inside a
 * batch's transaction is killed with SIGKILL; then:
 * - another node takes over: every queue entry there was at the kill is projected, and the whole
 *   queue drains to zero, while the survivors keep acknowledging writes (nothing here reads until
 *   then: the survivors' own scheduling does it);
 * - reads through each survivor are exact: every session's stats and the hourly timeseries (read
 *   from the rollups) equal what the test computes from what it sent;
 * - every projection table equals a rebuild from the raw rows, table by table (the Store contract's
 *   rules: test/db/contract/projections.ts `differences`);
 * - nothing acknowledged is lost or stored twice, events and scores alike.
 *
 * Catching the projecting node inside a batch does not depend on timing: each node's connections
 * carry its name (`?application_name=` in its database URL), so pg_locks and pg_stat_activity name
 * the node holding the lock; that node is stopped (SIGSTOP) and looked at while it cannot move:
 * if its backend still holds the lock inside the batch's transaction, it is killed where it
 * stands (SIGKILL reaches a stopped process), else it is resumed (SIGCONT) and the test looks
 * again. So the kill always lands inside a batch, lock held (the comment says how many looks and
 * stops it took). Under this load the lock is held inside a batch most of the time: in the first
 * seven runs the first stop caught one every time, the backend "idle in transaction" between two
 * statements of the batch.
 *
 * Skipped with one line when PostgreSQL does not answer, unless AGENTMON_REQUIRE_POSTGRES=1.
 * NODES_SEED replays the batches (the moment of the kill still depends on timing).
 */
import { performance } from "node:perf_hooks";
import { setTimeout as sleep } from "node:timers/promises";
import pg from "pg";
import t from "tap";
import { PROJECTOR_LOCK } from "../db/postgres/projector.ts";
import { openPostgresStore } from "../db/postgres/store.ts";
import { type Batch, type Client, nextBatch, random } from "./crash/batches.ts";
import { differences, drain } from "./db/contract/projections.ts";
import { DERIVED } from "./db/sqlite-committed.ts";
import {
  type Answer,
  allEvents,
  command,
  countIds,
  type Json,
  type Node,
  openSession,
  read,
  startNodes,
  withJwt,
  withKey,
} from "./nodes/cluster.ts";
import { derivedRows, postgresRequired, postgresUnavailable, testDatabase } from "./postgres.ts";

const SEED = Number(process.env.NODES_SEED ?? Math.floor(Math.random() * 2 ** 31));
const CLIENTS = 9;
/** Batches acknowledged before the test looks for the projecting node (projections worth the name). */
const BEFORE_KILL = 45;
/** Batches each client sends after the kill (the survivors keep serving while they take over). */
const AFTER_KILL = 6;
/** Looks at the lock's holder before the test gives up (a run that never catches a batch fails). */
const MAX_LOOKS = 400;
/** Tries of one call before the test gives up on it (each on the next node). */
const MAX_TRIES = 30;

const show = (answer: Answer) => `${answer.status} ${JSON.stringify(answer.body).slice(0, 300)}`;
const appName = (name: string) => `agentmon-node-${name}`;

/** The backend holding the projector's lock in this database, with what it is doing. */
const HOLDER = `SELECT l.pid, a.application_name AS app, a.state, a.query,
    a.xact_start IS NOT NULL AND a.xact_start < a.query_start AS in_transaction
  FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
  WHERE l.locktype = 'advisory' AND l.granted AND l.classid = 0 AND l.objid = $1 AND l.objsubid = 1
    AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())`;
interface Holder {
  pid: number;
  app: string;
  state: string | null;
  query: string;
  in_transaction: boolean;
}

/** What a session's stats must say, from the events sent to it. */
interface Expected {
  events: number;
  counts: Record<string, number>;
  prompt: number;
  completion: number;
  cost: number;
  first: number;
  last: number;
}

function expectedOf(batches: Batch[]): Expected {
  const e: Expected = {
    events: 0,
    counts: { llm: 0, tool: 0, action: 0, error: 0 },
    prompt: 0,
    completion: 0,
    cost: 0,
    first: Number.POSITIVE_INFINITY,
    last: Number.NEGATIVE_INFINITY,
  };
  for (const batch of batches) {
    const { events } = JSON.parse(batch.body) as { events: Json[] };
    events.forEach((event, i) => {
      const kind = batch.kinds[i] as string;
      e.events++;
      e.counts[kind] = (e.counts[kind] ?? 0) + 1;
      if (kind === "llm") {
        e.prompt += Number(event.prompt_tokens);
        e.completion += Number(event.completion_tokens);
        e.cost += Number(event.cost);
      }
      const init = Date.parse(String(event.init_timestamp));
      e.first = Math.min(e.first, init);
      e.last = Math.max(e.last, init, Date.parse(String(event.end_timestamp)));
    });
  }
  return e;
}

const close = (a: number, b: number) => Math.abs(a - b) <= 1e-9 * Math.max(1, Math.abs(b));

async function projectorKill() {
  const url = await testDatabase(t);
  const db = new pg.Client({ connectionString: url });
  db.on("error", () => undefined);
  await db.connect();
  t.teardown(() => db.end());

  const made = await command(t, ["keys", "create", "--project", "nodes"], url);
  const key = made.stdout;
  if (made.code !== 0) throw new Error(`keys create failed: ${made.stderr}`);
  const withName = (name: string) => {
    const own = new URL(url);
    own.searchParams.set("application_name", appName(name));
    return own.toString();
  };
  const nodes = await startNodes(t, withName, ["A", "B", "C"], { AGENTMON_LOG_LEVEL: "warn" });
  const byApp = new Map(nodes.map((node) => [appName(node.name), node]));

  t.test(
    `kill -9 of the projecting node in a batch: another takes over, projections exact (seed ${SEED})`,
    async (t) => {
      const rng = random(SEED);
      const clients: Client[] = [];
      for (let n = 0; n < CLIENTS; n++) {
        const sessionId = `proj-${n}`;
        const { answer, jwt } = await openSession(nodes[n % 3] as Node, sessionId, key);
        t.equal(answer.status, 200, `${sessionId} created: ${show(answer)}`);
        clients.push({ n, sessionId, jwt, rng: random(rng.int(0, 2 ** 31)), batches: [] });
      }

      // ------------------------------------------------------------------ the load
      let acked = 0;
      let victim: Node | undefined;
      let gaveUp = false;
      const unexpected: string[] = [];
      const okAfterKill = new Map(nodes.map((node) => [node.name, 0]));
      const scores: string[] = [];
      let noAnswer = 0;

      /** `call` on the nodes in turn from `first` until one answers 200 (no answer, or 503: the next). */
      const deliver = async (what: string, first: number, call: (node: Node) => Promise<Answer>) => {
        for (let attempt = 0; attempt < MAX_TRIES; attempt++) {
          const node = nodes[(first + attempt) % nodes.length] as Node;
          const afterKill = victim !== undefined;
          const answer = await call(node);
          if (answer.status === 0) {
            noAnswer++;
            continue;
          }
          if (answer.status === 503) {
            await sleep(50);
            continue;
          }
          if (answer.status !== 200) {
            unexpected.push(`${what} via ${node.name}: ${show(answer)}`);
            return undefined;
          }
          if (afterKill) okAfterKill.set(node.name, (okAfterKill.get(node.name) ?? 0) + 1);
          return answer;
        }
        unexpected.push(`${what}: no node answered 200 in ${MAX_TRIES} tries`);
        return undefined;
      };

      const load = Promise.all(
        clients.map(async (client) => {
          let after = 0;
          for (let b = 0; after < AFTER_KILL && !gaveUp; b++) {
            if (victim !== undefined) after++;
            const batch = nextBatch(client);
            const answer = await deliver(batch.ids[0] as string, client.n + b, (node) =>
              withJwt(node, "/v2/create_events", batch.body, client.jwt),
            );
            if (answer === undefined) continue;
            if (JSON.stringify(answer.body.event_ids) !== JSON.stringify(batch.ids)) {
              unexpected.push(`${batch.ids[0]}: ${show(answer)}`);
              continue;
            }
            batch.state = "acked";
            acked++;
            // Every third batch, two scores (a numeric one on an event of the batch, a categorical one).
            if (b % 3 === 2) {
              const id = `sc-${client.n}-${b}`;
              const body = {
                scores: [
                  { id, name: "quality", value: (b % 10) / 10, session_id: client.sessionId, event_id: batch.ids[0] },
                  { id: `${id}-v`, name: "verdict", value: b % 2 ? "good" : "bad", session_id: client.sessionId },
                ],
              };
              const scored = await deliver(id, client.n + b + 1, (node) => withKey(node, "/v2/scores", body, key));
              if (scored !== undefined) scores.push(id, `${id}-v`);
            }
          }
        }),
      );

      // ------------------------------------------------------------------ the kill
      const holder = async () => (await db.query<Holder>(HOLDER, [PROJECTOR_LOCK])).rows[0];
      const queue = async () =>
        (
          await db.query<{ n: number; mark: string | null }>(
            "SELECT count(*)::int AS n, max(seq) AS mark FROM projection_queue",
          )
        ).rows[0] as { n: number; mark: string | null };
      let looks = 0;
      let stops = 0;
      let caught: (Holder & { backlog: number; mark: number }) | undefined;
      while (acked < BEFORE_KILL && unexpected.length === 0) await sleep(20);
      for (; looks < MAX_LOOKS && caught === undefined && unexpected.length === 0; looks++) {
        const seen = await holder();
        const node = seen === undefined ? undefined : byApp.get(seen.app);
        if (seen === undefined || node === undefined) {
          await sleep(rng.int(1, 20));
          continue;
        }
        node.server.child.kill("SIGSTOP");
        stops++;
        // A statement in progress ends (or waits for the stopped node to read its answer).
        let now = await holder();
        for (let i = 0; i < 50 && now?.pid === seen.pid && now.state === "active"; i++) {
          await sleep(10);
          now = await holder();
        }
        const inBatch =
          now?.pid === seen.pid &&
          (now.state?.startsWith("idle in transaction") ||
            (now.state === "active" && now.in_transaction && !/^\s*COMMIT/i.test(now.query)));
        if (now !== undefined && inBatch) {
          const { n, mark } = await queue();
          caught = { ...now, backlog: n, mark: Number(mark ?? 0) };
          victim = node;
          node.server.child.kill("SIGKILL");
          break;
        }
        node.server.child.kill("SIGCONT");
        await sleep(rng.int(1, 40));
      }
      const killedAt = performance.now();
      if (victim === undefined) gaveUp = true;
      t.ok(victim, `the projecting node was caught inside a batch (${looks + 1} looks, ${stops} stops)`);
      if (victim === undefined || caught === undefined) {
        await load;
        return;
      }
      const dead = victim;
      const survivors = nodes.filter((node) => node !== dead);
      t.equal((await dead.server.exited()).signal, "SIGKILL", `${dead.name} died of SIGKILL`);

      // ------------------------------------------------------------------ the takeover
      // Polled without a read (a read would catch up itself): the survivors' own batches.
      let tookLock: { node: string; ms: number } | undefined;
      let old = caught.backlog;
      while (old > 0) {
        const seen = await holder();
        if (tookLock === undefined && seen !== undefined && seen.app !== appName(dead.name)) {
          tookLock = { node: byApp.get(seen.app)?.name ?? seen.app, ms: performance.now() - killedAt };
        }
        old = (
          await db.query<{ n: number }>("SELECT count(*)::int AS n FROM projection_queue WHERE seq <= $1", [
            caught.mark,
          ])
        ).rows[0]?.n as number;
        if (old > 0) await sleep(10);
      }
      const takeoverMs = performance.now() - killedAt;
      await load;
      t.same(unexpected, [], "every call was answered 200 by some node (no answer, or 503: sent to the next)");
      for (const node of survivors) {
        t.ok(
          (okAfterKill.get(node.name) ?? 0) > 0,
          `${node.name} kept serving: ${okAfterKill.get(node.name)} calls after the kill`,
        );
      }
      let left = (await queue()).n;
      while (left > 0) {
        await sleep(20);
        left = (await queue()).n;
      }
      const drainedMs = performance.now() - killedAt;
      t.pass("the whole queue drained to zero, without a read");

      // ------------------------------------------------------------------ nothing acknowledged lost
      const sent = new Map(clients.map((c) => [c.sessionId, c.batches.flatMap((b) => b.ids)]));
      const ackedIds = clients.flatMap((c) => c.batches.filter((b) => b.state === "acked").flatMap((b) => b.ids));
      const { rows } = await db.query<{ session: string; id: string; n: number }>(
        `SELECT s.id AS session, e.id, count(*)::int AS n FROM events e JOIN sessions s ON s.pk = e.session_pk
        WHERE s.id LIKE 'proj-%' GROUP BY s.id, e.id`,
      );
      const stored = new Set(rows.map((row) => row.id));
      t.same(
        ackedIds.filter((id) => !stored.has(id)),
        [],
        `every acknowledged event (${ackedIds.length}) is in the database`,
      );
      t.same(
        rows.filter((row) => row.n !== 1 || !sent.get(row.session)?.includes(row.id)),
        [],
        "once, in its session, and nothing that was not sent",
      );
      const { rows: scoreRows } = await db.query<{ id: string; n: number }>(
        "SELECT id, count(*)::int AS n FROM scores GROUP BY id ORDER BY id",
      );
      t.same(
        scoreRows.map((r) => [r.id, r.n]),
        [...scores].sort().map((id) => [id, 1]),
        `every acknowledged score (${scores.length}) is in the database, once`,
      );

      // ------------------------------------------------------------------ reads through the survivors
      const expected = new Map(clients.map((c) => [c.sessionId, expectedOf(c.batches)]));
      const all = expectedOf(clients.flatMap((c) => c.batches));
      for (const node of survivors) {
        const wrong: string[] = [];
        for (const client of clients) {
          const want = expected.get(client.sessionId) as Expected;
          const got = await read(node, `/v2/sessions/${client.sessionId}`, key);
          const stats = got.body.stats as Json | undefined;
          if (got.status !== 200 || stats === undefined) {
            wrong.push(`${client.sessionId}: ${show(got)}`);
            continue;
          }
          const have = {
            events: stats.events,
            counts: stats.event_counts,
            prompt: stats.prompt_tokens,
            completion: stats.completion_tokens,
            error_count: stats.error_count,
            first: Date.parse(String(stats.first_event_at)),
            last: Date.parse(String(stats.last_event_at)),
          };
          const wanted = {
            events: want.events,
            counts: want.counts,
            prompt: want.prompt,
            completion: want.completion,
            error_count: want.counts.error,
            first: want.first,
            last: want.last,
          };
          if (JSON.stringify(have) !== JSON.stringify(wanted) || !close(Number(stats.cost), want.cost)) {
            wrong.push(
              `${client.sessionId}: ${JSON.stringify({ ...have, cost: stats.cost })} for ${JSON.stringify(wanted)}`,
            );
          }
          const ids = (await allEvents(node, client.sessionId, key)).map((event) => String(event.id));
          if ([...countIds(ids).values()].some((n) => n !== 1) || ids.length !== sent.get(client.sessionId)?.length) {
            wrong.push(`${client.sessionId}: ${ids.length} events listed for ${sent.get(client.sessionId)?.length}`);
          }
        }
        t.same(wrong, [], `through ${node.name}: every session's stats and events are what was sent`);

        const series = await read(node, "/v2/analytics/timeseries?bucket=hour", key);
        t.equal(series.status, 200, `${node.name}: timeseries ${show(series)}`);
        t.equal(series.body.percentiles, "approximate", `${node.name}: the timeseries is read from the rollups`);
        const points = (series.body.points ?? []) as Json[];
        const sum = (field: string) => points.reduce((total, p) => total + Number(p[field]), 0);
        t.same(
          {
            sessions: sum("sessions"),
            events: sum("events"),
            error_events: sum("error_events"),
            prompt_tokens: sum("prompt_tokens"),
            completion_tokens: sum("completion_tokens"),
          },
          {
            sessions: CLIENTS,
            events: all.events,
            error_events: all.counts.error,
            prompt_tokens: all.prompt,
            completion_tokens: all.completion,
          },
          `${node.name}: the timeseries counts every session and event sent`,
        );
        t.ok(close(sum("cost"), all.cost), `${node.name}: cost ${sum("cost")} for ${all.cost}`);
      }

      // ------------------------------------------------------------------ projections = a rebuild
      const store = await openPostgresStore({ url, applicationName: "agentmon-test-rebuild" });
      t.teardown(() => store.close());
      const projections = () => derivedRows(store.pool);
      const projected = await projections();
      await store.rebuildProjections();
      await drain(store);
      const rebuilt = await projections();
      const sizes = Object.fromEntries(Object.entries(rebuilt).map(([name, r]) => [name, r.length]));
      // response_spans indexes OTLP spans' response ids: this load sends create_events only (the
      // Store contract compares that table after every kind of write).
      t.ok(
        Object.entries(sizes).every(([name, n]) => n > 0 || name === "response_spans"),
        `every projection table this load fills has rows to compare: ${JSON.stringify(sizes)}`,
      );
      for (const name of Object.keys(DERIVED)) {
        t.strictSame(
          differences(projected[name], rebuilt[name], name).slice(0, 10),
          [],
          `${name}: equals a rebuild from the raw rows`,
        );
      }

      t.comment(
        `projector kill (seed ${SEED}): ${dead.name} killed holding the lock inside a batch ` +
          `(backend ${caught.state}${caught.state === "active" ? `: ${caught.query.slice(0, 60)}` : ""}), ` +
          `caught at look ${looks + 1} after ${stops} stop(s); ${caught.backlog} queue entries behind at the kill; ` +
          `${tookLock === undefined ? "no other holder seen by the poll" : `${tookLock.node} held the lock ${tookLock.ms.toFixed(0)} ms after the kill`}; ` +
          `the queue at the kill projected ${takeoverMs.toFixed(0)} ms after it, the whole queue empty after ` +
          `${drainedMs.toFixed(0)} ms; ${acked} batches (${ackedIds.length} events) and ${scores.length} scores ` +
          `acknowledged, ${noAnswer} calls without an answer sent again`,
      );
    },
  );
}

const unavailable = await postgresUnavailable();
if (unavailable !== undefined && !postgresRequired()) {
  t.comment(`the projector kill test is skipped: ${unavailable}`);
} else {
  await projectorKill();
}
