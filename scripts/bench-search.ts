/**
 * `npm run bench:search [-- --sessions N --events M]`: what full-text search (`q=`, migration 008,
 * docs/decisions/023-search.md) costs and answers on SQLite, on a generated data set written
 * through the Store: N sessions (default 20 000) of M events each (default 10), llm events with
 * message-array prompts and completions of words drawn from a 20 000-word vocabulary with a
 * Zipf-like skew, tool events (one in four) with JSON input and output, error events (one in
 * twenty) with details; seeded, so every run writes the same data.
 *
 * Prints the database's size and the part of it the two FTS5 indexes take (dbstat), the write
 * time, then p50/p99 of listSessions with q (a page of 50) for a rare word, words of middling and
 * high frequency, two words, a prefix and a phrase, next to the same answer by a plain scan
 * (instr() over every event body of the project, newest session first) run in the same process.
 */
import { mkdtempSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { openDb } from "../db/sqlite/open.ts";
import { sqliteStore } from "../db/sqlite/store.ts";
import { parseSearch, type SearchQuery } from "../domain/search.ts";
import type { EventRecord } from "../domain/types.ts";

const { values } = parseArgs({
  options: { sessions: { type: "string", default: "20000" }, events: { type: "string", default: "10" } },
});
const SESSIONS = Number(values.sessions);
const EVENTS = Number(values.events);

let seed = 42;
const random = () => {
  seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31;
  return seed / 2 ** 31;
};
const SYLLABLES = ["ka", "lo", "mi", "ne", "ru", "ta", "vo", "shi", "pa", "den", "gor", "ul", "xa", "bre", "fin"];
const VOCABULARY = Array.from({ length: 20_000 }, (_, i) => {
  let word = "";
  let n = i + 1;
  do {
    word += SYLLABLES[n % SYLLABLES.length];
    n = Math.floor(n / SYLLABLES.length);
  } while (n > 0);
  return word;
});
/** A word, rank r drawn with probability about 1/r (Zipf). */
const word = () => VOCABULARY[Math.min(VOCABULARY.length - 1, Math.floor(Math.exp(random() * Math.log(20_000))) - 1)];
const words = (min: number, max: number) =>
  Array.from({ length: min + Math.floor(random() * (max - min)) }, word).join(" ");

const US0 = Date.UTC(2026, 0, 1) * 1000;
function eventOf(session: number, n: number): EventRecord {
  const us = US0 + session * 60_000_000 + n * 1_000_000;
  const base = {
    id: `e${n}`,
    init_timestamp: new Date(us / 1000).toISOString(),
    init_us: us,
    end_timestamp: null,
    agent_id: null,
    model: null,
    prompt_tokens: null,
    completion_tokens: null,
    cost: null,
    aliases: [],
    extra: {},
  };
  // One event in 10 000 holds a rare word (the first: session 0's event 8, an llm event).
  const rare = (session * EVENTS + n) % 10_000 === 8 ? ` needlework${session}` : "";
  if (n % 20 === 19) {
    return { ...base, type: "error", fields: { error_type: "ToolError", code: 500, details: words(5, 20) + rare } };
  }
  if (n % 4 === 3) {
    return {
      ...base,
      type: "tool",
      fields: { name: "search", input: { query: words(2, 6) }, output: { results: [words(10, 30), words(10, 30)] } },
    };
  }
  return {
    ...base,
    type: "llm",
    model: "gpt-4o-mini",
    fields: {
      prompt: [
        { role: "system", content: "You are a helpful assistant. Answer briefly and cite your sources." },
        { role: "user", content: words(40, 120) + rare },
      ],
      completion: { role: "assistant", content: words(20, 80) },
    },
  };
}

const dir = mkdtempSync(join(tmpdir(), "agentmon-bench-search-"));
try {
  const path = join(dir, "search.db");
  const db = openDb(path);
  const store = sqliteStore(db, { checkpointer: false });
  const key = await store.createApiKey("0".repeat(64), "bench", "bench", new Date().toISOString());
  const project = key.project_id;
  const started = performance.now();
  for (let s = 0; s < SESSIONS; s += 500) {
    const calls: Promise<unknown>[] = [];
    for (let i = s; i < Math.min(SESSIONS, s + 500); i++) {
      const us = US0 + i * 60_000_000;
      const id = `s${String(i).padStart(7, "0")}`;
      calls.push(
        store.createSession(project, {
          id,
          init_timestamp: new Date(us / 1000).toISOString(),
          init_us: us,
          end_timestamp: null,
          end_state: i % 20 === 0 ? "Fail" : "Success",
          end_state_reason: i % 20 === 0 ? `failed: ${words(3, 8)}` : null,
          tags: [word() as string],
          host_env: null,
          extra: {},
        }),
      );
      calls.push(
        store.insertEvents(
          project,
          id,
          Array.from({ length: EVENTS }, (_, n) => eventOf(i, n)),
        ),
      );
    }
    await Promise.all(calls);
  }
  const writeSeconds = (performance.now() - started) / 1000;
  db.pragma("wal_checkpoint(TRUNCATE)");
  const bytes = statSync(path).size;
  const index = db
    .prepare("SELECT sum(pgsize) FROM dbstat WHERE name LIKE 'event_search%' OR name LIKE 'session_search%'")
    .pluck()
    .get() as number;
  const bodies = db.prepare("SELECT sum(length(body)) FROM events").pluck().get() as number;
  const mb = (n: number) => `${(n / 1e6).toFixed(1)} MB`;
  console.log(
    `${SESSIONS} sessions, ${SESSIONS * EVENTS} events written in ${writeSeconds.toFixed(1)} s; file ${mb(bytes)}, ` +
      `of which the search indexes ${mb(index)} (${((100 * index) / bytes).toFixed(1)} %); without them ${mb(bytes - index)}; ` +
      `event bodies ${mb(bodies)}`,
  );

  const scan = db.prepare<[string, string], { id: string }>(
    `SELECT s.id FROM sessions s WHERE s.project_id = ? AND EXISTS
       (SELECT 1 FROM events e WHERE e.session_pk = s.pk AND instr(lower(e.body), ?) > 0)
     ORDER BY s.init_us DESC, s.id DESC LIMIT 50`,
  );
  const time = async (run: () => unknown, times: number) => {
    const ms: number[] = [];
    for (let i = 0; i < times; i++) {
      const t0 = performance.now();
      await run();
      ms.push(performance.now() - t0);
    }
    ms.sort((a, b) => a - b);
    const at = (p: number) => (ms[Math.min(ms.length - 1, Math.floor(p * ms.length))] as number).toFixed(1);
    return `p50 ${at(0.5)} ms, p99 ${at(0.99)} ms`;
  };
  const cases: [string, string, string][] = [
    ["a rare word (one event)", "needlework0", "needlework0"],
    ["a word of rank 1000", VOCABULARY[999] as string, VOCABULARY[999] as string],
    ["a word of rank 10", VOCABULARY[9] as string, VOCABULARY[9] as string],
    ["two words (ranks 50, 500)", `${VOCABULARY[49]} ${VOCABULARY[499]}`, VOCABULARY[499] as string],
    ["a prefix of 3 letters", "den", "den"],
    ["a phrase", `"${VOCABULARY[0]} ${VOCABULARY[1]}"`, `${VOCABULARY[0]} ${VOCABULARY[1]}`],
    ["no match", "zzzzqqq", "zzzzqqq"],
  ];
  for (const [name, q, needle] of cases) {
    const query = parseSearch(q) as SearchQuery;
    const page = await store.listSessions(project, { q: query }, undefined, 50);
    const fts = await time(() => store.listSessions(project, { q: query }, undefined, 50), 30);
    const naive = await time(() => scan.all(project, needle), 3);
    console.log(`${name} (q=${q}): ${page.items.length} rows; search ${fts}; plain scan ${naive}`);
  }
  await store.close();
} finally {
  rmSync(dir, { recursive: true, force: true });
}
