/**
 * What the crash test (test/crash.test.ts) checks of its OTLP clients after each restart: the
 * database file against the spans sent and the answers given (G7, T8, T14), and retries that
 * answer 200 and change nothing (G8, T17).
 */
import { setTimeout as sleep } from "node:timers/promises";
import Database from "better-sqlite3";
import type { Test } from "tap";
import { EVENT_TYPE, type OtlpBatch, type OtlpClient, sendOtlp } from "./otlp.ts";

interface Row {
  session_id: string;
  id: string;
  type: string;
  parent_id: string | null;
  copies: number;
}

/** The OTLP sessions' events and agents, and each session's event count (read-only connection). */
function onDisk(path: string, sessionIds: string[]) {
  const db = new Database(path, { readonly: true, fileMustExist: true });
  try {
    const ids = JSON.stringify(sessionIds);
    const rows = db
      .prepare(
        `SELECT s.id AS session_id, e.id AS id, MIN(e.type) AS type, MIN(e.parent_id) AS parent_id, COUNT(*) AS copies
         FROM events e JOIN sessions s ON s.pk = e.session_pk
         WHERE s.id IN (SELECT value FROM json_each(?))
         GROUP BY s.id, e.id`,
      )
      .all(ids) as Row[];
    const agents = db
      .prepare(
        `SELECT s.id || '/' || a.id AS key FROM agents a JOIN sessions s ON s.pk = a.session_pk
         WHERE s.id IN (SELECT value FROM json_each(?))`,
      )
      .all(ids) as { key: string }[];
    const sessions = db
      .prepare(
        `SELECT s.id AS id, (SELECT COUNT(*) FROM events e WHERE e.session_pk = s.pk) AS events
         FROM sessions s WHERE s.id IN (SELECT value FROM json_each(?))`,
      )
      .all(ids) as { id: string; events: number }[];
    return { rows, agents: new Set(agents.map((a) => a.key)), sessions };
  } finally {
    db.close();
  }
}

export const otlpSessions = (clients: OtlpClient[]) =>
  clients.flatMap((client) => client.traces.map((trace) => trace.sessionId));

const keysOf = (client: OtlpClient, batch: OtlpBatch) =>
  batch.spans.map((span) => `${client.traces[span.trace]?.sessionId}/${span.id}`);
const label = (batch: OtlpBatch, present: number) =>
  `otlp ${batch.spans[0]?.id} (${batch.state}, ${batch.media}, ${present}/${batch.spans.length} stored)`;

