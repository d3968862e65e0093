/**
 * What the crash test (test/crash.test.ts) checks after each restart: the database file against
 * what the clients sent and were told (G7), and retries that answer 200 and duplicate nothing (G8).
 */
import { setTimeout as sleep } from "node:timers/promises";
import Database from "better-sqlite3";
import type { Test } from "tap";
import type { Client } from "./batches.ts";
import { answersIds, sendBatch } from "./round.ts";

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

/**
 * Every invariant of the v2 clients' stored events against what they sent and were told; the
 * events of `otlpSessions` are checked by test/crash/otlp-checks.ts, and any other is a stray.
 */
export function verify(t: Test, path: string, clients: Client[], otlpSessions: string[], when: string) {
  const { integrity, foreignKeys, rows: all } = onDisk(path);
  const otlp = new Set(otlpSessions);
  const rows = all.filter((row) => !otlp.has(row.session_id));
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
export async function retryAfterRestart(t: Test, base: string, clients: Client[], when: string) {
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
