/**
 * SQLite's event search index, a projection (migration 008; db/sqlite/projector.ts,
 * docs/decisions/023-search.md and 033-projections.md): new events are queued in their call's
 * savepoint and indexed by the projector, after their group commits. What must hold: a call undone
 * leaves nothing in the index, every committed event is in it exactly once with exactly its words,
 * the queue is empty once projected, and the words given to the index are those of the text both
 * engines search.
 */
import t from "tap";
import { distinctWords, eventText, eventWords, INDEXED_CHARACTERS, WordCache } from "../../domain/search.ts";
import type { EventRecord } from "../../domain/types.ts";
import { drain } from "./contract/projections.ts";
import { fixture, outcome, session } from "./group-commit.helpers.ts";
import { newEvent, patch } from "./records.ts";

const llm = (id: string, prompt: unknown, completion?: unknown) =>
  newEvent(id, { fields: completion === undefined ? { prompt } : { prompt, completion } });

/** The ids of the committed events whose index entry holds `word` (as the reader sees the file). */
function matching(reader: import("better-sqlite3").Database, word: string): string[] {
  return reader
    .prepare<[string], { id: string }>(
      `SELECT e.id FROM events e WHERE e.pk IN (SELECT rowid FROM event_search WHERE event_search MATCH ?) ORDER BY e.id`,
    )
    .all(`"${word}"`)
    .map((row) => row.id);
}

t.test(
  "a call undone in its group leaves nothing in the index; the others are indexed in the same commit",
  async (t) => {
    const { store, project, reader } = await fixture(t);
    await store.createSession(project, session("s1"));
    await store.createSession(project, session("s2"));
    const before = store.commits;
    const a = store.insertEvents(project, "s1", [llm("a1", "alpha apricot")]);
    // Two good rows, then one the CHECK constraint of events.cost_source refuses: the call is undone.
    const bad = { ...llm("b3", "bravo"), cost_source: "bogus" } as unknown as EventRecord;
    const b = store.insertEvents(project, "s2", [llm("b1", "bravo banana"), llm("b2", "bravo"), bad]);
    const c = store.insertEvents(project, "s2", [llm("c1", "charlie banana")]);
    t.equal(await outcome(a), "resolved");
    t.equal(await outcome(b), "SQLITE_CONSTRAINT_CHECK");
    t.equal(await outcome(c), "resolved");
    t.equal(store.commits - before, 1, "one group");
    await drain(store);
    t.strictSame(matching(reader, "bravo"), [], "the undone call's words are not indexed");
    t.strictSame(matching(reader, "banana"), ["c1"], "the next call's are, under its own pk");
    t.strictSame(matching(reader, "apricot"), ["a1"]);
    t.equal(reader.prepare("SELECT count(*) FROM projection_queue").pluck().get(), 0, "the queue is empty");
  },
);

t.test(
  "pks reused in the group, a body changed before and after its indexing: each event indexed once, with its words",
  async (t) => {
    const { store, project, reader } = await fixture(t);
    await store.createSession(project, session("old"));
    await store.createSession(project, session("s"));
    await store.insertEvents(project, "old", [llm("o1", "oldword"), llm("o2", "oldword")]);
    // The tail's pks are freed and taken again by the next inserts, in one group.
    const group = [
      store.deleteSession(project, "old"),
      store.insertEvents(project, "s", [llm("n1", "newword first"), llm("n2", "newword second")]),
      store.updateEvents(project, "s", [patch({ event_id: "n1", prompt: "changed again" })]),
    ];
    t.strictSame(await Promise.all(group.map(outcome)), ["resolved", "resolved", "resolved"]);
    await drain(store);
    t.strictSame(matching(reader, "oldword"), [], "the deleted events are gone from the index");
    t.strictSame(matching(reader, "newword"), ["n2"], "n1 lost its old words before it was ever indexed");
    t.strictSame(matching(reader, "changed"), ["n1"], "and is indexed once, with its new ones");
    t.strictSame(matching(reader, "second"), ["n2"]);
    // A later group changes an indexed event: its old words go, its new words come, once.
    await store.updateEvents(project, "s", [patch({ event_id: "n2", prompt: "third" })]);
    await drain(store);
    t.strictSame(matching(reader, "second"), []);
    t.strictSame(matching(reader, "third"), ["n2"]);
    const rows = reader.prepare("SELECT count(*) FROM event_search WHERE event_search MATCH ?").pluck();
    t.equal(rows.get('"changed" OR "third" OR "newword"'), 2, "two events, no duplicate entry");
    t.equal(reader.prepare("SELECT count(*) FROM projection_queue").pluck().get(), 0, "the queue is empty");
  },
);

