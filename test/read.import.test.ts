/**
 * services/import.ts importSessions on the store STORE picks (docs/decisions/021-export.md):
 * sessions are written many at once, so that the group commit puts them in few transactions; a
 * session id owned by another project is skipped and left alone; a bad line stops the import
 * only after the sessions read before it are written.
 */
import t from "tap";
import type { Store } from "../db/store.ts";
import { timestampFromMillis } from "../domain/timestamps.ts";
import { exportLines } from "../services/export.ts";
import { ImportError, importSessions } from "../services/import.ts";
import { build } from "./helper.ts";

const T0 = Date.UTC(2026, 0, 1);
const iso = (ms: number) => new Date(ms).toISOString();

/** An exported session's line: the session, one agent, two events (the stats are not read back). */
function line(id: string, i: number) {
  const at = T0 + i * 1000;
  return JSON.stringify({
    session: { id, init_timestamp: iso(at), end_timestamp: null, end_state: null, tags: ["imported"] },
    agents: [{ id: `${id}-agent`, name: "planner", role: "lead" }],
    events: [
      { id: "e1", type: "tool", session_id: id, init_timestamp: iso(at + 1), agent_id: `${id}-agent`, name: "search" },
      {
        id: "e2",
        type: "llm",
        session_id: id,
        init_timestamp: iso(at + 2),
        agent_id: null,
        model: "gpt-4o-mini",
        prompt_tokens: 10,
        cost: 0.25,
        cost_source: "client",
      },
    ],
  });
}

async function* linesOf(texts: string[]) {
  yield* texts;
}

const projectIds = async (store: Store) => {
  const projects = await store.listProjects();
  const id = (name: string) => projects.find((p) => p.name === name)?.id as string;
  return { own: id("default"), other: id("other") };
};

/** The committed groups so far, where the store counts them (not across the storage thread). */
const commitsOf = (store: Store) => (store as { commits?: number }).commits;

t.test("many sessions in one transaction: far fewer commits than write calls", async (t) => {
  const { store } = await build(t);
  const { own } = await projectIds(store);
  const n = 300;
  const texts = Array.from({ length: n }, (_, i) => line(`s-${i}`, i));
  texts.push(JSON.stringify({ trailer: { sessions: n, events: 2 * n } }));
  const before = commitsOf(store);
  const report = await importSessions(store, own, linesOf(texts), timestampFromMillis(Date.now()));
  t.strictSame(report, {
    sessions: n,
    created: n,
    existing: 0,
    foreign: 0,
    agents: n,
    events: 2 * n,
    scores: 0,
    trailer: { sessions: n, events: 2 * n },
  });
  const after = commitsOf(store);
  if (before !== undefined && after !== undefined) {
    // One call per session, agent and event batch: 900 calls, which one by one were 900 commits.
    t.ok(after - before <= (3 * n) / 10, `${after - before} commits for ${3 * n} write calls`);
  }
  let exported = 0;
  for await (const chunk of exportLines(store, own, {}, "ndjson")) {
    const doc = JSON.parse(chunk);
    if (doc.trailer) {
      t.strictSame(doc.trailer, { sessions: n, events: 2 * n });
      continue;
    }
    exported += 1;
    t.equal(doc.events.length, 2);
    t.strictSame(doc.agents, [{ id: `${doc.session.id}-agent`, name: "planner", role: "lead" }]);
  }
  t.equal(exported, n, "every session is there, whole");

  const again = await importSessions(store, own, linesOf(texts), timestampFromMillis(Date.now()));
  t.equal(again.existing, n, "a second import finds them all");
  t.equal(again.created, 0);
});

t.test("a session id another project owns is skipped, counted, and left as it is", async (t) => {
  const { store } = await build(t);
  const { own, other } = await projectIds(store);
  await store.createSession(other, {
    id: "theirs",
    init_timestamp: iso(T0),
    init_us: T0 * 1000,
    end_timestamp: null,
    end_state: null,
    end_state_reason: null,
    tags: null,
    host_env: null,
    extra: {},
  });
  const texts = [line("mine", 1), line("theirs", 2), line("also-mine", 3)];
  const report = await importSessions(store, own, linesOf(texts), timestampFromMillis(Date.now()));
  t.match(report, { sessions: 3, created: 2, existing: 0, foreign: 1, agents: 2, events: 4, trailer: null });
  const theirs = await store.readSession(other, "theirs", { agents: true, events: true });
  t.equal(theirs?.events.length, 0, "no event was added to the other project's session");
  t.equal(theirs?.agents.length, 0, "nor an agent");
  t.strictSame(theirs?.session.tags, null);
  t.equal(await store.readSession(own, "theirs", { agents: true, events: true }), undefined);
});

t.test("a bad line stops the import, after the sessions read before it are written", async (t) => {
  const { store } = await build(t);
  const { own } = await projectIds(store);
  const n = 150;
  const texts = Array.from({ length: n }, (_, i) => line(`s-${i}`, i));
  texts.push('{"session": {"id": "torn", "init_ti');
  await t.rejects(
    importSessions(store, own, linesOf(texts), timestampFromMillis(Date.now())),
    new ImportError(`line ${n + 1}: not a JSON line (an export cut short?)`),
  );
  // Everything read before the bad line is stored whole once the import has failed.
  for (let i = 0; i < n; i++) {
    const found = await store.readSession(own, `s-${i}`, { agents: true, events: true });
    if (found?.events.length !== 2 || found.agents.length !== 1) {
      t.fail(`s-${i} is not stored whole: ${found?.events.length} events, ${found?.agents.length} agents`);
      return;
    }
  }
  t.pass(`the ${n} sessions before the bad line are stored whole`);

  const bad = [line("x-1", 1), JSON.stringify({ session: { id: "x-2" }, events: [{ id: "e1" }] }), line("x-3", 3)];
  await t.rejects(
    importSessions(store, own, linesOf(bad), timestampFromMillis(Date.now())),
    /line 2: events\[0\]\.type is required/,
  );
  t.ok(await store.readSession(own, "x-1", { agents: false, events: false }), "the line before it is stored");
  t.equal(await store.readSession(own, "x-3", { agents: false, events: false }), undefined, "the one after it is not");
});
