/**
 * Several nodes, really (issue 14, point 8): three `agentmon serve` processes on one PostgreSQL
 * database, driven together over real HTTP, as a load balancer in front of them would spread one
 * agent's calls. One session updated through two nodes at once loses no field (S4); events sent
 * through every node, and retried through the others, are stored once (G8); a key revoked by
 * `agentmon keys revoke` is refused by every node at once, with the JWTs it obtained (4.3); the
 * nodes share the JWT secret the first of them made (4.4); the failed-key limit counts the
 * failures of every node together (4.6); and one node killed with SIGKILL under load loses no
 * acknowledged event and duplicates none, while the others keep serving (G7, G8).
 *
 * The nodes trust 127.0.0.1 as a proxy (AGENTMON_TRUST_PROXY, as behind a balancer), so that a
 * test that fails API-key checks on purpose does it from a client address of its own
 * (X-Forwarded-For) and the 4.6 counts of one test never reach another's calls.
 *
 * Skipped with one line when PostgreSQL does not answer, unless AGENTMON_REQUIRE_POSTGRES=1.
 * NODES_SEED replays the kill -9 run's batches (the moment of the kill still depends on timing).
 */
import pg from "pg";
import t from "tap";
import { type Client, random } from "./crash/batches.ts";
import { INVALID_API_KEY, INVALID_JWT } from "./helper.ts";
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
import { loadAndKill } from "./nodes/load.ts";
import { postgresRequired, postgresUnavailable, testDatabase } from "./postgres.ts";

/** 4.6 on every node: a low limit, so that six failures (three on A, three on B) reach it. */
const AUTH_FAIL_LIMIT = 6;
const SEED = Number(process.env.NODES_SEED ?? Math.floor(Math.random() * 2 ** 31));

const uuid = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
/** An answer for a message: its status and body, without the JWT a success carries. */
const show = (answer: Answer) =>
  `${answer.status} ${JSON.stringify({ ...answer.body, ...(answer.body.jwt ? { jwt: "…" } : {}) }).slice(0, 300)}`;

