/**
 * Crash safety (G7, G8), on a real process and a real database file. Clients send create_events
 * batches with known ids over real HTTP while `agentmon serve` is killed with SIGKILL at a random
 * moment, five times, and restarted on the same file each time. After each restart: every
 * acknowledged event is stored exactly once, no batch is half stored, a refused batch stored
 * nothing, and `PRAGMA integrity_check` is ok. Then the clients retry what was never answered and
 * re-send an acknowledged batch, which must answer 200 again and duplicate nothing.
 *
 * The seed fixes every random choice (batch sizes, bodies, kill delays); it is in the test name.
 * Replay with CRASH_SEED=<seed>. Where exactly a kill lands still depends on the machine's timing.
 */
import { randomUUID } from "node:crypto";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import Database from "better-sqlite3";
import t, { type Test } from "tap";
import { tempDir } from "./helper.ts";
import { type Agentmon, agentmon, childEnv, LISTENING } from "./process.ts";

const SEED = Number(process.env.CRASH_SEED ?? Math.floor(Math.random() * 2 ** 31));
const KILLS = 5;
const CLIENTS = 8;
const BATCH_SIZE = [20, 50] as const;
/** A round's kill timer starts once this many batches were acknowledged in it (so no round is vacuous). */
const ACKED_BEFORE_KILL_TIMER = 2 * CLIENTS;
/** Then the kill comes after a random delay in this range, while batches are in flight. */
const KILL_DELAY_MS = [0, 700] as const;
/** Work bound per client per round, should the kill never be triggered. */
const MAX_BATCHES_PER_ROUND = 300;
/** Safety net for a request that never ends; a kill ends in-flight requests at once. */
const REQUEST_TIMEOUT_MS = 30_000;
const JWT_SECRET = "crash-test-secret-crash-test-secret-0123456789";

// ----------------------------------------------------------------------------- seeded randomness

/** mulberry32: small, fast, good enough to pick sizes and delays reproducibly. */
function random(seed: number) {
  let state = seed >>> 0;
  const next = () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let x = state;
    x = Math.imul(x ^ (x >>> 15), x | 1);
    x ^= x + Math.imul(x ^ (x >>> 7), x | 61);
    return ((x ^ (x >>> 14)) >>> 0) / 4294967296;
  };
  const int = (min: number, max: number) => min + Math.floor(next() * (max - min + 1));
  const pick = <T>(items: readonly T[]) => items[Math.floor(next() * items.length)] as T;
  return { int, pick };
}
type Random = ReturnType<typeof random>;

// ----------------------------------------------------------------------------- batches

type Kind = "llm" | "tool" | "action" | "error";
/** refused: answered, but not 200 (nothing may be stored); unknown: no answer (the kill). */
type State = "acked" | "refused" | "unknown";

interface Batch {
  client: number;
  ids: string[];
  kinds: Kind[];
  /** The exact request body, kept so that a retry sends the same bytes. */
  body: string;
  state: State;
}

interface Client {
  n: number;
  sessionId: string;
  jwt: string;
  rng: Random;
  batches: Batch[];
}

const WORDS = ["agent", "plan", "search", "the", "invoice", "summary", "tool", "result", "step", "retry", "context"];
const sentence = (rng: Random, words: number) => Array.from({ length: words }, () => rng.pick(WORDS)).join(" ");
/** An SDK-style timestamp, with an explicit +00:00 offset. */
const at = (ms: number) => new Date(ms).toISOString().replace("Z", "+00:00");