t.test("after many groups of every kind of write, the index holds exactly each committed event's words", async (t) => {
  const { store, project, reader } = await fixture(t);
  const vocabulary = ["ant", "bee", "cat", "dog", "eel", "fox", "gnu", "hen", "ibis", "jay", "Émile", "naïve", "北京"];
  let seed = 7;
  const next = (n: number) => {
    seed = (seed * 1_103_515_245 + 12_345) % 2_147_483_648;
    return seed % n;
  };
  const sentence = () => Array.from({ length: 1 + next(6) }, () => vocabulary[next(vocabulary.length)]).join(" ");
  const sessions = Array.from({ length: 6 }, (_, i) => `s${i}`);
  for (const id of sessions) await store.createSession(project, session(id));
  let serial = 0;
  for (let round = 0; round < 8; round++) {
    const calls: Promise<unknown>[] = [];
    for (const id of sessions) {
      const batch = Array.from({ length: 1 + next(4) }, () =>
        llm(`e${serial++}`, [{ role: "user", content: sentence() }], sentence()),
      );
      calls.push(store.insertEvents(project, id, batch));
    }
    if (round === 5) calls.push(store.deleteSession(project, "s3"));
    await Promise.all(calls.map(outcome));
    // Rewrite one event of each session still there, in a group of its own.
    for (const id of sessions.filter((s) => s !== "s3" || round < 5)) {
      const events = reader
        .prepare<[string], { id: string }>(
          "SELECT e.id FROM events e JOIN sessions s ON s.pk = e.session_pk WHERE s.id = ? LIMIT 1",
        )
        .all(id);
      const first = events[0];
      if (first)
        await outcome(store.updateEvents(project, id, [patch({ event_id: first.id, completion: sentence() })]));
    }
  }
  await drain(store);
  const stored = reader
    .prepare<[], { id: string; body: string }>("SELECT id, body FROM events ORDER BY id")
    .all()
    .map((row) => ({ id: row.id, words: new Set(distinctWords(eventText(JSON.parse(row.body))).split(" ")) }));
  t.ok(stored.length > 30, `${stored.length} events stored`);
  for (const word of ["ant", "bee", "jay", "emile", "naive", "北京", "user"]) {
    const expected = stored
      .filter((event) => event.words.has(word))
      .map((event) => event.id)
      .sort();
    t.strictSame(matching(reader, word), expected, `"${word}": the events that hold it, no more, no less`);
  }
  t.equal(
    reader.prepare("SELECT count(*) FROM event_search").pluck().get(),
    stored.filter((event) => event.words.size > 0).length,
    "one index entry per event with text",
  );
});

t.test(
  "eventWords: the distinct folded words of eventText, cut where it cuts, the same with a warm cache",
  async (t) => {
    const cache = new WordCache();
    const long = "Réponse détaillée: the QUICK brown fox, fox & Fox; x² ﬁle 北京 naïve-café ".repeat(3);
    const cases: Record<string, unknown>[] = [
      {
        prompt: [
          { role: "system", content: long },
          { role: "user", content: "hello 42" },
        ],
        completion: { role: "assistant", content: long },
      },
      { input: { city: "Lisbon", n: 3.5 }, output: ["a", { b: "c d" }], model: "not searched" },
      { error_type: "TimeoutError", code: 504, details: "upstream timed out" },
      { prompt: `${"word ".repeat(INDEXED_CHARACTERS / 5 - 1)}tail`, completion: "past the cut" },
      { prompt: `${"a".repeat(INDEXED_CHARACTERS - 3)} cutword`, completion: "" },
      { prompt: "" },
      {},
    ];
    for (const fields of cases) {
      const expected = new Set(distinctWords(eventText(fields)).split(" "));
      expected.delete("");
      for (const pass of ["cold", "warm"]) {
        const got = eventWords(fields, cache);
        t.strictSame(
          new Set(got === "" ? [] : got.split(" ")),
          expected,
          `${Object.keys(fields).join(",") || "{}"} (${pass})`,
        );
      }
    }
    t.notOk(
      eventWords(cases[3] as Record<string, unknown>, cache)
        .split(" ")
        .includes("past"),
      "a field past the cut is not indexed",
    );
    t.ok(
      eventWords(cases[4] as Record<string, unknown>, cache)
        .split(" ")
        .includes("cu"),
      "a word cut in two keeps its first part",
    );
    t.strictSame(distinctWords("Café CAFÉ cafe ÀÉÎ ß ＡＢＣ a_b e.f@g.com"), "cafe aei ß ａｂｃ a b e f g com");
  },
);

