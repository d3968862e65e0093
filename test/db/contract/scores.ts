/**
 * The Store contract: scores and score configs (issue 25, decision 037). Raw rows: what is sent
 * comes back whole, by id, per project; a batch is all or nothing; a retry changes nothing;
 * scores go with their session.
 */
import type { Test } from "tap";
import type { ScoreConfigRecord, ScoreRecord, TraceScoresWrite } from "../../../domain/scores.ts";
import type { AgentRecord, SpanEventRecord, SpanRecordWrite } from "../../../domain/types.ts";
import { patch } from "../records.ts";
import type { Fixtures } from "./fixture.ts";
import { sameAsRebuild } from "./projections.ts";
import { eventAt, NASTY, nasty, newSession, sameData, T0 } from "./values.ts";

const score = (id: string, fields: Partial<ScoreRecord> = {}): ScoreRecord => ({
  id,
  name: "quality",
  data_type: "numeric",
  value: 0.5,
  session_id: "s-1",
  event_id: null,
  conversation_id: null,
  response_id: null,
  source: "api",
  comment: null,
  author: { type: "api_key", id: "key-1" },
  metadata: {},
  timestamp: T0,
  time_us: Date.parse(T0) * 1000,
  created_at: T0,
  updated_at: null,
  ...fields,
});

const at = (second: number) => {
  const iso = `2026-11-22T00:00:${String(second).padStart(2, "0")}Z`;
  return { timestamp: iso, time_us: Date.parse(iso) * 1000 };
};