/** One event with a realistic body of its kind, in the SDK's form or the seed spec's. */
function eventBody(rng: Random, kind: Kind, id: string, sessionId: string, previous: string | undefined) {
  const start = Date.now() - rng.int(0, 60_000);
  const common = { id, session_id: sessionId, init_timestamp: at(start), end_timestamp: at(start + rng.int(1, 900)) };
  const sdk = rng.int(0, 1) === 1;
  switch (kind) {
    case "llm":
      return sdk
        ? {
            ...common,
            event_type: "llms",
            model: "gpt-4o-mini",
            thread_id: randomUUID(),
            params: { temperature: 0.2, max_tokens: 256 },
            prompt: [
              { role: "system", content: "You are a careful assistant." },
              { role: "user", content: sentence(rng, rng.int(20, 200)) },
            ],
            completion: { role: "assistant", content: sentence(rng, rng.int(10, 120)) },
            returns: "ok",
            prompt_tokens: rng.int(10, 2000),
            completion_tokens: rng.int(1, 500),
            cost: rng.int(1, 5000) / 1e7,
          }
        : {
            ...common,
            type: "llm",
            model: "claude-3-haiku",
            prompt: sentence(rng, rng.int(20, 200)),
            completion: sentence(rng, rng.int(10, 120)),
            prompt_tokens: rng.int(10, 2000),
            completion_tokens: rng.int(1, 500),
            cost: rng.int(1, 5000) / 1e7,
          };
    case "tool":
      return sdk
        ? {
            ...common,
            event_type: "tools",
            name: "web_search",
            tool_name: "web_search",
            params: { query: sentence(rng, 6), top_k: rng.int(1, 10) },
            returns: { hits: Array.from({ length: rng.int(1, 5) }, () => sentence(rng, 12)) },
            logs: { note: "ok", attempt: 1 },
          }
        : {
            ...common,
            type: "tool",
            name: "calculator",
            input: { a: rng.int(0, 99), b: rng.int(0, 99) },
            output: "42",
          };
    case "action":
      return {
        ...common,
        event_type: "actions",
        action_type: "plan",
        name: "plan",
        params: { goal: sentence(rng, 8) },
        returns: sentence(rng, 15),
        logs: "planning step",
        screenshot: null,
      };
    case "error":
      return {
        ...common,
        type: "error",
        error_type: "ValueError",
        code: "E_TOOL",
        details: sentence(rng, 10),
        logs: `Traceback (most recent call last):\n  File "agent.py", line ${rng.int(1, 400)}, in main\nValueError: bad`,
        ...(previous === undefined ? {} : { trigger_event_id: previous, trigger_event_type: "tools" }),
      };
  }
}

const KINDS: readonly Kind[] = ["llm", "llm", "llm", "llm", "tool", "tool", "tool", "action", "error"];

/** The client's next batch: ids `<client>-<batch>-<n>`, unique over the whole test. */
function nextBatch(client: Client): Batch {
  const { rng } = client;
  const b = client.batches.length;
  const size = rng.int(...BATCH_SIZE);
  const ids = Array.from({ length: size }, (_, n) => `c${client.n}-${b}-${n}`);
  const kinds = ids.map(() => rng.pick(KINDS));
  const events = ids.map((id, n) => eventBody(rng, kinds[n] as Kind, id, client.sessionId, ids[n - 1]));
  const batch: Batch = { client: client.n, ids, kinds, body: JSON.stringify({ events }), state: "unknown" };
  client.batches.push(batch);
  return batch;
}

// ----------------------------------------------------------------------------- HTTP

interface Answer {
  /** 0 when no answer came (connection refused or reset, as a kill does). */
  status: number;
  body: unknown;
}

async function post(url: string, body: string, headers: Record<string, string>): Promise<Answer> {
  try {
    const res = await fetch(url, {
      method: "POST",
      headers: { "content-type": "application/json", ...headers },
      body,
      signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
    });
    const text = await res.text();
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch {
      return { status: 0, body: text }; // a body cut short by the kill is no answer
    }
    return { status: res.status, body: parsed };
  } catch {
    return { status: 0, body: undefined };
  }
}

const sendBatch = (base: string, client: Client, batch: Batch) =>
  post(`${base}/v2/create_events`, batch.body, { authorization: `Bearer ${client.jwt}` });

/** A 200 for a batch must list exactly its ids, in order (E3). */
const answersIds = (answer: Answer, batch: Batch) =>
  JSON.stringify((answer.body as { event_ids?: unknown } | undefined)?.event_ids) === JSON.stringify(batch.ids);

// ----------------------------------------------------------------------------- the server

const LOG_LEVEL = "warn"; // one log line per request would only slow the server down

function start(t: Test, db: string, apiKey: string): Promise<{ server: Agentmon; base: string }> {
  const env = childEnv({
    AGENTMON_DB: db,
    PORT: "0",
    AGENTMON_API_KEY: apiKey,
    AGENTMON_JWT_SECRET: JWT_SECRET,
    AGENTMON_LOG_LEVEL: LOG_LEVEL,
  });
  const server = agentmon(t, ["serve"], env);
  return server.waitFor(LISTENING).then((match) => ({ server, base: match[1] as string }));
}

// ----------------------------------------------------------------------------- one round of load

interface RoundResult {
  acked: number;
  ackedEvents: number;
  killDelayMs: number;
  /** Answers that were neither 200 nor the 503 an overloaded server may give. */
  unexpected: string[];
}

/**
 * Runs the clients against `base` until the server is killed: once enough batches are
 * acknowledged, a seeded random delay, then SIGKILL while requests are in flight.
 */