/** Every invariant of the OTLP clients' sessions against what they sent and were told. */
export function verifyOtlp(t: Test, path: string, clients: OtlpClient[], when: string) {
  const { rows, agents, sessions } = onDisk(path, otlpSessions(clients));
  const stored = new Map(rows.map((row) => [`${row.session_id}/${row.id}`, row]));
  const duplicates = rows.filter((row) => row.copies !== 1).map((row) => `${row.session_id}/${row.id}×${row.copies}`);
  const sent = new Set<string>();
  const missing: string[] = [];
  const half: string[] = [];
  const refusedButStored: string[] = [];
  const wrong: string[] = []; // stored with another type or parent than sent
  const agentless: string[] = []; // an agent span stored without its agent, or the reverse
  const expectedAgents = new Set<string>();
  const tally = { acked: 0, ackedSpans: 0, refused: 0, unknownStored: 0, unknownNone: 0, protobuf: 0 };

  for (const client of clients) {
    for (const batch of client.batches) {
      const keys = keysOf(client, batch);
      for (const key of keys) sent.add(key);
      const present = keys.filter((key) => stored.has(key)).length;
      if (present > 0 && present < keys.length) half.push(label(batch, present));
      if (batch.state === "acked") {
        tally.acked++;
        tally.ackedSpans += keys.length;
        if (batch.media === "protobuf") tally.protobuf++;
        if (present < keys.length) missing.push(label(batch, present));
      } else if (batch.state === "refused") {
        tally.refused++;
        if (present > 0) refusedButStored.push(label(batch, present));
      } else if (present === keys.length) tally.unknownStored++;
      else if (present === 0) tally.unknownNone++;
      batch.spans.forEach((span, n) => {
        const key = keys[n] as string;
        const row = stored.get(key);
        if (!row) return;
        if (row.type !== EVENT_TYPE[span.kind] || row.parent_id !== span.parent) {
          wrong.push(`${key}: ${row.type} under ${row.parent_id}, sent ${span.kind} under ${span.parent}`);
        }
        if (span.kind === "agent") expectedAgents.add(key);
      });
    }
  }
  for (const key of expectedAgents) if (!agents.has(key)) agentless.push(`${key}: no agent`);
  for (const key of agents) if (!expectedAgents.has(key)) agentless.push(`${key}: an agent with no agent span`);
  const strays = [...stored.keys()].filter((key) => !sent.has(key));
  const empty = sessions.filter((session) => session.events === 0).map((session) => session.id);

  t.ok(tally.acked > 0, `${when}: there are acknowledged OTLP batches to check (${tally.acked})`);
  t.same(
    missing,
    [],
    `${when}: all ${tally.ackedSpans} spans of the ${tally.acked} acknowledged OTLP batches are stored`,
  );
  t.same(duplicates, [], `${when}: each of the ${rows.length} stored spans is stored exactly once`);
  t.same(half, [], `${when}: no OTLP batch is half stored`);
  t.same(refusedButStored, [], `${when}: the ${tally.refused} refused OTLP batches stored nothing`);
  t.same(wrong, [], `${when}: each stored span has the type and parent it was sent with`);
  t.same(agentless, [], `${when}: each stored agent span has its agent, and no agent is without one`);
  t.same(strays, [], `${when}: no span is stored that was not sent`);
  t.same(empty, [], `${when}: no trace's session is stored without a span`);
  t.comment(
    `${when}: OTLP ${tally.acked} batches acknowledged (${tally.protobuf} protobuf, ${tally.ackedSpans} spans), ` +
      `${tally.refused} refused, unanswered at the kill: ${tally.unknownStored} fully stored, ` +
      `${tally.unknownNone} not stored; ${rows.length} spans in ${sessions.length} sessions on disk`,
  );
}

/** Sends until the answer is not the overload 503 (Retry-After: 2), a few times at most. */
async function send(base: string, apiKey: string, batch: OtlpBatch) {
  let answer = await sendOtlp(base, apiKey, batch);
  for (let attempt = 0; answer.status === 503 && attempt < 5; attempt++) {
    await sleep(2000);
    answer = await sendOtlp(base, apiKey, batch);
  }
  return answer;
}

const counts = (path: string, client: OtlpClient) =>
  Object.fromEntries(onDisk(path, otlpSessions([client])).sessions.map((session) => [session.id, session.events]));

/**
 * G8 and T17 after a restart: each OTLP client re-sends its last acknowledged batch, which must
 * answer 200 with nothing rejected and leave its sessions' event counts as they were; then it
 * retries its unanswered and refused batches, which must answer the same.
 */
export async function retryOtlpAfterRestart(
  t: Test,
  base: string,
  path: string,
  apiKey: string,
  clients: OtlpClient[],
  when: string,
) {
  const failures: string[] = [];
  const changed: string[] = [];
  let resent = 0;
  let retried = 0;
  for (const client of clients) {
    const acked = client.batches.filter((batch) => batch.state === "acked").at(-1);
    if (acked) {
      const before = counts(path, client);
      const answer = await send(base, apiKey, acked);
      const after = counts(path, client);
      if (!answer.complete) failures.push(`${label(acked, -1)}: ${answer.status} ${JSON.stringify(answer.answer)}`);
      else resent++;
      if (JSON.stringify(after) !== JSON.stringify(before)) {
        changed.push(`client ${client.n}: ${JSON.stringify(before)} → ${JSON.stringify(after)}`);
      }
    }
    for (const batch of client.batches.filter((batch) => batch.state !== "acked")) {
      const answer = await send(base, apiKey, batch);
      if (!answer.complete) {
        failures.push(`${label(batch, -1)}: ${answer.status} ${JSON.stringify(answer.answer)?.slice(0, 300)}`);
        continue;
      }
      retried++;
      batch.state = "acked";
    }
  }
  t.same(
    failures,
    [],
    `${when}: ${resent} acknowledged OTLP batches re-sent and ${retried} unanswered ones retried, all 200 with nothing rejected`,
  );
  t.same(changed, [], `${when}: re-sending an acknowledged OTLP batch changed no session's event count`);
  t.ok(resent > 0, `${when}: some acknowledged OTLP batches were re-sent`);
}