t.test("a common word found only past the sessions walked: the page comes from the index after them", async (t) => {
  const { store, project } = await fixture(t);
  // 1 100 sessions, newest last; the word is in 5 000 events of the 10 oldest only, so a walk of
  // the newest WALKED_SESSIONS finds nothing and the rest is read from the index.
  const ids: string[] = [];
  for (let i = 0; i < 1100; i++) {
    const id = `s${String(i).padStart(4, "0")}`;
    ids.push(id);
    await store.createSession(project, { ...session(id), init_us: 1_795_323_600_000_000 + i * 1_000_000 });
  }
  for (let i = 0; i < 10; i++) {
    await store.insertEvents(
      project,
      ids[i] as string,
      Array.from({ length: 500 }, (_, n) => llm(`w${i}-${n}`, `plenty ${n % 2 === 0 ? "even" : "odd"}`)),
    );
  }
  await store.insertEvents(project, "s0500", [llm("x", "unrelated words")]);
  const { parseSearch } = await import("../../domain/search.ts");
  const query = parseSearch("plenty") as NonNullable<ReturnType<typeof parseSearch>>;
  const first = await store.listSessions(project, { q: query }, undefined, 4);
  t.strictSame(
    first.items.map((row) => row.session.id),
    ["s0009", "s0008", "s0007", "s0006"],
    "the newest sessions with the word, past 1 000 without it",
  );
  t.equal(first.items[0]?.match?.event_id, "w9-0", "each with its first matching event");
  const rest = await store.listSessions(project, { q: query }, first.next ?? undefined, 10);
  t.strictSame(
    rest.items.map((row) => row.session.id),
    ["s0005", "s0004", "s0003", "s0002", "s0001", "s0000"],
    "and the next page",
  );
  t.equal(rest.next, null);
  // The newest session holds the phrase's words only across two fields of one tool event (decision
  // 030: a phrase never crosses fields), and across two events: the walk must not list it.
  await store.insertEvents(project, "s1099", [
    newEvent("cross-fields", { type: "tool", fields: { input: "ask plenty", output: "odd answer" } }),
    llm("cross-events-1", "one more plenty"),
    llm("cross-events-2", "odd one out"),
  ]);
  const phrase = await store.listSessions(project, { q: parseSearch('"plenty odd"') as typeof query }, undefined, 3);
  t.strictSame(
    phrase.items.map((row) => [row.session.id, row.match?.event_id]),
    [
      ["s0009", "w9-1"],
      ["s0008", "w8-1"],
      ["s0007", "w7-1"],
    ],
    "a phrase of common words: its events only, never across two fields or two events",
  );
});

t.test("long sessions: the walk reads a few of their events, then asks the index, whatever their length", async (t) => {
  const { store, project, db } = await fixture(t);
  const { parseSearch } = await import("../../domain/search.ts");
  const { searchWalk, SCANNED_EVENTS, WALKED_EVENTS, WALKED_PROBES, EXPANDED_WORDS } = await import(
    "../../db/sqlite/search.ts"
  );
  const query = (q: string) => parseSearch(q) as NonNullable<ReturnType<typeof parseSearch>>;
  const padded = (n: number) => String(n).padStart(4, "0");
  // Old sessions make "plenty" common; 17 words start with "zz" (more than EXPANDED_WORDS).
  await store.createSession(project, session("old"));
  await store.insertEvents(project, "old", [
    ...Array.from({ length: 500 }, (_, n) => llm(`o${padded(n)}`, "plenty")),
    ...Array.from({ length: EXPANDED_WORDS + 1 }, (_, n) => llm(`z${n}`, `zz${n}`)),
  ]);
  // Three sessions of 3 000 events: one without the word, one with it in its last event only, one
  // with a longer word it starts in its last event only.
  const long = { none: "unrelated", late: "plenty", prefix: "plentyfold" } as const;
  for (const [id, word] of Object.entries(long)) {
    await store.createSession(project, session(id));
    const events = Array.from({ length: 3000 }, (_, n) => llm(`${id}-${padded(n)}`, n === 2999 ? word : "filler"));
    await store.insertEvents(project, id, events);
  }
  await drain(store);
  const pk = (id: string) => db.prepare<[string], number>("SELECT pk FROM sessions WHERE id = ?").pluck().get(id);
  const pks = Object.keys(long).map((id) => pk(id) as number);
  const walk = searchWalk(db);
  const run = (q: string, events = WALKED_EVENTS) => {
    const state = { events, probes: WALKED_PROBES, expand: walk.expansion() };
    const { matched, decided } = walk.matching(pks, query(q), state);
    const named = Object.keys(long).filter((id) => matched.has(pk(id) as number));
    return { named, decided, read: events - state.events, probes: WALKED_PROBES - state.probes };
  };

  t.strictSame(
    run("plenty"),
    { named: ["late", "prefix"], decided: 3, read: 3 * SCANNED_EVENTS, probes: 3 },
    "a prefix: each long session read SCANNED_EVENTS bodies, then asked of the index with the words it starts",
  );
  t.strictSame(run('"plenty"'), { named: ["late"], decided: 3, read: 3 * SCANNED_EVENTS, probes: 3 }, "a word whole");
  t.strictSame(run("nowordstartsso"), { named: [], decided: 3, read: 3 * SCANNED_EVENTS, probes: 3 });
  const wide = run("zz", 4000);
  t.strictSame(
    wide,
    { named: [], decided: 1, read: 4000, probes: 0 },
    "a prefix of more words than EXPANDED_WORDS cannot be asked of the index: bodies are read until the budget ends",
  );

  // Through the Store: the page, and each session's first matching event, past its first events.
  const page = await store.listSessions(project, { q: query("plenty") }, undefined, 3);
  t.strictSame(
    page.items.map((row) => [row.session.id, row.match?.event_id]),
    [
      ["prefix", "prefix-2999"],
      ["old", "o0000"],
      ["late", "late-2999"],
    ],
    "the sessions in the list's order (same start, ids descending), each with its first matching event",
  );
});