async function loadAndKill(t: Test, server: Agentmon, base: string, clients: Client[], killRng: Random) {
  const result: RoundResult = { acked: 0, ackedEvents: 0, killDelayMs: killRng.int(...KILL_DELAY_MS), unexpected: [] };
  let killed = false;
  let enough: () => void = () => {};
  const enoughAcked = new Promise<void>((resolve) => {
    enough = resolve;
  });

  const drive = async (client: Client) => {
    for (let sent = 0; sent < MAX_BATCHES_PER_ROUND && !killed; sent++) {
      const batch = nextBatch(client);
      const answer = await sendBatch(base, client, batch);
      if (answer.status === 0) return; // the server is gone: this batch's fate is unknown
      if (answer.status === 200) {
        batch.state = "acked";
        result.acked++;
        result.ackedEvents += batch.ids.length;
        if (!answersIds(answer, batch)) result.unexpected.push(`${batch.ids[0]}: 200 ${JSON.stringify(answer.body)}`);
        if (result.acked >= ACKED_BEFORE_KILL_TIMER) enough();
        continue;
      }
      batch.state = "refused";
      if (answer.status !== 503) {
        result.unexpected.push(`${batch.ids[0]}: ${answer.status} ${JSON.stringify(answer.body).slice(0, 300)}`);
        return;
      }
      await sleep(50); // overloaded: give it a moment, as a client honouring Retry-After would
    }
  };

  const loops = Promise.all(clients.map(drive));
  await Promise.race([enoughAcked, loops]);
  await sleep(result.killDelayMs);
  server.child.kill("SIGKILL");
  killed = true;
  const exit = await server.exited();
  t.equal(exit.signal, "SIGKILL", "the server died of SIGKILL, not of anything else");
  await loops;
  return result;
}

// ----------------------------------------------------------------------------- what is on disk

/** Reads the database file with a connection of its own (read-only; the server may be running). */
function onDisk(path: string) {
  const db = new Database(path, { readonly: true, fileMustExist: true });
  try {
    const integrity = db.pragma("integrity_check", { simple: true });
    const foreignKeys = db.pragma("foreign_key_check") as unknown[];
    const rows = db
      .prepare(
        `SELECT s.id AS session_id, e.id AS id, MIN(e.type) AS type, COUNT(*) AS copies
         FROM events e JOIN sessions s ON s.pk = e.session_pk
         GROUP BY s.id, e.id`,
      )
      .all() as { session_id: string; id: string; type: string; copies: number }[];
    return { integrity, foreignKeys, rows };
  } finally {
    db.close();
  }
}

/** Every invariant of the stored events against what the clients sent and were told. */
function verify(t: Test, path: string, clients: Client[], when: string) {
  const { integrity, foreignKeys, rows } = onDisk(path);
  t.equal(integrity, "ok", `${when}: PRAGMA integrity_check is ok`);
  t.same(foreignKeys, [], `${when}: PRAGMA foreign_key_check finds nothing`);

  const stored = new Map(rows.map((row) => [`${row.session_id}/${row.id}`, row]));
  const duplicates = rows.filter((row) => row.copies !== 1).map((row) => `${row.session_id}/${row.id}×${row.copies}`);
  const sent = new Set<string>();
  const missing: string[] = []; // acknowledged but not stored
  const half: string[] = []; // some of a batch stored, not all
  const refusedButStored: string[] = [];
  const wrongKind: string[] = [];
  const tally = { acked: 0, ackedEvents: 0, refused: 0, unknownStored: 0, unknownNone: 0 };

  for (const client of clients) {
    for (const batch of client.batches) {
      const keys = batch.ids.map((id) => `${client.sessionId}/${id}`);
      for (const key of keys) sent.add(key);
      const present = keys.filter((key) => stored.has(key));
      const label = `${client.sessionId} batch ${batch.ids[0]} (${batch.state}, ${present.length}/${keys.length} stored)`;
      if (present.length > 0 && present.length < keys.length) half.push(label);
      if (batch.state === "acked") {
        tally.acked++;
        tally.ackedEvents += keys.length;
        if (present.length < keys.length) missing.push(label);
      } else if (batch.state === "refused") {
        tally.refused++;
        if (present.length > 0) refusedButStored.push(label);
      } else if (present.length === keys.length) tally.unknownStored++;
      else if (present.length === 0) tally.unknownNone++;
      keys.forEach((key, n) => {
        const row = stored.get(key);
        if (row && row.type !== batch.kinds[n]) wrongKind.push(`${key}: ${row.type}, sent ${batch.kinds[n]}`);
      });
    }
  }
  const strays = [...stored.keys()].filter((key) => !sent.has(key));

  t.ok(tally.acked > 0, `${when}: there are acknowledged batches to check (${tally.acked})`);
  t.same(missing, [], `${when}: all ${tally.ackedEvents} events of the ${tally.acked} acknowledged batches are stored`);
  t.same(duplicates, [], `${when}: each of the ${rows.length} stored events is stored exactly once`);
  t.same(half, [], `${when}: no batch is half stored`);
  t.same(refusedButStored, [], `${when}: the ${tally.refused} refused batches stored nothing`);
  t.same(wrongKind, [], `${when}: each stored event has the kind it was sent with`);
  t.same(strays, [], `${when}: nothing is stored that was not sent`);
  t.comment(
    `${when}: ${tally.acked} batches acknowledged (${tally.ackedEvents} events), ${tally.refused} refused, ` +
      `unanswered at the kill: ${tally.unknownStored} fully stored, ${tally.unknownNone} not stored; ` +
      `${rows.length} events on disk`,
  );
}