async function severalNodes() {
  const url = await testDatabase(t);
  // Torn down before the database is dropped (teardowns run last first), as are the nodes.
  const db = new pg.Client({ connectionString: url });
  db.on("error", () => undefined);
  await db.connect();
  t.teardown(() => db.end());

  // The first key, made by the command before any node runs (this also builds the bundle once,
  // rather than three nodes at a time).
  const made = await command(t, ["keys", "create", "--project", "nodes"], url);
  const key = made.stdout;
  if (made.code !== 0 || !uuid.test(key)) throw new Error(`keys create failed: ${made.stderr}`);

  // No AGENTMON_JWT_SECRET: the nodes, started at the same time, must agree on one secret.
  const nodes = await startNodes(t, url, ["A", "B", "C"], {
    AGENTMON_LOG_LEVEL: "warn",
    AGENTMON_AUTH_FAIL_LIMIT: String(AUTH_FAIL_LIMIT),
    AGENTMON_AUTH_FAIL_WINDOW: "60",
    AGENTMON_TRUST_PROXY: "127.0.0.1",
  });
  const [a, b, c] = nodes as [Node, Node, Node];

  t.test("4.4: the nodes started without AGENTMON_JWT_SECRET share the one the first of them made", async (t) => {
    const { rows } = await db.query<{ n: number }>("SELECT count(*)::int AS n FROM meta WHERE key = 'jwt_secret'");
    t.equal(rows[0]?.n, 1, "one secret in the database");
    for (const node of nodes) t.notMatch(node.server.stdout(), /created the first API key/, `${node.name} made no key`);

    const { answer, jwt } = await openSession(a, "jwt-shared", key);
    t.equal(answer.status, 200, `create_session on A: ${show(answer)}`);
    for (const [i, node] of [b, c].entries()) {
      const events = await withJwt(node, "/v2/create_events", { events: [{ type: "tool", id: `t${i}` }] }, jwt);
      t.equal(events.status, 200, `A's JWT writes through ${node.name}: ${show(events)}`);
    }
    const again = await withKey(b, "/v2/reauthorize_jwt", { session_id: "jwt-shared" }, key);
    t.equal(again.status, 200, `reauthorize_jwt on B: ${show(again)}`);
    for (const node of [a, c]) {
      const update = await withJwt(
        node,
        "/v2/update_session",
        { session: { end_state: "Success" } },
        String(again.body.jwt),
      );
      t.equal(update.status, 200, `B's JWT updates the session through ${node.name}: ${show(update)}`);
    }
    const forged = await withJwt(c, "/v2/create_events", { events: [{ type: "tool" }] }, `${jwt.slice(0, -2)}xx`);
    t.same([forged.status, forged.body], [401, INVALID_JWT], "a JWT with a bad signature is still refused");
  });

  t.test("S4: one session updated through B and C at once keeps every field (no lost update)", async (t) => {
    const { answer, jwt } = await openSession(a, "merge", key);
    t.equal(answer.status, 200, `created on A: ${show(answer)}`);
    const UPDATES = 40;
    const updates = await Promise.all(
      Array.from({ length: UPDATES }, (_, i) =>
        withJwt(i % 2 === 0 ? b : c, "/v2/update_session", { session: { [`f${i}`]: i } }, jwt),
      ),
    );
    t.same(
      updates.map((u) => u.status),
      updates.map(() => 200),
      `${UPDATES} updates, half through B and half through C, all 200`,
    );
    const tags = withJwt(b, "/v2/update_session", { session: { tags: ["merged"] } }, jwt);
    const reason = withJwt(c, "/v2/update_session", { session: { end_state_reason: "merged" } }, jwt);
    t.same(
      (await Promise.all([tags, reason])).map((u) => u.status),
      [200, 200],
      "and two named fields at once",
    );

    const seen: Json[] = [];
    for (const node of nodes) {
      const got = await read(node, "/v2/sessions/merge", key);
      t.equal(got.status, 200, `read through ${node.name}`);
      const session = got.body.session as Json;
      const missing = Array.from({ length: UPDATES }, (_, i) => `f${i}`).filter((f, i) => session[f] !== i);
      t.same(missing, [], `through ${node.name}: every one of the ${UPDATES} fields is there`);
      t.same(
        [session.tags, session.end_state_reason],
        [["merged"], "merged"],
        `through ${node.name}: the named ones too`,
      );
      seen.push(session);
    }
    t.same(seen[1], seen[0], "B answers what A answers");
    t.same(seen[2], seen[0], "C answers what A answers");
  });

  t.test(
    "G8: events sent through all three nodes at once, and retried through the others, are stored once",
    async (t) => {
      const { answer, jwt } = await openSession(a, "g8", key);
      t.equal(answer.status, 200, `created on A: ${show(answer)}`);
      const BATCHES = 30;
      const SIZE = 20;
      const batches = Array.from({ length: BATCHES }, (_, n) => {
        const ids = Array.from({ length: SIZE }, (_, k) => `g8-${n}-${k}`);
        const events = ids.map((id, k) => ({
          type: k % 2 ? "tool" : "llm",
          id,
          name: `step ${k}`,
          model: "gpt-4o-mini",
        }));
        return { ids, body: JSON.stringify({ events }) };
      });
      // Each batch goes to the three nodes at the same moment (a client that timed out on one and
      // tried the others), then once more to the next node (a late retry).
      const sends = batches.flatMap((batch, n) =>
        [0, 1, 2].map((k) => withJwt(nodes[(n + k) % 3] as Node, "/v2/create_events", batch.body, jwt)),
      );
      const answers = await Promise.all(sends);
      const retries = await Promise.all(
        batches.map((batch, n) => withJwt(nodes[(n + 1) % 3] as Node, "/v2/create_events", batch.body, jwt)),
      );
      const wrong = [...answers, ...retries].filter(
        (answer, i) =>
          answer.status !== 200 ||
          JSON.stringify(answer.body.event_ids) !==
            JSON.stringify(batches[i < answers.length ? Math.floor(i / 3) : i - answers.length]?.ids),
      );
      t.same(wrong.map(show), [], `${answers.length + retries.length} calls, each 200 with its batch's ids`);

      const sent = batches.flatMap((batch) => batch.ids).sort();
      const lists: Json[][] = [];
      for (const node of nodes) {
        const events = await allEvents(node, "g8", key);
        const counts = countIds(events.map((event) => String(event.id)));
        t.same([...counts.keys()].sort(), sent, `through ${node.name}: the ${sent.length} ids sent, no other`);
        t.same(
          [...counts].filter(([, n]) => n !== 1),
          [],
          `through ${node.name}: each stored once`,
        );
        const stats = await read(node, "/v2/sessions/g8/stats", key);
        t.equal(
          (stats.body.stats as Json | undefined)?.events,
          sent.length,
          `${node.name}'s stats count ${sent.length}`,
        );
        lists.push(events);
      }
      t.same(lists[1], lists[0], "B's read API answers what A's does");
      t.same(lists[2], lists[0], "C's read API answers what A's does");
      const { rows } = await db.query<{ n: number }>(
        "SELECT count(*)::int AS n FROM events e JOIN sessions s ON s.pk = e.session_pk WHERE s.id = 'g8'",
      );
      t.equal(rows[0]?.n, sent.length, `${sent.length} rows in the database`);
    },
  );

  t.test("4.3: a key revoked by `agentmon keys revoke` fails at once on every node, with its JWTs", async (t) => {
    const second = await command(t, ["keys", "create", "--project", "nodes"], url);
    t.equal(second.code, 0, `keys create: ${second.stderr}`);
    const doomed = second.stdout;
    t.match(doomed, uuid, "a second key");

    const jwts: string[] = [];
    for (const [i, node] of nodes.entries()) {
      const { answer, jwt } = await openSession(node, `revoked-${i}`, doomed);
      t.equal(answer.status, 200, `the key opens a session on ${node.name}: ${show(answer)}`);
      jwts.push(jwt);
      const listed = await read(node, "/v2/sessions?limit=1", doomed);
      t.equal(listed.status, 200, `and reads through ${node.name}`);
      const before = { events: [{ type: "tool", id: "before" }] };
      const events = await withJwt(nodes[(i + 1) % 3] as Node, "/v2/create_events", before, jwt);
      t.equal(events.status, 200, `its JWT writes through another node: ${show(events)}`);
    }

    const revoked = await command(t, ["keys", "revoke", doomed.slice(0, 8)], url);
    t.equal(revoked.code, 0, `keys revoke: ${revoked.stderr}`);
    t.match(revoked.stdout, /^Revoked API key/, revoked.stdout);

    // At once: no wait, no retry. Each node's key checks come from an address of their own (4.6).
    for (const [i, node] of nodes.entries()) {
      const from = `198.51.100.${10 + i}`;
      const opened = await withKey(node, "/v2/create_session", { session: { id: `after-${i}` } }, doomed, from);
      t.same([opened.status, opened.body], [401, INVALID_API_KEY], `${node.name} refuses the key`);
      const listed = await read(node, "/v2/sessions?limit=1", doomed, from);
      t.same([listed.status, listed.body], [401, INVALID_API_KEY], `${node.name}'s read API refuses it`);
      for (const [j, jwt] of jwts.entries()) {
        const after = { events: [{ type: "tool", id: `after-${node.name}` }] };
        const write = await withJwt(node, "/v2/create_events", after, jwt);
        t.same([write.status, write.body], [401, INVALID_JWT], `${node.name} refuses the JWT got on ${nodes[j]?.name}`);
        const update = await withJwt(node, "/v2/update_session", { session: { end_state: "Fail" } }, jwt);
        t.same([update.status, update.body], [401, INVALID_JWT], `${node.name} refuses its update_session too`);
      }
    }
    for (const i of nodes.keys()) {
      const events = await allEvents(a, `revoked-${i}`, key);
      t.same(
        events.map((event) => event.id),
        ["before"],
        `revoked-${i}: nothing was stored after the revoke`,
      );
    }
    for (const node of nodes) {
      const other = await openSession(node, `still-${node.name}`, key);
      t.equal(other.answer.status, 200, `the project's other key still works on ${node.name}`);
    }
  });

  t.test("4.6 on one node: the client address the balancer forwards is the one counted", async (t) => {
    const from = "198.51.100.45";
    for (let n = 1; n <= AUTH_FAIL_LIMIT; n++) {
      const bad = await withKey(a, "/v2/create_session", { session: { id: "x" } }, crypto.randomUUID(), from);
      t.equal(bad.status, 401, `failure ${n} on A: 401`);
    }
    const limited = await withKey(a, "/v2/create_session", { session: { id: "limited" } }, key, from);
    t.equal(limited.status, 429, `then A refuses even the valid key from ${from}: ${show(limited)}`);
    t.match(limited.headers?.get("retry-after"), /^\d+$/, "with Retry-After");
    const direct = await withKey(a, "/v2/create_session", { session: { id: "direct" } }, key);
    t.equal(direct.status, 200, `the balancer's own address (127.0.0.1) is not limited: ${show(direct)}`);
  });

  // Fails on this branch until the shared limits land (the 4.6 counter in PostgreSQL, or Redis:
  // issue 14, point 4): each node still counts the failures it saw itself, so C, which saw none,
  // answers 200 where the shared count says 429. Not skipped on purpose: it is the check of that
  // work once merged.
  t.test("4.6: failed key checks on A and on B count together: the next call on C is 429", async (t) => {
    const from = "198.51.100.46";
    const failures = [a, a, a, b, b, b];
    t.equal(failures.length, AUTH_FAIL_LIMIT, "as many failures as the limit");
    for (const [n, node] of failures.entries()) {
      const bad = await withKey(node, "/v2/create_session", { session: { id: "x" } }, crypto.randomUUID(), from);
      t.same([bad.status, bad.body], [401, INVALID_API_KEY], `failure ${n + 1}, on ${node.name}: 401`);
    }
    for (const node of [c, a, b]) {
      const limited = await withKey(node, "/v2/create_session", { session: { id: `limited-${node.name}` } }, key, from);
      t.equal(limited.status, 429, `${node.name}: even the valid key is refused from that address: ${show(limited)}`);
      t.match(limited.headers?.get("retry-after"), /^\d+$/, `${node.name}: with Retry-After`);
    }
    const elsewhere = await withKey(c, "/v2/create_session", { session: { id: "elsewhere" } }, key, "198.51.100.47");
    t.equal(elsewhere.status, 200, `another address is not limited: ${show(elsewhere)}`);
  });

  t.test("three nodes started at once with the same AGENTMON_API_KEY on an empty database all start", async (t) => {
    const empty = await testDatabase(t);
    const configured = crypto.randomUUID();
    const env = { AGENTMON_LOG_LEVEL: "warn", AGENTMON_API_KEY: configured };
    const trio = await startNodes(t, empty, ["D", "E", "F"], env);
    for (const node of trio) {
      const { answer } = await openSession(node, `configured-${node.name}`, configured);
      t.equal(answer.status, 200, `${node.name} serves, and takes the configured key: ${show(answer)}`);
    }
    const listed = await command(t, ["keys", "list"], empty);
    t.equal(listed.stdout.split("\n").length, 1, `one key in the database: ${listed.stdout}`);
  });

  t.test(`G7/G8: kill -9 of one node under load loses no acknowledged event (seed ${SEED})`, async (t) => {
    const CLIENTS = 12;
    const rng = random(SEED);
    const clients: Client[] = [];
    for (let n = 0; n < CLIENTS; n++) {
      const sessionId = `load-${n}`;
      const { answer, jwt } = await openSession(nodes[n % 3] as Node, sessionId, key);
      t.equal(answer.status, 200, `${sessionId} created: ${show(answer)}`);
      clients.push({ n, sessionId, jwt, rng: random(rng.int(0, 2 ** 31)), batches: [] });
    }

    const result = await loadAndKill({ nodes, clients, batchesPerClient: 36, killAfterAcked: 144, victim: b });
    t.ok(result.ackedAtKill > 0, `B was killed under load, after ${result.ackedAtKill} acknowledged batches`);
    if (result.ackedAtKill < 0) b.server.child.kill("SIGKILL"); // for the checks below to run all the same
    const exit = await b.server.exited();
    t.equal(exit.signal, "SIGKILL", "B died of SIGKILL");
    t.same(result.unexpected, [], "every answer was 200 with the batch's ids, no answer (B), or 503");

    // What was sent: every batch ends acknowledged (a batch without an answer is sent again).
    const sent = new Map(clients.map((client) => [client.sessionId, client.batches.flatMap((batch) => batch.ids)]));
    const acked = new Set(
      clients.flatMap((client) =>
        client.batches.filter((batch) => batch.state === "acked").flatMap((batch) => batch.ids),
      ),
    );
    t.equal(acked.size, result.ackedEvents, "event ids are unique over the run");

    // In the database.
    const { rows } = await db.query<{ session: string; id: string; n: number }>(
      `SELECT s.id AS session, e.id, count(*)::int AS n FROM events e JOIN sessions s ON s.pk = e.session_pk
        WHERE s.id LIKE 'load-%' GROUP BY s.id, e.id`,
    );
    const stored = new Set(rows.map((row) => row.id));
    const lost = [...acked].filter((id) => !stored.has(id));
    const duplicated = rows.filter((row) => row.n !== 1);
    const strays = rows.filter((row) => !sent.get(row.session)?.includes(row.id));
    t.same(lost, [], "every acknowledged event is in the database");
    t.same(duplicated, [], "none twice");
    t.same(strays, [], "and nothing that was not sent, nor in another session");

    // Through each survivor's read API.
    let readDuplicates = 0;
    for (const node of [a, c]) {
      const seen: string[] = [];
      for (const client of clients) {
        const ids = (await allEvents(node, client.sessionId, key)).map((event) => String(event.id));
        seen.push(...ids);
        t.same(
          [...ids].sort(),
          [...(sent.get(client.sessionId) ?? [])].sort(),
          `${client.sessionId} through ${node.name}`,
        );
      }
      readDuplicates += [...countIds(seen).values()].filter((n) => n > 1).length;
      t.equal(seen.length, acked.size, `${node.name}'s read API shows ${acked.size} events`);
    }

    const okA = result.okAfterKill.get("A") ?? 0;
    const okC = result.okAfterKill.get("C") ?? 0;
    t.ok(okA > 0, `A kept serving: ${okA} batches acknowledged after the kill`);
    t.ok(okC > 0, `C kept serving: ${okC} batches acknowledged after the kill`);
    for (const node of [a, c]) {
      for (const probe of ["/healthz", "/readyz"]) {
        const answer = await read(node, probe, "");
        t.equal(answer.status, 200, `${node.name} ${probe}: ${show(answer)}`);
      }
    }
    t.equal((await read(b, "/healthz", "")).status, 0, "B is gone");

    t.comment(
      `kill -9 under load (seed ${SEED}): ${CLIENTS} clients, ${result.ackedBatches} batches = ` +
        `${result.ackedEvents} events acknowledged in ${(result.ms / 1000).toFixed(1)} s; ` +
        `B killed after ${result.ackedAtKill} acknowledged batches; ${stored.size} events stored, ` +
        `${lost.length} acknowledged events missing, ${duplicated.length} duplicated in the database, ` +
        `${readDuplicates} through the read API; after the kill ${result.requestsAfterKill} requests: ` +
        `${okA} acknowledged by A, ${okC} by C; ${result.connectionErrors} requests without an answer ` +
        `(${result.inFlightAtKill} in flight to B when it died), each sent again to the next node; ${result.busy} 503s`,
    );
  });
}

const unavailable = await postgresUnavailable();
if (unavailable !== undefined && !postgresRequired()) {
  t.comment(`the several-nodes test is skipped: ${unavailable}`);
} else {
  await severalNodes();
}