t.test(
  "a walk out of bodies to read: probes, else the rest of the page from the index after the last session decided",
  async (t) => {
    const { store, project } = await fixture(t);
    const { parseSearch } = await import("../../domain/search.ts");
    const { COMMON_MATCHES, EXPANDED_WORDS, SCANNED_EVENTS, WALKED_EVENTS } = await import("../../db/sqlite/search.ts");
    const at = (i: number) => ({ init_us: 1_795_323_600_000_000 + i * 1_000_000 });
    // The oldest session makes both words common (and "zz" starts more than EXPANDED_WORDS words);
    // then sessions of SCANNED_EVENTS events without them, more than WALKED_EVENTS events in all,
    // the 20th newest with them in its last event.
    await store.createSession(project, { ...session("oldest"), ...at(0) });
    await store.insertEvents(project, "oldest", [
      ...Array.from({ length: COMMON_MATCHES }, (_, n) => llm(`o${n}`, "plenty zz")),
      ...Array.from({ length: EXPANDED_WORDS + 1 }, (_, n) => llm(`z${n}`, `zz${n}`)),
    ]);
    const count = Math.ceil((1.5 * WALKED_EVENTS) / SCANNED_EVENTS);
    for (let i = 1; i <= count; i++) {
      const id = `s${String(i).padStart(4, "0")}`;
      await store.createSession(project, { ...session(id), ...at(i) });
      const last = i === count - 19 ? "plenty zz3" : "filler";
      await store.insertEvents(
        project,
        id,
        Array.from({ length: SCANNED_EVENTS }, (_, n) => llm(`${id}-${n}`, n === SCANNED_EVENTS - 1 ? last : "filler")),
      );
    }
    const newest = `s${String(count - 19).padStart(4, "0")}`;
    // A word whole: once the bodies are spent, each session is asked of the index. A prefix of too
    // many words cannot be: the rest comes from the index, after the last session decided.
    for (const q of ['"plenty"', "zz"]) {
      const query = parseSearch(q) as NonNullable<ReturnType<typeof parseSearch>>;
      const first = await store.listSessions(project, { q: query }, undefined, 1);
      t.strictSame(
        first.items.map((row) => [row.session.id, row.match?.event_id]),
        [[newest, `${newest}-${SCANNED_EVENTS - 1}`]],
        `${q}: the newest match`,
      );
      const rest = await store.listSessions(project, { q: query }, first.next ?? undefined, 5);
      t.strictSame(
        rest.items.map((row) => [row.session.id, row.match?.event_id]),
        [["oldest", "o0"]],
        `${q}: past the walk's budget, the oldest session`,
      );
      t.equal(rest.next, null);
      const both = await store.listSessions(project, { q: query }, undefined, 5);
      t.strictSame(
        both.items.map((row) => row.session.id),
        [newest, "oldest"],
        `${q}: one page, both`,
      );
    }
  },
);