export function scoreContract(t: Test, { fresh }: Fixtures) {
  t.test("scores: every kind and field round-trips, per project", async (t) => {
    const { store, p, other } = await fresh(t);
    await store.createSession(p, newSession("s-1"));
    const sent = [
      score("num", { value: -1.25e-7, comment: NASTY, metadata: nasty(), event_id: NASTY }),
      score("cat", { data_type: "categorical", value: NASTY, name: NASTY, source: "eval" }),
      score("yes", { data_type: "boolean", value: true, author: { type: "person", id: "p:1" } }),
      score("no", { data_type: "boolean", value: false }),
      score("conv", { session_id: null, conversation_id: NASTY, source: "annotation", ...at(5) }),
    ];
    t.strictSame(await store.insertScores(p, sent), { stored: 5 });
    for (const s of sent) sameData(t, await store.getScore(p, s.id), s, `${s.id} whole`);
    t.equal(await store.getScore(other, "num"), undefined, "another project's score is not there");
    t.strictSame(await store.insertScores(p, [score("num", { value: 9 })]), { stored: 0 }, "a retry stores nothing");
    t.equal((await store.getScore(p, "num"))?.value, -1.25e-7, "the first copy stays");
    await store.createSession(other, newSession("s-other"));
    t.strictSame(
      await store.insertScores(other, [score("num", { session_id: "s-other", value: 3 })]),
      { stored: 1 },
      "ids are per project",
    );
    t.equal((await store.getScore(other, "num"))?.value, 3);
  });

  t.test("scores: a session not in the project refuses the whole batch", async (t) => {
    const { store, p, other } = await fresh(t);
    await store.createSession(p, newSession("s-1"));
    await store.createSession(other, newSession("theirs"));
    const answer = await store.insertScores(p, [
      score("a"),
      score("b", { session_id: "theirs" }),
      score("c", { session_id: "nowhere" }),
    ]);
    t.strictSame(answer, { missing: [1, 2] });
    t.equal(await store.getScore(p, "a"), undefined, "nothing stored");
    t.strictSame(await store.listScores(p, {}, undefined, 10), []);
  });

  t.test("scores: lists filter and page newest first", async (t) => {
    const { store, p } = await fresh(t);
    await store.createSession(p, newSession("s-1"));
    await store.createSession(p, newSession("s-2"));
    await store.insertScores(p, [
      score("a", { ...at(1), name: "x" }),
      score("b", { ...at(2), name: "y", session_id: "s-2", event_id: "e" }),
      score("c", { ...at(2), name: "x", source: "eval", data_type: "boolean", value: true }),
      score("d", { ...at(3), name: "x", session_id: null, conversation_id: "conv" }),
    ]);
    const ids = async (filter: Parameters<typeof store.listScores>[1], after?: { init_us: number; id: string }) =>
      (await store.listScores(p, filter, after, 10)).map((s) => s.id);
    t.strictSame(await ids({}), ["d", "c", "b", "a"], "time desc, then id desc");
    t.strictSame(await ids({ name: "x" }), ["d", "c", "a"]);
    t.strictSame(await ids({ session_id: "s-2" }), ["b"]);
    t.strictSame(await ids({ event_id: "e" }), ["b"]);
    t.strictSame(await ids({ conversation_id: "conv" }), ["d"]);
    t.strictSame(await ids({ source: "eval" }), ["c"]);
    t.strictSame(await ids({ data_type: "boolean" }), ["c"]);
    t.strictSame(await ids({ from_us: at(2).time_us, to_us: at(3).time_us }), ["c", "b"]);
    t.strictSame(await ids({}, { init_us: at(2).time_us, id: "c" }), ["b", "a"], "after a position");
    t.strictSame((await store.listScores(p, {}, undefined, 2)).length, 2, "the limit");
  });

  t.test("scores: update and delete, in the project only", async (t) => {
    const { store, p, other } = await fresh(t);
    await store.createSession(p, newSession("s-1"));
    await store.insertScores(p, [score("u", { comment: "before", metadata: { a: 1 } })]);
    const changes = {
      data_type: "categorical" as const,
      value: "good",
      comment: null,
      metadata: nasty(),
      ...at(9),
      updated_at: "2026-11-23T00:00:00Z",
    };
    t.equal(await store.updateScore(other, "u", changes), undefined, "another project's: not changed");
    const updated = await store.updateScore(p, "u", changes);
    sameData(t, updated, { ...score("u"), ...changes }, "the changed fields, the rest kept");
    sameData(t, await store.getScore(p, "u"), updated, "read back");
    t.equal(await store.deleteScore(other, "u"), false);
    t.equal(await store.deleteScore(p, "u"), true);
    t.equal(await store.deleteScore(p, "u"), false, "gone");
    t.equal(await store.getScore(p, "u"), undefined);
  });

  t.test("scores go with their session: deleteSession and deleteSessions", async (t) => {
    const { store, p } = await fresh(t);
    for (const id of ["one", "bulk", "kept"]) await store.createSession(p, newSession(id, { tags: [id] }));
    await store.insertScores(p, [
      score("1", { session_id: "one" }),
      score("2", { session_id: "bulk" }),
      score("3", { session_id: "kept" }),
      score("4", { session_id: null, conversation_id: "c" }),
    ]);
    t.equal(await store.deleteSession(p, "one"), true);
    const limits = { maxSessions: 10, maxEvents: 1000, dryRun: false };
    let batch = await store.deleteSessions(p, { tags: ["bulk"] }, limits);
    while (batch.next) batch = await store.deleteSessions(p, { tags: ["bulk"] }, { ...limits, after: batch.next });
    t.strictSame((await store.listScores(p, {}, undefined, 10)).map((s) => s.id).sort(), ["3", "4"]);
  });

  t.test("score configs: made, replaced (created_at kept), listed by name, per project", async (t) => {
    const { store, p, other } = await fresh(t);
    const config = (name: string, fields: Partial<ScoreConfigRecord> = {}): ScoreConfigRecord => ({
      name,
      data_type: "numeric",
      min: 0,
      max: 1,
      categories: null,
      description: null,
      created_at: T0,
      updated_at: T0,
      ...fields,
    });
    t.strictSame(await store.putScoreConfig(p, config("b")), config("b"));
    const cat = config(NASTY, {
      data_type: "categorical",
      min: null,
      max: null,
      categories: [NASTY, "ok"],
      description: NASTY,
    });
    t.strictSame(await store.putScoreConfig(p, cat), cat);
    const replaced = await store.putScoreConfig(
      p,
      config("b", {
        data_type: "boolean",
        min: null,
        max: null,
        created_at: "2026-12-01T00:00:00Z",
        updated_at: "2026-12-01T00:00:00Z",
      }),
    );
    t.strictSame(
      replaced,
      config("b", { data_type: "boolean", min: null, max: null, updated_at: "2026-12-01T00:00:00Z" }),
      "replaced, created_at kept",
    );
    await store.putScoreConfig(p, config("A"));
    t.strictSame(
      (await store.listScoreConfigs(p)).map((c) => c.name),
      [NASTY, "A", "b"].sort(),
      "by name, byte order",
    );
    t.strictSame(await store.listScoreConfigs(other), [], "another project has none");
  });

  t.test(
    "ingestEvaluations (T18): a trace's scores make its session when it has none, once, in the project",
    async (t) => {
      const { store, p, other } = await fresh(t);
      const trace = "0af76519-16cd-43dd-8448-eb211c80319c";
      const theirs = "1af76519-16cd-43dd-8448-eb211c80319c";
      const early = at(3);
      const write = (sessionId: string, ...scores: ScoreRecord[]): TraceScoresWrite => ({
        session_id: sessionId,
        init_timestamp: early.timestamp,
        init_us: early.time_us,
        scores,
      });
      const record: SpanRecordWrite = {
        session_id: trace,
        span_id: "b7ad6b7169203331",
        init_timestamp: early.timestamp,
        init_us: early.time_us,
        record: {
          time_us: early.time_us,
          digest: "d1",
          event: { name: "gen_ai.evaluation.result", attributes: { "gen_ai.evaluation.name": "relevance" } },
        },
      };
      const first = [
        score("e1", { session_id: trace, event_id: "b7ad6b7169203331", source: "eval", ...early }),
        score("e2", { session_id: trace, event_id: null, data_type: "categorical", value: "pass", source: "eval" }),
      ];
      await store.createSession(other, newSession(theirs));
      const answer = await store.ingestEvaluations(p, [record], [write(trace, ...first), write(theirs, score("e3"))]);
      t.strictSame(answer, { records: ["created"], scores: ["stored", "foreign"] }, "one outcome per record and trace");
      const session = await store.getSession(p, trace);
      t.equal(session?.end_state, null, "a session made by its results is running");
      t.equal(session?.init_timestamp, early.timestamp, "from the earliest result");
      for (const s of first) sameData(t, await store.getScore(p, s.id), s, `${s.id} whole, its event id kept`);
      t.equal(await store.getScore(p, "e3"), undefined, "another project's trace: its scores not stored");
      t.strictSame(await store.listScores(other, {}, undefined, 10), [], "nor in that project");

      const again = await store.ingestEvaluations(p, [record], [write(trace, score("e1", { ...first[0], value: 9 }))]);
      t.strictSame(again, { records: ["stored"], scores: ["stored"] });
      t.equal((await store.getScore(p, "e1"))?.value, 0.5, "a retry changes nothing: the first copy stays");
      t.equal((await store.listScores(p, {}, undefined, 10)).length, 2);
      t.ok(await store.deleteSession(p, trace));
      t.strictSame(await store.listScores(p, {}, undefined, 10), [], "the scores go with their session");
    },
  );

  t.test("score facts (decision 037) equal a rebuild from the raw rows after every kind of write", async (t) => {
    const { store, p, other, derived } = await fresh(t);
    const US = Date.parse(T0) * 1000;
    const SECOND = 1_000_000;
    /** The score's groups by agent, as the projection answers them, as "agent:count". */
    const byAgent = async () =>
      (await store.scoreBreakdown(p, { name: "quality", by: "agent", from_us: 0, to_us: Number.MAX_SAFE_INTEGER }))
        .map(({ key, sums }) => `${key}:${sums.count}`)
        .sort();
    const check = (what: string) => sameAsRebuild(t, store, derived, what);

    await store.createSession(p, newSession("s-1", { tags: ["a", "b"] }));
    await store.createSession(p, newSession("s-2"));
    await store.createSession(other, newSession("s-other"));
    await store.insertEvents(p, "s-1", [
      eventAt("llm-1", US + SECOND, { model: "m1", agent_id: "planner" }),
      eventAt("llm-2", US + 2 * SECOND, { model: "m2" }),
      eventAt("tool-1", US + 3 * SECOND, { type: "tool", model: null, fields: { name: "search" } }),
    ]);
    await store.insertScores(p, [
      score("on-session", { session_id: "s-1" }),
      score("on-llm", { session_id: "s-1", event_id: "llm-1", value: 1 }),
      score("on-tool", { session_id: "s-1", event_id: "tool-1", value: 0 }),
      score("on-unknown", { session_id: "s-1", event_id: "not-yet", value: 0.25 }),
      score("label", { session_id: "s-2", data_type: "categorical", value: "good" }),
      score("bool", { session_id: "s-2", data_type: "boolean", value: true, source: "eval" }),
      score("conv", { session_id: null, conversation_id: "c-1" }),
    ]);
    t.strictSame(await store.insertScores(other, [score("theirs", { session_id: "s-other" })]), { stored: 1 });
    await check("scores of a session, its events, an event not stored yet, a conversation");
    await store.insertEvents(p, "s-1", [eventAt("not-yet", US + 4 * SECOND, { model: "m3" })]);
    await check("the scored event arrives");
    await store.insertEvents(p, "s-2", [eventAt("x", US + 5 * SECOND, { model: "m4" })]);
    await check("events of a scored session");
    await store.updateEvents(p, "s-1", [patch({ event_id: "llm-2", model: "m5" })]);
    await check("update_events");
    await store.updateSession(p, "s-1", { tags: ["c"], extra: {} });
    await check("update_session's tags");
    await store.upsertAgent(p, "s-2", { id: "reviewer", name: "Reviewer", extra: {} });
    await check("a registered agent");
    await store.updateScore(p, "on-session", {
      data_type: "numeric",
      value: 0.75,
      comment: "changed",
      metadata: {},
      ...at(9),
      updated_at: T0,
    });
    await check("update of a score");
    t.ok(await store.deleteScore(p, "on-tool"));
    await check("delete of a score");

    // OTLP: a scored child span first, its agent span after it (T14: the child inherits the agent).
    const span = (id: string, parent: string | null, agent: string | null): SpanEventRecord => ({
      id,
      type: "llm",
      parent_id: parent,
      own_agent_id: agent,
      init_timestamp: T0,
      init_us: US,
      end_timestamp: null,
      agent_id: agent,
      model: "gpt",
      prompt_tokens: 1,
      completion_tokens: 1,
      cost: 0,
      cost_source: "client",
      fields: {},
      aliases: [],
      extra: {},
    });
    const trace = (spans: SpanEventRecord[], agents: AgentRecord[]) => ({
      session_id: "trace-1",
      init_timestamp: T0,
      init_us: US,
      conversation_id: null,
      root: null,
      events: spans,
      agents,
    });
    await store.ingestTraces(p, [trace([span("child", "parent", null)], [])]);
    await store.insertScores(p, [
      score("on-child", { session_id: "trace-1", event_id: "child" }),
      score("on-trace", { session_id: "trace-1" }),
    ]);
    await check("a scored span");
    t.strictSame(await byAgent(), ["null:2", "planner:3", "reviewer:2"], "the span has no agent yet");
    await store.ingestTraces(p, [
      trace([span("parent", null, "writer")], [{ id: "writer", name: "Writer", extra: {} }]),
    ]);
    await check("its agent span later: the child's agent and a new agent");
    t.strictSame(await byAgent(), ["planner:3", "reviewer:2", "writer:2"], "both of its scores count for its agent");
    // The same span again, now naming an agent: no event is stored, the agent is (T17).
    await store.ingestTraces(p, [trace([span("parent", null, "boss")], [{ id: "boss", name: "Boss", extra: {} }])]);
    await check("an agent registered by a span already stored");
    t.strictSame(
      await byAgent(),
      ["boss:1", "planner:3", "reviewer:2", "writer:2"],
      "the session's score counts for its new agent too",
    );

    t.ok(await store.deleteSession(p, "s-2"));
    await check("delete of a session");
    await store.deleteSessions(p, {}, { maxSessions: 100, maxEvents: 10_000, dryRun: false });
    await check("bulk delete");
    t.strictSame(
      await store
        .scoreSeries(p, { name: "quality" }, [{ lo: 0, hi: Number.MAX_SAFE_INTEGER }])
        .then((s) => s[0]?.count),
      0,
      "nothing left to count",
    );
  });
}