/**
 * G8 after a restart: each client retries its unanswered and refused batches (as the SDK does)
 * and re-sends its last acknowledged one. Every retry answers 200 with the batch's ids.
 */
async function retryAfterRestart(t: Test, base: string, clients: Client[], when: string) {
  const failures: string[] = [];
  let resent = 0;
  let retried = 0;
  for (const client of clients) {
    const acked = client.batches.filter((batch) => batch.state === "acked").at(-1);
    const pending = client.batches.filter((batch) => batch.state !== "acked");
    for (const batch of [...(acked ? [acked] : []), ...pending]) {
      let answer = await sendBatch(base, client, batch);
      for (let attempt = 0; answer.status === 503 && attempt < 5; attempt++) {
        await sleep(2000); // the overload 503 says Retry-After: 2
        answer = await sendBatch(base, client, batch);
      }
      if (answer.status !== 200 || !answersIds(answer, batch)) {
        failures.push(
          `${batch.ids[0]} (${batch.state}): ${answer.status} ${JSON.stringify(answer.body).slice(0, 300)}`,
        );
        continue;
      }
      if (batch.state === "acked") resent++;
      else retried++;
      batch.state = "acked";
    }
  }
  t.same(
    failures,
    [],
    `${when}: ${resent} acknowledged batches re-sent and ${retried} unanswered ones retried, all 200`,
  );
  t.ok(resent > 0, `${when}: some acknowledged batches were re-sent`);
}

// ----------------------------------------------------------------------------- the test

t.test(`G7/G8: SIGKILL ${KILLS} times under load, restart on the same file (seed ${SEED})`, async (t) => {
  const db = join(tempDir(t), "crash.db");
  const apiKey = randomUUID();
  const killRng = random(SEED);
  let { server, base } = await start(t, db, apiKey);

  const clients: Client[] = [];
  for (let n = 0; n < CLIENTS; n++) {
    const sessionId = `crash-${n}`;
    const created = await post(
      `${base}/v2/create_session`,
      JSON.stringify({ session: { session_id: sessionId, tags: ["crash-test"], host_env: { OS: { OS: "Linux" } } } }),
      { "x-agentmon-api-key": apiKey },
    );
    t.equal(created.status, 200, `session ${sessionId} created: ${JSON.stringify(created.body)}`);
    const jwt = String((created.body as { jwt?: unknown }).jwt);
    clients.push({ n, sessionId, jwt, rng: random(SEED + 1 + n), batches: [] });
  }

  for (let round = 1; round <= KILLS; round++) {
    const result = await loadAndKill(t, server, base, clients, killRng);
    t.ok(result.acked > 0, `round ${round}: ${result.acked} batches (${result.ackedEvents} events) acknowledged`);
    t.same(result.unexpected, [], `round ${round}: every answer was 200 with the batch's ids, or 503`);
    t.comment(`round ${round}: killed ${result.killDelayMs} ms after ${ACKED_BEFORE_KILL_TIMER} acknowledgements`);

    // The restarted server recovers the file itself (WAL replay) before anything else reads it;
    // the JWTs issued before the kill still work, since the secret is the same.
    ({ server, base } = await start(t, db, apiKey));
    verify(t, db, clients, `after restart ${round}`);
    await retryAfterRestart(t, base, clients, `after restart ${round}`);
  }

  server.child.kill("SIGTERM");
  const exit = await server.exited();
  const clean = exit.code === 0 && exit.signal === null;
  t.ok(
    clean,
    `the last server stops cleanly on SIGTERM${clean ? "" : `: ${JSON.stringify(exit)}${server.describe()}`}`,
  );
  verify(t, db, clients, "at the end");
  t.ok(
    clients.every((client) => client.batches.every((batch) => batch.state === "acked")),
    "at the end every batch sent has been acknowledged (directly or by a retry)",
  );
});
